"""`overlay status`: each overlay version (the active one marked) and, with a PostgreSQL ledger, the
serving processes of the fleet that loaded it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..understand.overlay import OverlayStore
    from ..understand.overlay_postgres import PostgresOverlayStore


@dataclass(frozen=True)
class OverlayStatus:
    """A store's versions and, for a fleet's store, its hosts' last reports."""

    where: str
    #: (version, parent, command, made_at, host, active) per version; made_at and host are None for files.
    versions: list[tuple[Any, ...]]
    #: (host, pid, version, canary, loaded_at, seen_at) per serving process that reported.
    hosts: list[tuple[Any, ...]]
    fleet: bool  #: the store is the fleet's (PostgreSQL): hosts report to it; files have no fleet

    def to_json(self) -> dict[str, Any]:
        """The `overlay status --json` object (docs/contracts.md)."""
        return {
            "where": self.where,
            "versions": [
                {"version": v, "parent": p, "command": c, "made_at": t and t.isoformat(), "host": h, "active": a}
                for v, p, c, t, h, a in self.versions
            ],
            "hosts": [
                {
                    "host": h,
                    "pid": pid,
                    "version": v,
                    "canary": c,
                    "loaded_at": loaded.isoformat(),
                    "seen_at": seen.isoformat(),
                }
                for h, pid, v, c, loaded, seen in self.hosts
            ],
        }

    def render(self) -> str:
        """The terminal view: one line a version, the processes serving it under it, then each host's report."""
        lines = [f"overlay in {self.where}" + ("" if self.versions else ": no version yet (the built-in rules alone)")]
        for version, parent, command, made_at, host, active in self.versions:
            said = f" {made_at:%Y-%m-%d %H:%M:%S} UTC on {host}" if made_at else ""
            since = f" from v{parent}" if parent else ""
            lines.append(f"{'*' if active else ' '} v{version}{since}: {command}{said}")
            if serving := sorted({f"{h} (pid {pid})" for h, pid, v, *_ in self.hosts if v == version}):
                lines.append(f"    loaded by: {', '.join(serving)}")
        if self.fleet:
            lines.append(
                "hosts (their last report; each reports every minute):"
                if self.hosts
                else "no serving process has reported yet"
            )
            for host, pid, version, canary, loaded_at, seen_at in self.hosts:
                share = f", canary {canary:.0%}" if canary is not None else ""
                lines.append(
                    f"  {host} pid {pid}: v{version}{share}, loaded {loaded_at:%Y-%m-%d %H:%M:%S}, "
                    f"seen {seen_at:%Y-%m-%d %H:%M:%S} UTC"
                )
        return "\n".join(lines)


def overlay_status(store: OverlayStore | PostgresOverlayStore) -> OverlayStatus:
    """STORE's status: a fleet's store reports its versions and hosts; files, this host's versions."""
    status = getattr(store, "status", None)
    if status is not None:
        versions, hosts = status()
        return OverlayStatus(store.where, versions, hosts, fleet=True)
    active = store.active_version()
    loaded = [store.load(version) for version in store.versions()]
    versions = [(o.version, o.parent, o.note, None, None, o.version == active) for o in loaded]
    return OverlayStatus(store.where, versions, [], fleet=False)


def overlay_listing(store: OverlayStore | PostgresOverlayStore, *, every: bool = False) -> str:
    """`teach list`: the active overlay's entries, or (EVERY) a line for each version kept."""
    active = store.active()
    if active is None:
        return f"No overlay yet in {store.where}: the built-in rules alone read questions."
    if every:
        lines = []
        for version in store.versions():
            overlay = store.load(version)
            mark = "*" if version == active.version else " "
            lines.append(f"{mark} v{version}: {len(overlay.entries)} entries — {overlay.note}")
        return "\n".join(lines)
    return "\n".join(
        [f"overlay v{active.version} ({store.where}):", *(f"  {entry.line()}" for entry in active.entries)]
    )

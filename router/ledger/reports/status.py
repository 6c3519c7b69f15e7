"""`ledger status`: where the ledger is, how many rows it holds, how many wait in memory and in the spool."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .savings import plural

if TYPE_CHECKING:
    from ..store import Ledger, SpoolLedger


def ledger_status(store: Ledger | SpoolLedger) -> dict[str, Any]:
    """STORE's status, after this process's own replay of spooled rows (if any) has landed; `rows` is None
    when the database cannot be counted (a spool stands in for it, or it does not answer)."""
    from ..store import SpoolLedger
    from ..store.spool import Spool, unclaimed_spool

    store.flush()
    rows = None
    if not isinstance(store, SpoolLedger):
        with contextlib.suppress(Exception), contextlib.closing(store.connect()) as db:
            rows = store.database.count(db)
    unclaimed = Spool(unclaimed_spool())
    return {
        "location": store.location,
        "rows": rows,
        "pending": store.pending,
        "spooled": store.spooled,
        "spool": str(store.spool.path),
        "problem": store.problem,
        "unclaimed": {"rows": n, "spool": str(unclaimed.path)} if (n := unclaimed.count()) else None,
    }


def render_status(report: dict[str, Any]) -> str:
    """The terminal view of ledger_status()."""
    rows, pending, spooled = report["rows"], report["pending"], report["spooled"]
    held = "unreachable" if rows is None else f"{rows:,} {plural(rows, 'row')}"
    lines = [
        f"ledger:  {report['location']} ({held})",
        f"pending: {pending:,} {plural(pending, 'row')} in this process's queue",
        f"spooled: {spooled:,} {plural(spooled, 'row')} waiting in {report['spool']}",
    ]
    if report["problem"]:
        lines.append(f"problem: {report['problem']}")
    if unclaimed := report["unclaimed"]:
        lines.append(
            f"unclaimed: {unclaimed['rows']:,} {plural(unclaimed['rows'], 'row')} in {unclaimed['spool']}, spooled "
            "by an earlier version for a ledger it did not name: none replays them; look at them, then delete the file"
        )
    return "\n".join(lines)

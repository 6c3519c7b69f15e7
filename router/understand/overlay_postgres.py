"""The overlay of a fleet: its versions in the PostgreSQL ledger, so what one host teaches every host reads.

Chosen by router/parts.py when HYBRID_WEATHER_LEDGER is a postgresql:// URL (with a SQLite ledger the
overlay stays in files: overlay.OverlayStore). Same interface as the files' store; the tables are the
ledger's migration m013_fleet_overlay. Writers (teach, learn --apply, teach use) hold a transaction-level
advisory lock from reading the active version to making the next one active: hosts teaching at once write
one after the other, and a writer that dies releases it with its connection. Readers poll one counter
(`overlay_state.changes`) that every change bumps, from a thread of their own (overlay.Overlays), so the
rule path never waits on the database.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from hybrid_weather.agent.errors import ConfigurationError, LedgerUnavailable

from ..ledger.store.postgres_db import WRITE_TIMEOUT_MS, PostgresDatabase, migrate_postgres
from .overlay import Overlay, OverlayEntry, parse_overlay

#: The advisory lock writers of the fleet's overlay hold, one at a time ("hw-o").
OVERLAY_LOCK = 0x68772D6F
#: Milliseconds a reader's statement may take: a poll is one indexed row, and a slow server is treated as away.
READ_TIMEOUT_MS = 1_000
#: Milliseconds a writer may wait for the lock and write: other hosts may be teaching too.
WRITER_TIMEOUT_MS = 60_000


class PostgresOverlayStore:
    """The overlay's versions in the ledger at URL: overlay_versions, and overlay_state's active one.

    Every database error is a LedgerUnavailable naming the ledger (a reader keeps the version it has)."""

    #: Its versions are read through the network: a router polls them from a thread, never from a question.
    remote = True

    def __init__(self, url: str) -> None:
        self.database = PostgresDatabase(url)
        self.where = f"the ledger {self.database.location}"
        self._reader: Any = None  # one connection for the polls and reads, made again after a failure
        self._reader_lock = threading.Lock()
        self._writer: Any = None  # the connection of the writing() transaction, while it is held
        self._host = socket.gethostname()

    def versions(self) -> list[int]:
        """Every version kept, oldest first."""
        return [row[0] for row in self._read("SELECT version FROM overlay_versions ORDER BY version")]

    def active_version(self) -> int | None:
        rows = self._read("SELECT active FROM overlay_state")
        return rows[0][0] if rows else None

    def load(self, version: int) -> Overlay:
        rows = self._read("SELECT text FROM overlay_versions WHERE version = %s", (version,))
        if not rows:
            raise ConfigurationError(f"there is no overlay version {version} in {self.where}")
        return parse_overlay(rows[0][0], f"overlay v{version} in {self.where}", version)

    def active(self) -> Overlay | None:
        version = self.active_version()
        return None if version is None else self.load(version)

    def stamp(self) -> int:
        """What changes when a version is written or chosen: a counter every change bumps."""
        rows = self._read("SELECT changes FROM overlay_state")
        return int(rows[0][0]) if rows else 0

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One transaction holding the fleet's overlay lock (pg_advisory_xact_lock) from reading the active
        version to writing the next: two hosts teaching at once would otherwise make the same next version
        from the same parent. What is written inside is committed when the block ends, or not at all."""
        with self._failures():
            db = self.database.connect(WRITER_TIMEOUT_MS)
            try:
                migrate_postgres(db)
                with db.transaction():
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (OVERLAY_LOCK,))
                    self._writer = db
                    try:
                        yield
                    finally:
                        self._writer = None
            finally:
                db.close()

    def write(self, entries: Iterable[OverlayEntry], note: str) -> Overlay:
        """ENTRIES as a new version made from the active one, and made active (under writing())."""
        with self._written() as db:
            parent = db.execute("SELECT active FROM overlay_state").fetchone()[0]
            newest = db.execute("SELECT coalesce(max(version), 0) FROM overlay_versions").fetchone()[0]
            overlay = Overlay.of(newest + 1, entries, parent, note)
            db.execute(
                "INSERT INTO overlay_versions VALUES (%s, %s, %s, %s, now(), %s)",
                (overlay.version, parent, overlay.text(), note, self._host),
            )
            db.execute("UPDATE overlay_state SET active = %s, changes = changes + 1", (overlay.version,))
        return overlay

    def use(self, version: int) -> None:
        """Make VERSION the one in use; every process of the fleet reads it within a second."""
        with self._written() as db:
            if db.execute("SELECT 1 FROM overlay_versions WHERE version = %s", (version,)).fetchone() is None:
                raise ConfigurationError(f"there is no overlay version {version} in {self.where}")
            db.execute("UPDATE overlay_state SET active = %s, changes = changes + 1", (version,))

    def report(self, version: int | None, canary: float | None) -> None:
        """Say that this process serves VERSION (with CANARY's share): what `overlay status` lists."""
        self._read(
            """INSERT INTO overlay_hosts AS h VALUES (%s, %s, %s, %s, now(), now())
            ON CONFLICT (host, pid) DO UPDATE SET seen_at = now(),
                loaded_at = CASE WHEN h.version IS NOT DISTINCT FROM excluded.version THEN h.loaded_at ELSE now() END,
                version = excluded.version, canary = excluded.canary RETURNING 1""",
            (self._host, os.getpid(), version, canary),
        )

    def status(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Every version (number, parent, command, time, host, active?) and every process's report (host,
        pid, version, canary share, loaded at, last seen), newest first."""
        versions = self._read(
            """SELECT v.version, v.parent, v.command, v.made_at, v.host, v.version = s.active
            FROM overlay_versions AS v, overlay_state AS s ORDER BY v.version"""
        )
        hosts = self._read(
            "SELECT host, pid, version, canary, loaded_at, seen_at FROM overlay_hosts ORDER BY seen_at DESC, host, pid"
        )
        return versions, hosts

    def close(self) -> None:
        with self._reader_lock:
            if self._reader is not None:
                with contextlib.suppress(Exception):
                    self._reader.close()
                self._reader = None

    @contextlib.contextmanager
    def _written(self) -> Iterator[Any]:
        """The writing() transaction's connection, or one of its own for a write outside it."""
        if self._writer is not None:
            yield self._writer
            return
        with self.writing():
            yield self._writer

    def _read(self, sql: str, values: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of SQL: inside writing(), in its transaction; else on the reader's connection, within
        READ_TIMEOUT_MS (and cut by the ledger's watchdog should the server go quiet)."""
        if self._writer is not None:
            with self._failures():
                return list(self._writer.execute(sql, values).fetchall())
        with self._reader_lock, self._failures():
            try:
                if self._reader is None:
                    db = self.database.connect(READ_TIMEOUT_MS)
                    try:
                        with self.database.deadline(db, WRITE_TIMEOUT_MS):
                            migrate_postgres(db)  # the tables, for a fleet whose ledger no process opened yet
                    except BaseException:
                        db.close()
                        raise
                    self._reader = db
                with self.database.deadline(self._reader, READ_TIMEOUT_MS):
                    return list(self._reader.execute(sql, values).fetchall())
            except BaseException:
                if self._reader is not None:
                    with contextlib.suppress(Exception):
                        self._reader.close()
                    self._reader = None
                raise

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        """The database's errors as one typed error naming the ledger."""
        try:
            yield
        except self.database.unusable as error:
            said = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise LedgerUnavailable(f"the overlay in {self.where} cannot be read or written: {said}") from None

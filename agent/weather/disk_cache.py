"""A small on-disk forecast cache, for processes that live for one question (the CLI).

The in-process cache dies with each `hybrid-weather "…"`; this one lets two questions about one city in
a row make one upstream request, and lets the stale fallback work at a terminal too. One SQLite file,
bounded to `max_entries` rows (the oldest fetches go first), each a copy as copies.py writes it. It is
only an optimisation: a file that cannot be opened, read or written turns it off for the process, with
one warning in the log, and the answer comes from upstream as it would without it. A row that is not a
sound copy is not the file's fault: get() says so (MalformedResponse) and the caller drops that row.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

from . import copies

logger = logging.getLogger("hybrid_weather")

DEFAULT_MAX_ENTRIES = 512  # places × kinds × past-day windows; a forecast is ~3 kB as JSON


class DiskCache:
    """Cached fetches by key, in one SQLite file. Thread-safe."""

    name = "disk"  #: for messages and the count of dropped copies

    def __init__(self, path: Path, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._db: sqlite3.Connection | None = None
        self._broken = False
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any | None:
        """The value last stored under KEY, whatever its age (the caller judges it), or None; MalformedResponse
        for a row that is not a copy of KEY's."""
        with self._lock:
            db = self._open()
            if db is None:
                return None
            try:
                row = db.execute("SELECT body FROM fetches WHERE key = ?", (copies.key_text(key),)).fetchone()
            except sqlite3.Error as error:
                self._give_up(error)
                return None
        return None if row is None else copies.decode(key, row[0], f"the {self.name} cache")

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        self._write(
            ("INSERT OR REPLACE INTO fetches (key, fetched_at, body) VALUES (?, ?, ?)",
             (copies.key_text(key), value.fetched_at, copies.encode(key, value))),
            ("DELETE FROM fetches WHERE key NOT IN (SELECT key FROM fetches ORDER BY fetched_at DESC LIMIT ?)",
             (self.max_entries,)),
        )  # fmt: skip

    def discard(self, key: tuple[Any, ...]) -> None:
        """Forget KEY's row (a copy that failed its checks)."""
        self._write(("DELETE FROM fetches WHERE key = ?", (copies.key_text(key),)))

    def _write(self, *statements: tuple[str, tuple[Any, ...]]) -> None:
        """Run STATEMENTS in one transaction; a file that fails turns the cache off (the answer never needs it)."""
        with self._lock:
            db = self._open()
            if db is None:
                return
            try:
                with db:
                    for sql, parameters in statements:
                        db.execute(sql, parameters)
            except sqlite3.Error as error:
                self._give_up(error)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _open(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=1.0, check_same_thread=False)
                # Bodies come back as bytes, decoded by copies.decode: a row that is not UTF-8 is that row's
                # fault (dropped), not the file's (which would turn the cache off and keep the row).
                db.text_factory = bytes
                db.execute("CREATE TABLE IF NOT EXISTS fetches (key TEXT PRIMARY KEY, fetched_at REAL, body TEXT)")
                self._db = db
            except (OSError, sqlite3.Error) as error:
                self._give_up(error)
        return self._db

    def _give_up(self, error: Exception) -> None:
        logger.warning("the forecast cache at %s is unusable (%s); asking upstream instead", self.path, error)
        self._broken = True
        if self._db is not None:
            self._db.close()
            self._db = None

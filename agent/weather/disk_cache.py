"""A small on-disk forecast cache, for processes that live for one question (the CLI).

The in-process cache dies with each `hybrid-weather "…"`; this one lets two questions about one city in
a row make one upstream request, and lets the stale fallback work at a terminal too. One SQLite file,
bounded to `max_entries` rows (the oldest fetches go first). It is only an optimisation: a file that
cannot be opened, read or written turns it off for the process, with one warning in the log, and the
answer comes from upstream as it would without it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

from .shapes import SHAPE_OF_KIND, from_jsonable, to_jsonable

logger = logging.getLogger("hybrid_weather")

DEFAULT_MAX_ENTRIES = 512  # places × kinds × past-day windows; a forecast is ~3 kB as JSON


class DiskCache:
    """Cached fetches by key, in one SQLite file. Thread-safe."""

    def __init__(self, path: Path, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._db: sqlite3.Connection | None = None
        self._broken = False
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any | None:
        """The value last stored under KEY, whatever its age (the caller judges it), or None."""
        with self._lock:
            db = self._open()
            if db is None:
                return None
            try:
                row = db.execute("SELECT body FROM fetches WHERE key = ?", (_text(key),)).fetchone()
                return from_jsonable(SHAPE_OF_KIND[key[0]], json.loads(row[0])) if row else None
            except (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError) as error:
                self._give_up(error)
                return None

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        with self._lock:
            db = self._open()
            if db is None:
                return
            try:
                with db:
                    db.execute(
                        "INSERT OR REPLACE INTO fetches (key, fetched_at, body) VALUES (?, ?, ?)",
                        (_text(key), value.fetched_at, json.dumps(to_jsonable(value), ensure_ascii=False)),
                    )
                    db.execute(
                        "DELETE FROM fetches WHERE key NOT IN "
                        "(SELECT key FROM fetches ORDER BY fetched_at DESC LIMIT ?)",
                        (self.max_entries,),
                    )
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


def _text(key: tuple[Any, ...]) -> str:
    return json.dumps(key, ensure_ascii=False)

"""Conversations of /v1/ask that every worker of a host can continue: a small SQLite file of turns.

A follow-up (那北京呢？) may reach another worker process than the question before it, so a session lives
in $HYBRID_WEATHER_HOME/serve-sessions.db, not in one worker's memory: each request that names a
session reads its turns, replays them through the router (no I/O, microseconds a turn) and writes them
back with the new one. Questions are stored with personal data masked; a session idle for
SESSION_IDLE_S is deleted, and past MAX_SESSIONS the least recently used go first.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from hybrid_weather.rules import mask_personal_data

#: Sessions kept at the most, and how long an idle one is kept (seconds).
MAX_SESSIONS = 10_000
SESSION_IDLE_S = 1_800.0
# Saves between two clean-ups of idle and surplus sessions.
_CLEAN_EVERY = 200


class SessionStore:
    """Turns of each session, shared by the processes that open the same file. Thread-safe."""

    def __init__(self, path: Path, *, max_sessions: int = MAX_SESSIONS, idle_s: float = SESSION_IDLE_S) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.max_sessions, self.idle_s = path, max_sessions, idle_s
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, turns TEXT NOT NULL, touched REAL NOT NULL)"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS sessions_touched ON sessions(touched)")
        self._lock = threading.Lock()
        self._saves = 0

    def turns(self, session_id: str) -> list[tuple[str, str]]:
        """The (question, answer) turns of SESSION_ID, oldest first; none for a new or expired session."""
        with self._lock:
            row = self._db.execute(
                "SELECT turns FROM sessions WHERE id = ? AND touched >= ?", (session_id, time.time() - self.idle_s)
            ).fetchone()
        if row is None:
            return []
        with contextlib.suppress(ValueError, TypeError):
            return [(str(q), str(a)) for q, a in json.loads(row[0])]
        return []

    def save(self, session_id: str, turns: list[tuple[str, str]]) -> None:
        masked = [(mask_personal_data(q), a) for q, a in turns]
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET turns = excluded.turns,"
                " touched = excluded.touched",
                (session_id, json.dumps(masked, ensure_ascii=False), time.time()),
            )
            self._saves += 1
            if self._saves % _CLEAN_EVERY == 0:
                self._clean()

    def _clean(self) -> None:
        self._db.execute("DELETE FROM sessions WHERE touched < ?", (time.time() - self.idle_s,))
        self._db.execute(
            "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions ORDER BY touched DESC LIMIT -1 OFFSET ?)",
            (self.max_sessions,),
        )

    def close(self) -> None:
        self._db.close()

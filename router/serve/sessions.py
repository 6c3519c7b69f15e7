"""Conversations of /v1/ask that any worker can continue: turns in Redis for a fleet, else a SQLite file.

A follow-up (那北京呢？) may reach another worker process, or another host, than the question before it, so
a session never lives in one worker's memory: each request that names a session reads its turns, replays
them through the router (no I/O, microseconds a turn) and appends its own. Appending one turn, never
writing the list back, is what keeps two concurrent follow-ups from losing one. Questions are stored with
personal data masked, and so are answers; a session idle for SESSION_IDLE_S is gone. A session is its
OWNER's (the key it was begun with, tenants.py): the same id sent with another key names another, new,
conversation.

- With HYBRID_WEATHER_CACHE_URL (a fleet), `RedisSessions`: one list per session, `<prefix>session:<owner>/<id>`,
  appended, trimmed to MAX_TURNS and given its idle expiry in one transaction; every host reads the same.
  A Redis that cannot be reached makes a follow-up a new question (one warning, shared_cache.py), never
  an error.
- Else `SqliteSessions`: $HYBRID_WEATHER_HOME/serve-sessions.db, shared by the workers of one host; past
  MAX_SESSIONS the least recently used go first. Its table is keyed by (owner, id); a file of the table
  before owners (`sessions`, keyed by id alone) has it dropped: those conversations had no owner to keep.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hybrid_weather.agent.guard import NotJSON, read_json
from hybrid_weather.rules import mask_personal_data

if TYPE_CHECKING:
    from hybrid_weather.agent.weather.shared_cache import SharedCache

#: Sessions kept at the most (SQLite; Redis keeps what its expiry leaves), how long an idle one is kept
#: (seconds), and the turns kept of one: the router's replay reads the newest that fit the LLM's budget.
MAX_SESSIONS = 10_000
SESSION_IDLE_S = 1_800.0
MAX_TURNS = 50
# Appends between two clean-ups of idle and surplus SQLite sessions.
_CLEAN_EVERY = 200

Turn = tuple[str, str]  #: (question, answer)
Added = tuple[str, str, str, str]  #: (owner, session id, question, answer): one turn to append


class SessionStore(Protocol):
    def turns(self, owner: str, session_id: str) -> list[Turn]:
        """The turns of OWNER's SESSION_ID, oldest first; none for a new or expired session."""

    def add(self, owner: str, session_id: str, question: str, answer: str) -> None:
        """Append one turn to OWNER's SESSION_ID (its question and answer masked: a model may say back what it
        was told), and keep it another idle period."""

    def add_many(self, turns: Sequence[Added]) -> None:
        """add() each of TURNS, in their order."""

    def close(self) -> None: ...


def open_sessions(home: Path, shared: SharedCache | None) -> SessionStore:
    """The fleet's sessions in Redis when SHARED (its cache) is configured, else the host's SQLite file."""
    if shared is not None:
        return RedisSessions(shared)
    return SqliteSessions(home / "serve-sessions.db")


def _turns(raw: object) -> list[Turn]:
    """The turns RAW (parsed JSON) holds: each a [question, answer] pair of strings, others skipped. What is
    stored may have been written by another program, or by hand: a turn of another shape is no turn."""
    if not isinstance(raw, list):
        return []
    return [
        (turn[0], turn[1])
        for turn in raw
        if isinstance(turn, list) and len(turn) == 2 and isinstance(turn[0], str) and isinstance(turn[1], str)
    ]


def _parsed(text: str | bytes) -> object:
    """TEXT as JSON, or None when it is not JSON or nested too deep to read."""
    try:
        return read_json(text.encode() if isinstance(text, str) else text)
    except NotJSON:
        return None


def _name(owner: str, session_id: str) -> str:
    # '/' is in no owner (access.caller_of, tenants.OPEN) and in no id (tenants.session_id): one name a pair.
    return f"session:{owner}/{session_id}"


class RedisSessions:
    """Turns of each session in the fleet's Redis. Thread-safe (redis-py's pool)."""

    def __init__(self, shared: SharedCache, *, idle_s: float = SESSION_IDLE_S, max_turns: int = MAX_TURNS) -> None:
        self.shared, self.idle_s, self.max_turns = shared, idle_s, max_turns

    def turns(self, owner: str, session_id: str) -> list[Turn]:
        raw = self.shared.read_list(_name(owner, session_id), newest=self.max_turns) or []
        return _turns([_parsed(item) for item in raw])

    def add(self, owner: str, session_id: str, question: str, answer: str) -> None:
        turn = json.dumps([mask_personal_data(question), mask_personal_data(answer)], ensure_ascii=False)
        self.shared.append_list(_name(owner, session_id), turn, keep=self.max_turns, idle_s=self.idle_s)

    def add_many(self, turns: Sequence[Added]) -> None:
        for turn in turns:
            self.add(*turn)

    def close(self) -> None:
        """The Redis client is the cache's, closed with it."""


class SqliteSessions:
    """Turns of each session, shared by the processes that open the same file. Thread-safe."""

    def __init__(self, path: Path, *, max_sessions: int = MAX_SESSIONS, idle_s: float = SESSION_IDLE_S) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.max_sessions, self.idle_s = path, max_sessions, idle_s
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("DROP TABLE IF EXISTS sessions")  # keyed by id alone: nobody's to keep
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS owned_sessions (owner TEXT NOT NULL, id TEXT NOT NULL, turns TEXT NOT NULL,"
            " touched REAL NOT NULL, PRIMARY KEY (owner, id))"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS owned_sessions_touched ON owned_sessions(touched)")
        self._lock = threading.Lock()
        self._saves = 0

    def turns(self, owner: str, session_id: str) -> list[Turn]:
        with self._lock:
            row = self._db.execute(
                "SELECT turns FROM owned_sessions WHERE owner = ? AND id = ? AND touched >= ?",
                (owner, session_id, time.time() - self.idle_s),
            ).fetchone()
        return [] if row is None else self._decode(row[0])

    def add(self, owner: str, session_id: str, question: str, answer: str) -> None:
        self.add_many([(owner, session_id, question, answer)])

    def add_many(self, turns: Sequence[Added]) -> None:
        """add() each of TURNS in one transaction: one take of the file's write lock, which the workers of
        the host contend for, for all of them."""
        with self._lock:
            # BEGIN IMMEDIATE takes the file's write lock before the read: another worker's append to the
            # same session waits for this one, then reads it, so neither is lost.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for owner, session_id, question, answer in turns:
                    self._append(owner, session_id, question, answer)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _append(self, owner: str, session_id: str, question: str, answer: str) -> None:
        row = self._db.execute(
            "SELECT turns FROM owned_sessions WHERE owner = ? AND id = ? AND touched >= ?",
            (owner, session_id, time.time() - self.idle_s),
        ).fetchone()
        turns = ([] if row is None else self._decode(row[0])) + [
            (mask_personal_data(question), mask_personal_data(answer))
        ]
        self._db.execute(
            "INSERT INTO owned_sessions VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO UPDATE SET"
            " turns = excluded.turns, touched = excluded.touched",
            (owner, session_id, json.dumps(turns[-MAX_TURNS:], ensure_ascii=False), time.time()),
        )
        self._saves += 1
        if self._saves % _CLEAN_EVERY == 0:
            self._clean()

    def _decode(self, text: str) -> list[Turn]:
        return _turns(_parsed(text))

    def _clean(self) -> None:
        self._db.execute("DELETE FROM owned_sessions WHERE touched < ?", (time.time() - self.idle_s,))
        self._db.execute(
            "DELETE FROM owned_sessions WHERE rowid IN"
            " (SELECT rowid FROM owned_sessions ORDER BY touched DESC LIMIT -1 OFFSET ?)",
            (self.max_sessions,),
        )

    def close(self) -> None:
        self._db.close()


class TurnWriter:
    """Appends the answers of one event loop hand to STORE, written a batch at a time on the loop's executor:
    the turns that arrive while a batch is written go, all of them, in the next, in one transaction. Under
    load the workers of a host then take the SQLite file's write lock once for many answers, not once an
    answer each (and wait for one another's turn far less). Each add() returns once its own turn is stored:
    a follow-up may reach another worker as soon as the answer has left."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._waiting: list[tuple[Added, asyncio.Future[None]]] = []
        self._writing = False

    async def add(self, owner: str, session_id: str, question: str, answer: str) -> None:
        stored = asyncio.get_running_loop().create_future()
        self._waiting.append(((owner, session_id, question, answer), stored))
        if not self._writing:
            self._write_next()
        await stored

    def _write_next(self) -> None:
        batch, self._waiting = self._waiting, []
        self._writing = True
        writing = asyncio.get_running_loop().run_in_executor(None, self.store.add_many, [turn for turn, _ in batch])
        writing.add_done_callback(lambda written: self._written(batch, written))

    def _written(self, batch: list[tuple[Added, asyncio.Future[None]]], written: asyncio.Future[None]) -> None:
        self._writing = False
        failure = None if written.cancelled() else written.exception()
        for _, stored in batch:
            if stored.done():  # its request was cancelled (the client left): the turn is stored all the same
                continue
            if written.cancelled():
                stored.cancel()
            elif failure is not None:
                stored.set_exception(failure)
            else:
                stored.set_result(None)
        if self._waiting:
            self._write_next()

"""Which database a ledger's location names, and what a Ledger needs of one (SQLiteDatabase, PostgresDatabase)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Protocol

from hybrid_weather.agent.errors import LedgerUnavailable

from ...settings import is_postgres, ledger_scheme_problem, redact


class Database(Protocol):
    """Where a Ledger's rows are stored: SQLiteDatabase or PostgresDatabase."""

    location: str  #: where, for messages (never a password)
    unusable: tuple[type[BaseException], ...]  #: what open() raises when the location cannot hold a ledger
    away: tuple[type[BaseException], ...]  #: what open() raises when a server is away for now
    retryable: tuple[type[BaseException], ...]  #: write errors worth a second try (a lock, a deadlock)
    replays: bool  #: whether rows spooled for it are written back

    def open(self) -> bytes: ...
    def ping(self) -> None: ...
    def writer(self) -> Any: ...
    def connect(self) -> Any: ...
    def write(self, db: Any, rows: Sequence[tuple[object, ...]], *, once: bool = False) -> int: ...
    def prune(self, db: Any, before: dt.datetime) -> int: ...
    def count(self, db: Any) -> int: ...
    def close(self) -> None: ...


def database_for(location: str) -> Database:
    """The database LOCATION names: a postgresql:// URL, else a SQLite file (or ":memory:"); LedgerUnavailable
    for another scheme (never a folder named after it)."""
    if problem := ledger_scheme_problem(location):
        raise LedgerUnavailable(f"the ledger at {redact(location)} cannot be used: {problem}")
    if is_postgres(location):
        try:
            from .postgres_db import PostgresDatabase
        except ImportError as error:
            if (error.name or "").startswith("hybrid_weather"):
                raise  # our own code is broken, not the install: the traceback says where
            raise LedgerUnavailable(
                f"a PostgreSQL ledger needs psycopg ({error}); install it with: pip install 'hybrid-weather[fleet]'"
            ) from None

        return PostgresDatabase(location)
    from .sqlite_db import SQLiteDatabase

    return SQLiteDatabase(location)


def first_line(error: BaseException) -> str:
    """A driver's error in one line (PostgreSQL's run to several), or its type when it says nothing."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__

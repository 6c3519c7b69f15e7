"""The ledger's SQLite database (the single-machine default): a WAL file, or a shared in-memory one."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import itertools
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from .migrations import migrate
from .rollup import moment
from .rows import COLUMNS, load_secret

# How long one SQLite call may wait for a lock: the writer's tries and pauses stay well inside its close
# timeout, so a stuck database cannot hang close() and the writer spools its batch before it.
_BUSY_TIMEOUT_MS = 1_000
# A batch is written as multi-row INSERTs, each one execute() whose parameters sqlite3 binds in C: a full
# batch (512 rows, DEFAULT_BATCH_SIZE) of one width (rule answers all stop at rows.ANSWER_WIDTH) is one
# statement, one release of the interpreter lock; rows of each width go together, split in powers of two,
# so a handful of statement shapes stay in sqlite3's statement cache (preparing a 512-row statement costs
# ~6 ms; a cached one, nothing). Not the alternatives:
# - not executemany: sqlite3 lets go of the interpreter around every row's step, and a writer thread that
#   must win it back after each row from a busy request thread (an event loop) managed 157 rows/s;
# - not one statement over a JSON list (json_each + json_extract per column): SQLite parsing the JSON
#   cost ~13 us a row: 23.3 -> 10.3 us a row in 500-row batches, the rollup trigger included;
#   bench_ledger.py 29,002 -> 47,316 rows/s from 8 threads.
# The rollup trigger still runs for each row, inside SQLite.
_MOST_ROWS = 512  # in one statement, where SQLite allows 512 x 30 parameters (3.32 and later: 32,766)


def _rows_per_statement(db: sqlite3.Connection, width: int) -> int:
    """The largest power of two of rows, at most _MOST_ROWS, whose WIDTH parameters each DB takes in one
    statement."""
    limit, which = getattr(db, "getlimit", None), getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
    if limit is not None and which is not None:  # Python 3.11+
        parameters = int(limit(which))
    else:
        parameters = 32_766 if sqlite3.sqlite_version_info >= (3, 32) else 999
    return min(_MOST_ROWS, 1 << (parameters // width).bit_length() - 1)


@functools.cache
def _insert(rows: int, width: int, once: bool) -> str:
    """The statement that stores ROWS rows of the first WIDTH columns (a row may stop early: rows.py)."""
    verb = "INSERT OR IGNORE" if once else "INSERT"  # a replayed row may already be stored: its id says so
    row = "(" + ", ".join("?" * width) + ")"
    return f"{verb} INTO requests ({', '.join(COLUMNS[:width])}) VALUES {', '.join([row] * rows)}"


def _statements(db: sqlite3.Connection, rows: Sequence[Sequence[object]], once: bool) -> list[tuple[str, list[object]]]:
    """ROWS as multi-row INSERTs: rows of one width together, in chunks of powers of two."""
    by_width: dict[int, list[Sequence[object]]] = {}
    for row in rows:
        by_width.setdefault(len(row), []).append(row)
    statements = []
    for width, same in by_width.items():
        most, start = _rows_per_statement(db, width), 0
        while start < len(same):
            size = min(most, 1 << (len(same) - start).bit_length() - 1)
            chunk = same[start : start + size]
            statements.append((_insert(size, width, once), list(itertools.chain.from_iterable(chunk))))
            start += size
    return statements


_memory_ids = itertools.count()


class SQLiteDatabase:
    """One SQLite ledger file (or ":memory:"): opened and migrated by open(), written in transactions."""

    #: What open() raises when LOCATION cannot hold a ledger.
    unusable: tuple[type[BaseException], ...] = (OSError, sqlite3.Error)
    away: tuple[type[BaseException], ...] = ()  #: a file is never away for a while: it works or it does not
    #: Write errors worth another try: a database locked by another process.
    retryable: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)

    def __init__(self, location: str) -> None:
        self.location = location
        self.replays = location != ":memory:"  # an in-memory ledger's spool is not read back
        self._keeper: sqlite3.Connection | None = None
        # open()'s connection, kept for the first writer: closing it (the last connection) checkpoints and
        # deletes the WAL, and the writer's own connection then made it again and synced the folder — a
        # few milliseconds of every one-shot CLI run.
        self._handed_over: sqlite3.Connection | None = None

    def open(self) -> bytes:
        """Create or check the database; return the installation's hashing secret."""
        if self.location == ":memory:":
            # A named shared-cache database: the writer and readers see the same rows.
            self._uri = f"file:hybrid-weather-ledger-{os.getpid()}-{next(_memory_ids)}?mode=memory&cache=shared"
            self._keeper = self._connect()
            migrate(self._keeper)
            return load_secret(None)
        path = Path(self.location).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder")
        self._uri = path.resolve().as_uri()
        # Workers started together (serve --workers N) open a new ledger together: one at a time, or one
        # finds another mid-migration ("database is locked") and spools every row of its life.
        turns = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(turns, fcntl.LOCK_EX)
        setup = self._connect()
        try:
            setup.execute("PRAGMA journal_mode=WAL")
            migrate(setup)
            setup.execute(f"SELECT {', '.join(COLUMNS)} FROM requests LIMIT 0")  # a foreign `requests` table
            secret = load_secret(path.with_name(path.name + ".key"))
        except BaseException:
            setup.close()
            raise
        finally:
            os.close(turns)  # and the lock with it
        self._handed_over = setup
        return secret

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._uri, uri=True, isolation_level=None, check_same_thread=False, timeout=1)
        db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        # In WAL mode NORMAL keeps every committed transaction through a crash of the process (SIGKILL);
        # only a power loss may take the last ones.
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def writer(self) -> sqlite3.Connection:
        """A connection for the writer thread: open()'s the first time, a new one after."""
        db, self._handed_over = self._handed_over, None
        return db or self._connect()

    def connect(self) -> sqlite3.Connection:
        """A new read connection (for reports)."""
        db = self._connect()
        db.row_factory = sqlite3.Row
        return db

    def write(self, db: sqlite3.Connection, rows: Sequence[Sequence[object]], *, once: bool = False) -> int:
        """ROWS stored in one transaction (rolled back when refused); ONCE skips rows already stored.
        Returns how many were stored."""
        statements = _statements(db, rows, once)
        try:
            # One statement (a full batch) is a transaction of its own: BEGIN and COMMIT would each let go of
            # the GIL and wait to win it back from a busy request thread (bench_ask: ~5 ms each, a batch).
            explicit = len(statements) > 1
            if explicit:
                db.execute("BEGIN IMMEDIATE")
            stored = 0
            for statement, parameters in statements:
                stored += db.execute(statement, parameters).rowcount
            if explicit:
                db.execute("COMMIT")
            return stored
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")
            raise

    def prune(self, db: sqlite3.Connection, before: dt.datetime) -> int:
        """Delete rows that arrived before BEFORE; the rollup keeps their sums."""
        return db.execute("DELETE FROM requests WHERE datetime_utc < ?", (moment(db, before),)).rowcount

    def count(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM requests").fetchone()[0])

    def close(self) -> None:
        for db in (self._keeper, self._handed_over):
            if db is not None:
                db.close()

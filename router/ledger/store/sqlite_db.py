"""The ledger's SQLite database (the single-machine default): a WAL file, or a shared in-memory one."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import itertools
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from .migrations import migrate
from .rollup import moment
from .rows import COLUMNS, load_secret

# How long one SQLite call may wait for a lock: the writer's tries and pauses stay well inside its close
# timeout, so a stuck database cannot hang close() and the writer spools its batch before it.
_BUSY_TIMEOUT_MS = 1_000
# A batch is written as multi-row INSERTs, each one execute() whose parameters sqlite3 binds in C: a full
# batch (512 rows, DEFAULT_BATCH_SIZE) is one statement, one release of the interpreter lock, split in
# powers of two so a handful of statement shapes stay in sqlite3's statement cache. Not executemany:
# sqlite3 lets go of the interpreter lock around every row's step, and a writer thread that must win it
# back after each row from a busy request thread (an event loop) falls far behind. The rollup trigger
# runs for each row, inside SQLite.
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


def _chunks(db: sqlite3.Connection, count: int, width: int) -> Iterator[tuple[int, int]]:
    """(start, size) of COUNT rows of WIDTH values in statements of powers of two of rows, so a handful of
    statement shapes stay in sqlite3's statement cache."""
    most, start = _rows_per_statement(db, width), 0
    while start < count:
        size = min(most, 1 << (count - start).bit_length() - 1)
        yield start, size
        start += size


def _values(rows: int, width: int) -> str:
    return ", ".join(["(" + ", ".join("?" * width) + ")"] * rows)


@functools.lru_cache(maxsize=64)  # one per batch shape: batch sizes and the widths of the schema's versions
def _insert(rows: int, width: int, once: bool) -> str:
    """The statement that stores ROWS rows of the first WIDTH columns; ONCE skips those already stored (a
    replayed row: its id says so)."""
    verb = "INSERT OR IGNORE" if once else "INSERT"
    return f"{verb} INTO requests ({', '.join(COLUMNS[:width])}) VALUES {_values(rows, width)}"


#: A rule or clarify answer leaves every column from `model` on empty: such rows are inserted without them
#: (SQLite stores NULL). sqlite3 binds each NULL through an adapter look-up under the interpreter lock,
#: every request thread waits for; a third of a rule row's cost to the writer was its seventeen NULLs.
_ANSWER_WIDTH = COLUMNS.index("model")
_EMPTY_TAIL = (None,) * (len(COLUMNS) - _ANSWER_WIDTH)


def _by_width(rows: Sequence[tuple[object, ...]]) -> dict[int, list[tuple[object, ...]]]:
    """ROWS by the columns each is inserted with: all of them, or those before an empty tail."""
    widths: dict[int, list[tuple[object, ...]]] = {}
    for row in rows:
        if row[_ANSWER_WIDTH:] == _EMPTY_TAIL:
            widths.setdefault(_ANSWER_WIDTH, []).append(row[:_ANSWER_WIDTH])
        else:
            widths.setdefault(len(COLUMNS), []).append(row)
    return widths


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

    def ping(self) -> None:
        """Raises unless the file can be opened and read now."""
        db = self._connect()
        try:
            db.execute("SELECT count(*) FROM requests WHERE 0").fetchone()
        finally:
            db.close()

    def connect(self) -> sqlite3.Connection:
        """A new read connection (for reports)."""
        db = self._connect()
        db.row_factory = sqlite3.Row
        return db

    def write(self, db: sqlite3.Connection, rows: Sequence[tuple[object, ...]], *, once: bool = False) -> int:
        """ROWS (values of COLUMNS) stored in one transaction (rolled back when refused); ONCE skips rows
        already stored. Returns how many were stored."""
        statements = [
            (_insert(size, width, once), list(itertools.chain.from_iterable(same[start : start + size])))
            for width, same in _by_width(rows).items()
            for start, size in _chunks(db, len(same), width)
        ]
        try:
            # One statement (a full batch) is a transaction of its own: BEGIN and COMMIT would each let go of
            # the GIL and wait a whole switch interval to win it back from a busy request thread.
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
        """Delete rows that arrived before BEFORE, and the questions `misses` keeps as examples of the hours
        before BEFORE's; the rollups keep their sums."""
        deleted = db.execute("DELETE FROM requests WHERE datetime_utc < ?", (moment(db, before),)).rowcount
        db.execute("DELETE FROM misses_examples WHERE hour < ?", (before.strftime("%Y-%m-%dT%H"),))
        return int(deleted)

    def count(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM requests").fetchone()[0])

    def close(self) -> None:
        for db in (self._keeper, self._handed_over):
            if db is not None:
                db.close()

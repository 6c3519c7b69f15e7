"""The ledger's SQLite database (the single-machine default): a WAL file, or a shared in-memory one."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import itertools
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .migrations import migrate
from .rollup import moment
from .rows import ANSWER_WIDTH, COLUMNS, LATENCY, SHORT_WIDTH, Batch, load_secret, stem_of

# How long one SQLite call may wait for a lock: the writer's tries and pauses stay well inside its close
# timeout, so a stuck database cannot hang close() and the writer spools its batch before it.
_BUSY_TIMEOUT_MS = 1_000
# A batch is written as multi-row INSERTs, each one execute() whose parameters sqlite3 binds in C: a full
# batch (512 rows, DEFAULT_BATCH_SIZE) of one width (rule answers all stop at rows.ANSWER_WIDTH) is one
# statement, one release of the interpreter lock; rows of each width go together, split in powers of two,
# so a handful of statement shapes stay in sqlite3's statement cache (preparing a 512-row statement is
# costly; a cached one is free). Not the alternatives:
# - not executemany: sqlite3 lets go of the interpreter around every row's step, and a writer thread that
#   must win it back after each row from a busy request thread (an event loop) falls far behind;
# - not one statement over a JSON list (json_each + json_extract per column): SQLite parsing the JSON
#   costs more a row than binding the values does.
# The rollup trigger still runs for each row, inside SQLite.
_MOST_ROWS = 512  # in one statement, where SQLite allows 512 x 30 parameters (3.32 and later: 32,766)
# A short row (a rule or clarify answer, rows.Batch) is bound as four numbers: its time, its latency, its
# id's tail and the number of its stem (rows.stem_of: the rest, the same in every row of its question), which
# the writer's connection keeps in a table of its own (TEMP: in memory, gone with the connection). SQLite
# joins the stem back in and makes the id and the time from the numbers as rows._row_id and
# rows.utc_isoformat make them in Python (tests/test_ledger_stems.py holds the two to each other), all of it
# while sqlite3 has let go of the interpreter lock. Formatting the id and the time in Python and binding
# them as text was most of what a rule row cost the writer under the lock, which every request thread waits
# for.
_STEM_COLUMNS = stem_of(COLUMNS[:ANSWER_WIDTH])
# A short row's values from its bound numbers: the id is the hex of the milliseconds (truncated, as
# int(started * 1000)) and of the tail; the time is datetime's, whose microseconds are the fraction of the
# second rounded half to even, carried into the next second at 1,000,000.
_SHORT_ROWS = f"""
    SELECT printf('%012x%010x', CAST(started * 1000 AS INTEGER), tail),
           strftime('%Y-%m-%dT%H:%M:%S', whole + (micro = 1000000), 'unixepoch')
               || printf('.%06d+00:00', micro % 1000000),
           latency, {", ".join("s." + column for column in _STEM_COLUMNS)}
    FROM (SELECT started, latency, tail, stem, whole,
                 CAST(x AS INTEGER) + (x - CAST(x AS INTEGER) > 0.5
                                       OR (x - CAST(x AS INTEGER) = 0.5 AND CAST(x AS INTEGER) % 2 = 1)) AS micro
          FROM (SELECT column1 AS started, column2 AS latency, column3 AS tail, column4 AS stem,
                       CAST(column1 AS INTEGER) AS whole, (column1 - CAST(column1 AS INTEGER)) * 1000000.0 AS x
                FROM (VALUES {{values}})))
    JOIN temp.ledger_stems AS s USING (stem)
"""


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


@functools.cache
def _insert(rows: int, width: int, once: bool) -> str:
    """The statement that stores ROWS rows of the first WIDTH columns (a row may stop early: rows.py)."""
    return f"{_verb(once)} INTO requests ({', '.join(COLUMNS[:width])}) VALUES {_values(rows, width)}"


def _verb(once: bool) -> str:
    return "INSERT OR IGNORE" if once else "INSERT"  # a replayed row may already be stored: its id says so


@functools.cache
def _insert_short(rows: int, once: bool) -> str:
    """The statement that stores ROWS short rows given as their SHORT_WIDTH numbers (rows.Batch)."""
    columns = f"{', '.join(COLUMNS[:2])}, {COLUMNS[LATENCY]}, {', '.join(_STEM_COLUMNS)}"
    return f"{_verb(once)} INTO requests ({columns}) {_SHORT_ROWS.format(values=_values(rows, SHORT_WIDTH))}"


@functools.cache
def _insert_stems(rows: int) -> str:
    return f"INSERT INTO temp.ledger_stems VALUES {_values(rows, len(_STEM_COLUMNS) + 1)}"


def _statements(db: sqlite3.Connection, batch: Batch, once: bool) -> list[tuple[str, list[object], int | None]]:
    """BATCH as multi-row INSERTs, each with the number of rows it must store where that is known (short
    rows, unless ONCE), short rows first, then full rows of one width together."""
    short = batch.short
    statements: list[tuple[str, list[object], int | None]] = [
        (_insert_short(size, once), short[start * SHORT_WIDTH : (start + size) * SHORT_WIDTH], None if once else size)
        for start, size in _chunks(db, len(short) // SHORT_WIDTH, SHORT_WIDTH)
    ]
    by_width: dict[int, list[tuple[object, ...]]] = {}
    for row in batch.full:
        by_width.setdefault(len(row), []).append(row)
    for width, same in by_width.items():
        for start, size in _chunks(db, len(same), width):
            chunk = same[start : start + size]
            statements.append((_insert(size, width, once), list(itertools.chain.from_iterable(chunk)), None))
    return statements


class _Stems:
    """One writer connection's temp.ledger_stems: the stems of one formatter's list (rows.Batch.stems), the
    first `count` of them, each under its number in the list."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        db.execute("PRAGMA temp_store=MEMORY")
        # No declared types: a column without affinity keeps each value as bound, and requests' own columns
        # then convert it exactly as they would a value bound to them.
        db.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS ledger_stems (stem INTEGER PRIMARY KEY, {', '.join(_STEM_COLUMNS)})"
        )
        db.execute("DELETE FROM temp.ledger_stems")
        self.kept: list[tuple[object, ...]] | None = None
        self.count = 0

    def keep(self, stems: list[tuple[object, ...]]) -> None:
        """The table holds every stem of STEMS, and only theirs: a new list (the formatter let its stems go)
        starts it again. The new stems go in as multi-row INSERTs too: one statement a stem let go of the
        interpreter lock for each, and won it back from a busy request thread after each."""
        if stems is not self.kept:
            self.db.execute("DELETE FROM temp.ledger_stems")
            self.kept, self.count = stems, 0
        new = [(number, *stem) for number, stem in enumerate(stems[self.count :], self.count)]
        for start, size in _chunks(self.db, len(new), len(_STEM_COLUMNS) + 1):
            self.db.execute(_insert_stems(size), list(itertools.chain.from_iterable(new[start : start + size])))
        self.count = len(stems)  # only once they are in the table


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
        self._stems: _Stems | None = None  # the writer connection's

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

    def write(self, db: sqlite3.Connection, batch: Batch, *, once: bool = False) -> int:
        """BATCH stored in one transaction (rolled back when refused); ONCE skips rows already stored.
        Returns how many were stored."""
        try:
            if batch.short:
                # Before the transaction: the stems a batch adds stay in their table should it be refused.
                self._stems_of(db).keep(batch.stems)
            statements = _statements(db, batch, once)
            # One statement (a full batch) is a transaction of its own: BEGIN and COMMIT would each let go of
            # the GIL and wait a whole switch interval to win it back from a busy request thread.
            explicit = len(statements) > 1
            if explicit:
                db.execute("BEGIN IMMEDIATE")
            stored = 0
            for statement, parameters, rows in statements:
                count = db.execute(statement, parameters).rowcount
                if rows is not None and count != rows:  # a row whose stem is missing: not lost, refused
                    raise sqlite3.DatabaseError(f"{rows - count} of {rows} rows found no stem")
                stored += count
            if explicit:
                db.execute("COMMIT")
            return stored
        except sqlite3.Error:
            self._stems = None  # the next write starts from a table it fills itself
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")
            raise

    def _stems_of(self, db: sqlite3.Connection) -> _Stems:
        if self._stems is None or self._stems.db is not db:  # a new writer connection has no stems yet
            self._stems = _Stems(db)
        return self._stems

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

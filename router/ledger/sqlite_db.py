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
from .rows import ANSWER_WIDTH, COLUMNS, LATENCY, load_secret, stem_of

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
# A short row (a rule or clarify answer) is bound as four values, not seventeen: its id, time and latency,
# and the number of its stem (rows.stem_of: the rest, the same in every row of its question), which the
# writer's connection keeps in a table of its own (TEMP: in memory, gone with the connection) and SQLite
# joins back in. Binding is the part of a write that holds the interpreter lock, and copying a row's ten
# texts into SQLite was most of it (callgrind, bench_ask.py's rule rows: 10,846 instructions a row bound as
# seventeen values, 2,184 as four).
_STEM_COLUMNS = stem_of(COLUMNS[:ANSWER_WIDTH])
#: Stems a writer's connection keeps at the most; past this it starts again with none.
_MOST_STEMS = 4_096


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


def _statements(
    db: sqlite3.Connection, rows: Sequence[Sequence[object]], once: bool, stems: _Stems | None
) -> list[tuple[str, list[object], int | None]]:
    """ROWS as multi-row INSERTs: rows of one width together, in chunks of powers of two; short rows
    through STEMS where given, each such statement with the number of rows it must store."""
    by_width: dict[int, list[Sequence[object]]] = {}
    for row in rows:
        by_width.setdefault(len(row), []).append(row)
    statements: list[tuple[str, list[object], int | None]] = []
    for width, same in by_width.items():
        stemmed = stems if width == ANSWER_WIDTH else None
        most, start = _rows_per_statement(db, 4 if stemmed else width), 0
        while start < len(same):
            size = min(most, 1 << (len(same) - start).bit_length() - 1)
            chunk = same[start : start + size]
            if stemmed is not None:
                statements.append((_insert_stemmed(size), stemmed.bound(chunk), size))
            else:
                statements.append((_insert(size, width, once), list(itertools.chain.from_iterable(chunk)), None))
            start += size
    return statements


@functools.cache
def _insert_stemmed(rows: int) -> str:
    """The statement that stores ROWS short rows given as (id, time, latency, stem number)."""
    values = ", ".join(["(?, ?, ?, ?)"] * rows)
    return (
        f"INSERT INTO requests ({', '.join(COLUMNS[:2])}, {COLUMNS[LATENCY]}, {', '.join(_STEM_COLUMNS)}) "
        f"SELECT v.column1, v.column2, v.column3, {', '.join('s.' + column for column in _STEM_COLUMNS)} "
        f"FROM (VALUES {values}) AS v JOIN temp.ledger_stems AS s ON s.stem = v.column4"
    )


class _Stems:
    """The stems one writer connection has in its temp.ledger_stems, by value."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        db.execute("PRAGMA temp_store=MEMORY")
        # No declared types: a column without affinity keeps each value as bound, and requests' own columns
        # then convert it exactly as they would a value bound to them.
        db.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS ledger_stems (stem INTEGER PRIMARY KEY, {', '.join(_STEM_COLUMNS)})"
        )
        db.execute("DELETE FROM temp.ledger_stems")
        self.numbers: dict[tuple[object, ...], int] = {}

    def make_room(self, rows: int) -> None:
        """Room for the stems of ROWS more rows: once a write, before any of its rows is bound."""
        if len(self.numbers) + rows > _MOST_STEMS:
            self.db.execute("DELETE FROM temp.ledger_stems")
            self.numbers.clear()

    def bound(self, rows: Sequence[Sequence[object]]) -> list[object]:
        """The parameters that store ROWS (short rows) through their stems; stems new to the connection are
        added to its table first."""
        numbers, parameters = self.numbers, list[object]()
        new: dict[tuple[object, ...], int] = {}
        for row in rows:
            stem = stem_of(tuple(row))
            number = numbers.get(stem)
            if number is None:
                number = new.get(stem)
                if number is None:
                    number = new[stem] = len(numbers) + len(new)
            parameters += (row[0], row[1], row[LATENCY], number)
        if new:
            marks = ", ".join("?" * (len(_STEM_COLUMNS) + 1))
            for stem, number in new.items():
                self.db.execute(f"INSERT INTO temp.ledger_stems VALUES ({marks})", (number, *stem))
            numbers.update(new)  # only once they are in the table
        return parameters


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

    def connect(self) -> sqlite3.Connection:
        """A new read connection (for reports)."""
        db = self._connect()
        db.row_factory = sqlite3.Row
        return db

    def write(self, db: sqlite3.Connection, rows: Sequence[Sequence[object]], *, once: bool = False) -> int:
        """ROWS stored in one transaction (rolled back when refused); ONCE skips rows already stored.
        Returns how many were stored."""
        try:
            # A replay's rows go in as they are: INSERT OR IGNORE of each row, whatever its width.
            stems = None if once else self._stems_of(db)
            if stems is not None:
                stems.make_room(len(rows))
            # Before the transaction: the stems a batch adds stay in their table should the batch be refused.
            statements = _statements(db, rows, once, stems)
            # One statement (a full batch) is a transaction of its own: BEGIN and COMMIT would each let go of
            # the GIL and wait to win it back from a busy request thread (bench_ask: ~5 ms each, a batch).
            explicit = len(statements) > 1
            if explicit:
                db.execute("BEGIN IMMEDIATE")
            stored = 0
            for statement, parameters, rows_stemmed in statements:
                count = db.execute(statement, parameters).rowcount
                if rows_stemmed is not None and count != rows_stemmed:  # a row whose stem is missing: not lost
                    raise sqlite3.DatabaseError(f"{rows_stemmed - count} of {rows_stemmed} rows found no stem")
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
        """Delete rows that arrived before BEFORE; the rollup keeps their sums."""
        return db.execute("DELETE FROM requests WHERE datetime_utc < ?", (moment(db, before),)).rowcount

    def count(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM requests").fetchone()[0])

    def close(self) -> None:
        for db in (self._keeper, self._handed_over):
            if db is not None:
                db.close()

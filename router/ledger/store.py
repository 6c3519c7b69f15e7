"""The cost ledger: one SQLite row per request, written by a background thread in batches.

The request path only queues an entry. The writer commits at least every COMMIT_INTERVAL seconds or
BATCH_SIZE rows, whichever comes first. Rows held only in memory — what a SIGKILL can lose — are never
more than QUEUE_SIZE + BATCH_SIZE (past QUEUE_SIZE, callers wait for room): 1,500 rows, about a third of
a second of the fastest traffic one process makes; at a lighter load, the last COMMIT_INTERVAL of it.

Nothing is dropped: a row that cannot be stored as given is stored in a safe form; a batch the database
refuses after a few tries goes to the spool file; a writer that died is started again; close() gives up
on the database after CLOSE_TIMEOUT and spools what is left. `problem` says what went wrong, once, for
the CLI to print.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_weather.agent.errors import LedgerUnavailable
from hybrid_weather.agent.llm.models import ModelTable

from .entry import LedgerEntry
from .migrations import migrate
from .rows import COLUMNS, RowFormat, load_secret
from .spool import Spool, spool_path

logger = logging.getLogger("hybrid_weather")

#: Rows waiting for the writer at the most; past this, record() waits for room (it never drops a row).
DEFAULT_QUEUE_SIZE = 1_000
#: Rows per transaction at the most.
DEFAULT_BATCH_SIZE = 500
#: Seconds a row waits for its transaction at the most: the window a SIGKILL can lose.
COMMIT_INTERVAL = 0.1
#: Tries of one batch before it goes to the spool, and the pause between them (seconds).
COMMIT_ATTEMPTS = 3
COMMIT_PAUSE = 0.2
#: Seconds close() waits for the writer before it spools what is left.
CLOSE_TIMEOUT = 5.0
#: Seconds record() waits for room in a full queue before it spools the row itself (a stuck writer).
RECORD_TIMEOUT = 5.0
# How long one SQLite call may wait for a lock: COMMIT_ATTEMPTS of them and the pauses stay well inside
# CLOSE_TIMEOUT, so a stuck database cannot hang close() and the writer spools its batch before it.
_BUSY_TIMEOUT_MS = 1_000
_INSERT = f"INSERT INTO requests ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
# A replayed row may already be stored (a replay cut short, the same spool line twice): its id says so.
_INSERT_ONCE = _INSERT.replace("INSERT", "INSERT OR IGNORE", 1)
_memory_ids = itertools.count()


def _write(db: sqlite3.Connection, sql: str, rows: list[tuple[object, ...]]) -> sqlite3.Error | None:
    """ROWS written by SQL in one transaction; the error when the database refused them (rolled back)."""
    try:
        db.execute("BEGIN IMMEDIATE")
        db.executemany(sql, rows)
        db.execute("COMMIT")
    except sqlite3.Error as error:
        with contextlib.suppress(sqlite3.Error):
            if db.in_transaction:
                db.execute("ROLLBACK")
        return error
    return None


@dataclass(slots=True)
class _Flush:
    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class Ledger:
    """Append-only request log in SQLite (WAL). Thread-safe; one per process and location.

    Raises LedgerUnavailable when LOCATION cannot hold a ledger (a folder, a read-only or corrupt file,
    a foreign `requests` table, no room); writing problems later are handled, never raised.
    """

    def __init__(
        self,
        location: str | Path,
        *,
        models: ModelTable | None = None,
        model: str | None = None,
        store_queries: str = "masked",
        queue_size: int = DEFAULT_QUEUE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        commit_interval: float = COMMIT_INTERVAL,
        setting: str = "HYBRID_WEATHER_LEDGER",
    ) -> None:
        self.location = str(location)
        self.setting = setting  #: what the user sets to move the ledger, for messages
        self.batch_size = batch_size
        self.commit_interval = commit_interval
        self.problem: str | None = None  #: the first problem writing rows, for the CLI to say once
        self.spool = Spool(spool_path(self.location))
        self._keeper: sqlite3.Connection | None = None
        models = models or ModelTable()
        try:
            secret_file = self._open()
            self._format = RowFormat(
                models=models,
                model=model or models.default_model,
                store_queries=store_queries,
                secret=load_secret(secret_file),
            )
        except (OSError, sqlite3.Error) as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} cannot be used ({type(error).__name__}: {error}); "
                f"set {setting} to another path, or to off"
            ) from None
        self._queue: queue.Queue[LedgerEntry | _Flush | object] = queue.Queue(maxsize=queue_size)
        self._closed = False
        self._writer_lock = threading.Lock()
        self._writer = self._start_writer()
        atexit.register(self.close)

    def _open(self) -> Path | None:
        """Create or check the database; return where the hashing secret lives (None: in memory)."""
        if self.location == ":memory:":
            # A named shared-cache database: the writer and readers see the same rows.
            self._uri = f"file:hybrid-weather-ledger-{os.getpid()}-{next(_memory_ids)}?mode=memory&cache=shared"
            self._keeper = self._connect()
            migrate(self._keeper)
            return None
        path = Path(self.location).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder")
        self._uri = path.resolve().as_uri()
        setup = self._connect()
        try:
            setup.execute("PRAGMA journal_mode=WAL")
            migrate(setup)
            setup.execute(f"SELECT {', '.join(COLUMNS)} FROM requests LIMIT 0")  # a foreign `requests` table
        finally:
            setup.close()
        return path.with_name(path.name + ".key")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._uri, uri=True, isolation_level=None, check_same_thread=False, timeout=1)
        db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        # In WAL mode NORMAL keeps every committed transaction through a crash of the process (SIGKILL);
        # only a power loss may take the last ones.
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def connect(self) -> sqlite3.Connection:
        """A new read connection (for reports)."""
        db = self._connect()
        db.row_factory = sqlite3.Row
        return db

    def record(self, entry: LedgerEntry) -> None:
        """Queue ENTRY for writing. Returns at once unless the queue is full; then waits for room, and
        spools the row itself if the writer makes none within RECORD_TIMEOUT."""
        if self._closed:
            self._spool([entry], "a row came after close()")
            return
        if not self._writer.is_alive():
            self._restart_writer()
        try:
            self._queue.put(entry, timeout=RECORD_TIMEOUT)
        except queue.Full:
            self._spool([entry], f"the ledger writer made no room in {RECORD_TIMEOUT:.0f} s")

    def flush(self) -> None:
        """Wait until everything recorded so far is committed (or spooled)."""
        if self._closed:
            return
        marker = _Flush()
        self._queue.put(marker)
        marker.done.wait(CLOSE_TIMEOUT + COMMIT_ATTEMPTS * COMMIT_PAUSE)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Commit everything queued and stop the writer, within TIMEOUT seconds; what the writer has not
        taken by then goes to the spool file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        self._writer.join(timeout)
        if self._writer.is_alive():
            left = self._drain()
            self._spool(left, f"the ledger writer did not finish within {timeout:.0f} s")
        if self._keeper is not None:
            self._keeper.close()
        with contextlib.suppress(Exception):  # the interpreter may be shutting down
            atexit.unregister(self.close)

    # -- the writer thread ---------------------------------------------------------------------------

    def _start_writer(self) -> threading.Thread:
        writer = threading.Thread(target=self._write_loop, name="hybrid-weather-ledger", daemon=True)
        writer.start()
        return writer

    def _restart_writer(self) -> None:
        with self._writer_lock:
            if not self._writer.is_alive():
                logger.error("the ledger writer had stopped; starting it again")
                self._note("the ledger writer had stopped and was started again")
                self._writer = self._start_writer()

    def _write_loop(self) -> None:
        db: sqlite3.Connection | None = None
        stopping = False
        with contextlib.suppress(Exception):  # a replay that fails leaves the rows in the spool
            db = self._connect()
            self._replay(db)
        while not stopping:
            batch, markers, stopping = self._next_batch()
            try:
                if batch:
                    db = db or self._connect()
                    self._commit(db, batch)
            except Exception as error:  # the writer must outlive any row and any fault
                logger.exception("ledger writer: %s", error)
                self._spool(batch, f"rows could not be written ({type(error).__name__}: {error})")
                db = None
            for marker in markers:
                marker.done.set()
        if db is not None:
            db.close()

    def _next_batch(self) -> tuple[list[LedgerEntry], list[_Flush], bool]:
        """Entries until BATCH_SIZE rows, COMMIT_INTERVAL seconds after the first, a flush or the stop."""
        batch: list[LedgerEntry] = []
        markers: list[_Flush] = []
        item = self._queue.get()
        deadline = time.monotonic() + self.commit_interval
        while True:
            if item is _STOP:
                return batch, markers, True
            if isinstance(item, _Flush):
                markers.append(item)
                return batch, markers, False
            if isinstance(item, LedgerEntry):
                batch.append(item)
            if len(batch) >= self.batch_size:
                return batch, markers, False
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return batch, markers, False

    def _commit(self, db: sqlite3.Connection, batch: list[LedgerEntry]) -> None:
        rows = [self._format.row(entry) for entry in batch]
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            error = _write(db, _INSERT, rows)
            if error is None:
                return
            if attempt == COMMIT_ATTEMPTS:
                self._spool_rows(rows, f"the ledger at {self.location} refused {len(rows)} rows ({error})")
                return
            time.sleep(COMMIT_PAUSE * attempt)

    def _replay(self, db: sqlite3.Connection) -> None:
        """Rows an earlier writer had to spool, written now; each row's unique id makes a second replay of
        the same row a no-op, so nothing is counted twice."""
        if self.location == ":memory:":
            return
        taken = self.spool.take()
        if not taken:
            return
        rows = [tuple(row.get(column) for column in COLUMNS) for row in taken]
        error = _write(db, _INSERT_ONCE, rows)
        if error is not None:
            self._spool_rows(rows, f"spooled rows could not be replayed yet ({error})")
            return
        logger.info("ledger: %d spooled rows replayed into %s", len(rows), self.location)

    def _drain(self) -> list[LedgerEntry]:
        left: list[LedgerEntry] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return left
            if isinstance(item, LedgerEntry):
                left.append(item)
            elif isinstance(item, _Flush):
                item.done.set()

    def _spool(self, entries: list[LedgerEntry], why: str) -> None:
        if entries:
            self._spool_rows([self._format.row(entry) for entry in entries], why)

    def _spool_rows(self, rows: list[tuple[object, ...]], why: str) -> None:
        try:
            self.spool.append(COLUMNS, rows)
        except OSError as error:
            logger.error("ledger: %s, and the spool %s cannot be written (%s): %d rows lost", why, self.spool.path,
                         error, len(rows))  # fmt: skip
            self._note(f"{why}; the spool {self.spool.path} cannot be written either: {len(rows)} rows lost")
            return
        logger.warning("ledger: %s; %d rows kept in %s", why, len(rows), self.spool.path)
        self._note(f"{why}; rows kept in {self.spool.path}")

    def _note(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem


class SpoolLedger:
    """Stands in for a Ledger whose location cannot hold one: every row goes to the spool file, so asking
    still answers and no row is lost. `problem` says why, for the CLI to print once."""

    def __init__(self, location: str, problem: str, *, models: ModelTable | None = None, model: str | None = None,
                 store_queries: str = "masked") -> None:  # fmt: skip
        self.location = location
        self.problem: str | None = problem
        self.spool = Spool(spool_path(location))
        models = models or ModelTable()
        try:
            secret = load_secret(self.spool.path.with_name(self.spool.path.name + ".key"))
        except OSError:
            secret = load_secret(None)  # no room anywhere: rows stay unlinkable even to each other
        self._format = RowFormat(models=models, model=model or models.default_model, store_queries=store_queries,
                                 secret=secret)  # fmt: skip
        self._lock = threading.Lock()
        self._noted = False

    def record(self, entry: LedgerEntry) -> None:
        row = self._format.row(entry)
        with self._lock:
            try:
                self.spool.append(COLUMNS, [row])
            except OSError as error:
                if not self._noted:
                    self.problem = f"{self.problem}; the spool {self.spool.path} cannot be written either ({error})"
                    self._noted = True
                return
            if not self._noted:
                self.problem = f"{self.problem}; rows kept in {self.spool.path}"
                self._noted = True

    def flush(self) -> None:
        pass

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        pass

    def connect(self) -> sqlite3.Connection:
        raise LedgerUnavailable(self.problem or f"the ledger at {self.location} cannot be used")

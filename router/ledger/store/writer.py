"""The cost ledger: one row per request, in SQLite or PostgreSQL, written by a background thread in batches.

The request path only queues an entry. The writer commits at least every COMMIT_INTERVAL seconds or
BATCH_SIZE rows, whichever comes first. Rows held only in memory — what a SIGKILL can lose — are never
more than QUEUE_SIZE + 2 x BATCH_SIZE: 2,024 rows, about half a second of the fastest traffic one process
makes; at a lighter load, the last COMMIT_INTERVAL of it.

A caller never waits long on the database: past QUEUE_SIZE it waits for room while the writer is busy (it
took a batch within STUCK_AFTER: its pace is the callers'), but a writer stuck on a server that stopped
answering (until its deadline cuts the connection) is waited for STUCK_AFTER at most; then that row and
those after it overflow to the spool file, a batch at a time, until the writer makes room again.

Nothing is dropped: a row that cannot be stored as given is stored in a safe form; a batch the database
refuses after a few tries, or while it is away, goes to the spool file and is written back, once, when
it answers again; a writer that died is started again; close() gives up on the database after
CLOSE_TIMEOUT and spools what is left. `problem` says what went wrong, once, for
the CLI to print.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from hybrid_weather.agent.errors import LedgerUnavailable
from hybrid_weather.agent.llm.models import ModelTable

from ...settings import is_postgres, ledger_scheme_problem, redact
from ..entry import LedgerEntry
from .handoff import Handoff
from .rows import COLUMNS, RowFormat
from .spool import Spool, spool_path, stray_spool

logger = logging.getLogger("hybrid_weather")
T = TypeVar("T")

#: Rows waiting for the writer at the most; past this, record() waits for room (it never drops a row).
DEFAULT_QUEUE_SIZE = 1_000
#: Rows per transaction at the most.
DEFAULT_BATCH_SIZE = 512
#: Seconds a row waits for its transaction at the most: the window a SIGKILL can lose.
COMMIT_INTERVAL = 0.1
#: Tries of one batch before it goes to the spool, and the pause between them (seconds).
COMMIT_ATTEMPTS = 3
COMMIT_PAUSE = 0.2
#: Seconds close() waits for the writer before it spools what is left.
CLOSE_TIMEOUT = 5.0
#: Seconds without taking a batch after which a writer whose queue is full is stuck, not busy: record()
#: then waits no longer (a request thread, or an event loop serving many) and the row overflows to the spool.
STUCK_AFTER = 1.0
#: Seconds between two looks at a stuck writer by a caller waiting for room.
ROOM_WAIT = 0.05
#: Seconds a readiness check (check()) waits for the database to answer.
CHECK_TIMEOUT = 0.8
#: Seconds the writer leaves a database that failed before it connects again; its batches are spooled.
AWAY_PAUSE = 1.0
#: Seconds between two deletions of rows older than the ledger keeps (keep_days).
PRUNE_INTERVAL = 3600.0


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


@dataclass(slots=True)
class _Flush:
    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class Ledger:
    """Append-only request log in SQLite (WAL) or PostgreSQL. Thread-safe; one per process and location.

    Raises LedgerUnavailable when LOCATION cannot hold a ledger (a folder, a read-only or corrupt file,
    a foreign `requests` table, no room, a database that refuses us); writing problems later, and a
    server that is away for now, are handled, never raised.
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
        keep_days: float | None = None,
        spool: Path | None = None,
        setting: str = "HYBRID_WEATHER_LEDGER",
    ) -> None:
        self.database = database_for(str(location))  # raises LedgerUnavailable
        self.location = self.database.location
        self.setting = setting  #: what the user sets to move the ledger, for messages
        self.batch_size = batch_size
        self.commit_interval = commit_interval
        self.keep_days = keep_days  #: rows older than this are deleted (the rollup keeps their sums); None: kept
        self.problem: str | None = None  #: the first problem writing rows, for the CLI to say once
        self.spool = Spool(spool or spool_path(str(location)))
        # Its spool, and the file rows went to while this ledger's folder could not be written: replayed alike.
        stray = stray_spool(str(location))
        self._spools = (self.spool,) + ((Spool(stray),) if stray is not None and stray != self.spool.path else ())
        models = models or ModelTable()
        self._opened = True
        try:
            secret = self.database.open()
        except self.database.away as error:
            # A server that is down when this process starts: rows are spooled under a local hashing key
            # until the writer reaches it, then written back.
            self._opened = False
            secret = self.spool.secret()
            self._note(f"the ledger at {self.location} could not be reached ({_first_line(error)}); rows kept in "
                       f"{self.spool.path} until it can")  # fmt: skip
            logger.warning("ledger: %s", self.problem)
        except self.database.unusable as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} cannot be used ({type(error).__name__}: {_first_line(error)}); "
                f"set {setting} to another path, or to off"
            ) from None
        self._format = RowFormat(
            models=models, model=model or models.default_model, store_queries=store_queries, secret=secret
        )
        # RowFormat is the writer's, but rows that overflow are formatted by the thread that records them:
        # whoever formats holds this (uncontended but for an overflow: one acquire a batch).
        self._formatting = threading.Lock()
        self._overflowing = False  # the queue was full: rows go to the overflow until the writer makes room
        self._overflow: list[LedgerEntry] = []  # rows for the spool, written a batch (or COMMIT_INTERVAL) at a time
        self._overflow_since = 0.0
        self._overflow_lock = threading.Lock()
        self._took_at = time.monotonic()  # when the writer last took rows out of the queue
        self._probe: _Probe | None = None  # the readiness check in flight, if any
        self._probe_lock = threading.Lock()
        self._queue: Handoff[LedgerEntry | _Flush | object] = Handoff(queue_size, batch_size)
        self._closed = False
        self._in_hand: Sequence[tuple[object, ...]] = []  # the writer's rows: spooled by close() if it hangs
        self._replay_due = True  # rows spooled by anyone: tried at start and when the database is back
        self._pruned_at = -PRUNE_INTERVAL  # monotonic time can be small: the first prune runs at once
        self._writer_lock = threading.Lock()
        self._writer = self._start_writer()
        atexit.register(self.close)

    def connect(self) -> Any:
        """A new read connection (for reports): sqlite3 or psycopg; LedgerUnavailable, in one line, when
        the database cannot be reached or opened."""
        try:
            return self.database.connect()
        except self.database.unusable as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} cannot be reached ({_first_line(error)}); start it, or set "
                f"{self.setting} to one that can"
            ) from None

    def feedback(self, request_id: str, verdict: str, comment: str | None = None, caller: str | None = None) -> str:
        """Keep VERDICT on the request REQUEST_ID, of CALLER's if given (after everything queued here is
        stored, so an answer just given can be marked): "kept", "pending" (its row may be on its way from
        another process: applied when it lands) or "unknown" (feedback.record_feedback)."""
        from .feedback import record_feedback

        self.flush()
        return self.report(lambda db: record_feedback(db, request_id, verdict, comment, caller))

    def report(self, read: Callable[[Any], T]) -> T:
        """READ's result over a new read connection, closed after; LedgerUnavailable, in one line, when
        the database cannot be reached or read (a server that went away, a database that is not there)."""
        db = self.connect()
        try:
            return read(db)
        except self.database.unusable as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} could not be read ({_first_line(error)}); start it, or set "
                f"{self.setting} to one that can"
            ) from None
        finally:
            with contextlib.suppress(Exception):
                db.close()

    @property
    def pending(self) -> int:
        """Rows this process has queued that are not yet stored or spooled."""
        return len(self._queue) + len(self._in_hand)

    def record(self, entry: LedgerEntry) -> None:
        """Queue ENTRY for writing. Returns at once unless the queue is full; then waits for room while the
        writer is busy, but STUCK_AFTER at most for a stuck one, and overflows to the spool, it and the rows
        after it, until the writer makes room."""
        if self._closed:
            self._spool([entry], "a row came after close()")
            return
        if not self._writer_running:
            self._restart_writer()
        if self._overflowing:
            # Back to the queue once the writer has taken a batch out of it, not at the first free place:
            # each row would otherwise wait ROOM_WAIT for the next.
            if len(self._queue) > self._queue.maxsize - self._queue.batch_size:
                self._overflowed(entry)
                return
            self._overflowing = False
        while True:
            try:
                self._queue.put(entry, ROOM_WAIT)
                return
            except queue.Full:
                if time.monotonic() - self._took_at > STUCK_AFTER:
                    break
        self._overflowing = True
        self._overflowed(entry)

    def check(self, timeout: float = CHECK_TIMEOUT) -> str | None:
        """None when the database answers a query within TIMEOUT seconds, else why not, in one line. One
        check at a time runs (a server that stopped answering holds it until its own timeouts): a caller
        that comes meanwhile waits for that one's answer, within its own TIMEOUT."""
        with self._probe_lock:
            if self._probe is None or self._probe.done.is_set():
                self._probe = _Probe(self.database)
            probe = self._probe
        if not probe.done.wait(timeout):
            return f"the ledger at {self.location} did not answer within {timeout:g} s"
        return probe.problem

    def flush(self) -> None:
        """Wait until everything recorded so far is committed (or spooled)."""
        if self._closed:
            return
        marker = _Flush()
        self._queue.put(marker, urgent=True)
        marker.done.wait(CLOSE_TIMEOUT + COMMIT_ATTEMPTS * COMMIT_PAUSE)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Commit everything queued and stop the writer, within TIMEOUT seconds; what the writer has not
        taken by then goes to the spool file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP, urgent=True)
        # Not Thread.join() nor is_alive(): a signal handler's exception (SIGTERM → SystemExit) that lands
        # inside is_alive() can leave a live thread marked stopped (CPython's cleanup for bpo-45274
        # releases the thread's own lock), and join() then returns at once while the writer still holds
        # the queue's last rows, which the exit then drops. The writer says
        # itself when it is done.
        # Polled from 0.1 ms, doubling to 5 ms: a one-shot CLI run's writer is done in a millisecond or two,
        # and a fixed 5 ms pause would be most of what close() costs it.
        deadline, pause = time.monotonic() + timeout, 0.0001
        while self._writer_running and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
        if self._writer_running:
            # The batch in the writer's hands too: should its commit still land, the replay skips those
            # rows by id, so nothing is lost and nothing counted twice.
            why = f"the ledger writer did not finish within {timeout:.0f} s"
            self._spool_rows(self._in_hand, why)
            self._spool(self._drain() + self._take_overflow(), why)
        self.database.close()
        with contextlib.suppress(Exception):  # the interpreter may be shutting down
            atexit.unregister(self.close)

    # -- the writer thread ---------------------------------------------------------------------------

    def _start_writer(self) -> threading.Thread:
        self._writer_running = True  #: cleared by the writer itself as it ends, however it ends
        writer = threading.Thread(target=self._write_loop, name="hybrid-weather-ledger", daemon=True)
        writer.start()
        return writer

    def _restart_writer(self) -> None:
        with self._writer_lock:
            if not self._writer_running:
                logger.error("the ledger writer had stopped; starting it again")
                self._note("the ledger writer had stopped and was started again")
                self._writer = self._start_writer()

    def _write_loop(self) -> None:
        try:
            self._write_until_stopped()
        finally:
            self._writer_running = False

    def _write_until_stopped(self) -> None:
        db: Any = None
        stopping = False
        away_until = 0.0  # after a failure the database is given a pause: batches go to the spool meanwhile
        while not stopping:
            batch, markers, stopping = self._next_batch()
            batch = self._take_overflow() + batch  # rows that overflowed while the writer was away
            if db is None and time.monotonic() < away_until:
                self._spool(batch, f"the ledger at {self.location} failed less than {AWAY_PAUSE:g} s ago")
                self._release(markers)
                continue
            if not batch and db is None and not self._replay_waiting() and not self._prune_due():
                self._release(markers)  # nothing to write, write back or delete: no connection for nothing
                continue
            try:
                db = self._reach(db)
                if batch:
                    self._commit(db, batch)
                    batch = []  # stored: a fault after this point must not spool it again
                self._look_after(db)
            except Exception as error:  # the writer must outlive any row and any fault
                logger.warning("ledger writer: %s", error)
                if self._in_hand:
                    self._spool_rows(self._in_hand, f"rows could not be written ({type(error).__name__}: {error})")
                elif batch:
                    self._spool(batch, f"rows could not be written ({type(error).__name__}: {error})")
                self._in_hand = []
                self._replay_due = True  # what was spooled goes back once the database answers again
                if isinstance(error, self.database.retryable):
                    pass  # busy (other writers), not away: the next batch tries again at once, same connection
                else:
                    if db is not None:
                        with contextlib.suppress(Exception):
                            db.close()
                        db = None
                    away_until = time.monotonic() + AWAY_PAUSE
            self._release(markers)
        self._spool(self._take_overflow(), "rows overflowed while the ledger writer was stuck")
        if self._replay_waiting():
            db = self._last_replay(db)
        if db is not None:
            with contextlib.suppress(Exception):
                db.close()

    def _prune_due(self) -> bool:
        return self.keep_days is not None and time.monotonic() - self._pruned_at > PRUNE_INTERVAL

    @property
    def spooled(self) -> int:
        """Rows waiting to be replayed into this ledger: in its spool, and in its stray spool (rows spooled
        while its folder could not be written)."""
        return sum(spool.count() for spool in self._spools)

    def _replay_waiting(self) -> bool:
        """Whether rows wait in the spool for this writer to write back."""
        return self._replay_due and self.database.replays and any(spool.holds_rows() for spool in self._spools)

    def _reach(self, db: Any) -> Any:
        """DB, or a new writer connection; a database away when this process started is opened first
        (its hashing key replaces the local one)."""
        if not self._opened:
            secret = self.database.open()
            with self._formatting:
                self._format.secret = secret
            self._opened = True
        return db or self.database.writer()

    def _last_replay(self, db: Any) -> Any:
        """At close, what this process spooled while the database was away, written back if it answers now
        (close() spools the rows again should this outlast its timeout)."""
        try:
            db = self._reach(db)
            self._replay(db)
        except Exception as error:
            self._spool_rows(self._in_hand, f"spooled rows could not be written back yet ({error})")
            self._in_hand = []
        return db

    @staticmethod
    def _release(markers: list[_Flush]) -> None:
        for marker in markers:
            marker.done.set()

    def _next_batch(self) -> tuple[list[LedgerEntry], list[_Flush], bool]:
        """Entries until BATCH_SIZE rows, COMMIT_INTERVAL seconds after the first, a flush or the stop."""
        # Rows wait in the spool: an idle writer looks for the database again every AWAY_PAUSE, so they are
        # written back when it answers, not when the next request comes.
        idle = AWAY_PAUSE if self._replay_waiting() else None
        self._took_at = time.monotonic()  # waiting for rows is not being stuck: an idle writer comes at once
        taken = self._queue.take(self.commit_interval, idle)
        self._took_at = time.monotonic()
        # Only the markers are urgent, and a take ends at its first urgent item: what comes before its last
        # item is entries, with no look at each.
        last = taken[-1] if taken else None
        if last is _STOP:
            return cast("list[LedgerEntry]", taken[:-1]), [], True
        if isinstance(last, _Flush):
            return cast("list[LedgerEntry]", taken[:-1]), [last], False
        return cast("list[LedgerEntry]", taken), [], False

    def _commit(self, db: Any, batch: list[LedgerEntry]) -> None:
        """BATCH stored, tried COMMIT_ATTEMPTS times; spooled when the database keeps refusing it. A
        connection that breaks raises to the loop, which spools the batch and connects again."""
        with self._formatting:
            self._in_hand = self._format.rows(batch)
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                self.database.write(db, self._in_hand)
            except self.database.retryable as error:
                if attempt == COMMIT_ATTEMPTS:
                    raise
                logger.info("ledger: a batch was refused (%s); trying again", error)
                time.sleep(COMMIT_PAUSE * attempt)
            else:
                break
        self._in_hand = []

    def _look_after(self, db: Any) -> None:
        """Between batches: replay what was spooled, and delete rows older than keep_days (hourly)."""
        if self._replay_due and self.database.replays:
            self._replay_due = False
            self._replay(db)
        if self.keep_days is not None and self._prune_due():
            self._pruned_at = time.monotonic()
            before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=self.keep_days)
            pruned = self.database.prune(db, before)
            if pruned:
                logger.info("ledger: %d rows older than %g days deleted (their sums stay in the rollup)", pruned,
                            self.keep_days)  # fmt: skip

    def _replay(self, db: Any) -> None:
        """Rows an earlier writer had to spool, written now; each row's unique id makes a second replay of
        the same row a no-op, so nothing is counted twice."""
        taken = [row for spool in self._spools for row in spool.take()]
        if not taken:
            return
        rows = [tuple(row.get(column) for column in COLUMNS) for row in taken]
        # In batches, like any other rows: one long transaction would hold the database from the other
        # writers (of other processes) until they spool in turn.
        for start in range(0, len(rows), self.batch_size):
            self._in_hand = rows[start:]  # what is not stored yet, should this batch fail
            self.database.write(db, rows[start : start + self.batch_size], once=True)
        self._in_hand = []
        logger.info("ledger: %d spooled rows replayed into %s", len(taken), self.location)

    def _drain(self) -> list[LedgerEntry]:
        left: list[LedgerEntry] = []
        for item in self._queue.take_all():
            if isinstance(item, _Flush):
                item.done.set()
            elif item is not _STOP:
                left.append(cast("LedgerEntry", item))
        return left

    def _spool(self, entries: list[LedgerEntry], why: str) -> None:
        if entries:
            with self._formatting:
                rows = self._format.rows(entries)
            self._spool_rows(rows, why)

    def _overflowed(self, entry: LedgerEntry) -> None:
        """ENTRY kept for the spool, where the overflow goes once it holds a batch or its first row has
        waited COMMIT_INTERVAL: one write (and fsync) a batch, by the caller that completes it."""
        with self._overflow_lock:
            if not self._overflow:
                self._overflow_since = time.monotonic()
            self._overflow.append(entry)
            if len(self._overflow) < self.batch_size and time.monotonic() - self._overflow_since < self.commit_interval:
                return
            entries, self._overflow = self._overflow, []
        self._spool(entries, f"the ledger writer made no room in {STUCK_AFTER:g} s (is the database answering?)")

    def _take_overflow(self) -> list[LedgerEntry]:
        if not self._overflow:  # nearly always: no lock taken
            return []
        with self._overflow_lock:
            entries, self._overflow = self._overflow, []
        return entries

    def _spool_rows(self, rows: Sequence[tuple[object, ...]], why: str) -> None:
        if not rows:
            return
        try:
            self.spool.append(COLUMNS, rows)
        except OSError as error:
            logger.error("ledger: %s, and the spool %s cannot be written (%s): %d rows lost", why, self.spool.path,
                         error, len(rows))  # fmt: skip
            self._note(f"{why}; the spool {self.spool.path} cannot be written either: {len(rows)} rows lost")
            return
        self._replay_due = True  # by the writer once the database answers, and by close() at the latest
        logger.warning("ledger: %s; %d rows kept in %s", why, len(rows), self.spool.path)
        self._note(f"{why}; rows kept in {self.spool.path}")

    def _note(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem


class _Probe:
    """One readiness check of DATABASE, in a thread of its own, so a caller can stop waiting for it."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.problem: str | None = None  #: why the database did not answer, once done (None: it did)
        self.done = threading.Event()
        threading.Thread(target=self._run, name="hybrid-weather-ledger-check", daemon=True).start()

    def _run(self) -> None:
        try:
            self.database.ping()
        except Exception as error:  # any driver's error: the check's answer, not a failure of it
            self.problem = f"{type(error).__name__}: {_first_line(error)}"
        finally:
            self.done.set()


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


class SpoolLedger:
    """Stands in for a Ledger whose location cannot hold one: every row goes to the spool file, so asking
    still answers and no row is lost. `problem` says why, for the CLI to print once."""

    def __init__(self, location: str, problem: str, *, models: ModelTable | None = None, model: str | None = None,
                 store_queries: str = "masked", spool: Path | None = None) -> None:  # fmt: skip
        self.location = redact(location)
        self.problem: str | None = problem
        self.spool = Spool(spool or spool_path(location))
        models = models or ModelTable()
        secret = self.spool.secret()
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

    @property
    def pending(self) -> int:
        return 0

    @property
    def spooled(self) -> int:
        return self.spool.count()

    def connect(self) -> Any:
        raise LedgerUnavailable(self.problem or f"the ledger at {self.location} cannot be used")

    def feedback(self, request_id: str, verdict: str, comment: str | None = None, caller: str | None = None) -> str:
        """No verdict can be kept: the rows are in the spool, not in a ledger."""
        return self.report(lambda db: "unknown")

    def report(self, read: Callable[[Any], T]) -> T:
        return read(self.connect())

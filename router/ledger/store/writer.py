"""The ledger's writer: a queue the request path puts entries in, and one thread that takes them out in
batches and writes them into the database.

The writer commits at least every COMMIT_INTERVAL seconds or BATCH_SIZE rows, whichever comes first. Rows
held only in memory — what a SIGKILL can lose — are never more than QUEUE_SIZE + 2 x BATCH_SIZE: 2,024
rows, about half a second of the fastest traffic one process makes; at a lighter load, the last
COMMIT_INTERVAL of it.

A caller never waits long on the database: past QUEUE_SIZE it waits for room while the writer is busy (it
took a batch within STUCK_AFTER: its pace is the callers'), but a writer stuck on a server that stopped
answering (until its deadline cuts the connection) is waited for STUCK_AFTER at most; then that row and
those after it overflow to the spool file, a batch at a time, until the writer makes room again.

A batch the database refuses after a few tries, or while it is away, goes to the spool and is written
back, once, when it answers again; a writer that died is started again; close() gives up on the database
after CLOSE_TIMEOUT and spools what is left.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .handoff import Handoff

if TYPE_CHECKING:
    from ..entry import LedgerEntry
    from .database import Database
    from .spool import Spooler

logger = logging.getLogger("hybrid_weather")

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
#: Seconds the writer leaves a database that failed before it connects again; its batches are spooled.
AWAY_PAUSE = 1.0
#: Seconds between two deletions of rows older than the ledger keeps (keep_days).
PRUNE_INTERVAL = 3600.0


@dataclass(slots=True)
class _Flush:
    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class Writer:
    """The queue and the thread that empties it into DATABASE; what cannot be written goes to SPOOLER.

    OPENED: the database has been opened (a server away when the ledger started is opened by the writer,
    when it first reaches it). KEEP_DAYS: rows older than this are deleted hourly (None: kept).
    """

    def __init__(
        self,
        database: Database,
        spooler: Spooler,
        *,
        opened: bool = True,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        commit_interval: float = COMMIT_INTERVAL,
        keep_days: float | None = None,
    ) -> None:
        self.database = database
        self.spooler = spooler
        self.batch_size = batch_size
        self.commit_interval = commit_interval
        self._opened = opened
        self._queue: Handoff[LedgerEntry | _Flush | object] = Handoff(queue_size, batch_size)
        self._overflow = _Overflow(spooler, batch_size, commit_interval)
        self._pruner = _Pruner(database, keep_days)
        self._overflowing = False  # the queue was full: rows go to the overflow until the writer makes room
        self._took_at = time.monotonic()  # when the writer last took rows out of the queue
        self._closed = False
        self._in_hand: Sequence[tuple[object, ...]] = []  # the writer's rows: spooled by close() if it hangs
        self._thread_lock = threading.Lock()
        self._thread = self._start()

    @property
    def pending(self) -> int:
        """Rows queued that are not yet stored or spooled."""
        return len(self._queue) + len(self._in_hand)

    def put(self, entry: LedgerEntry) -> None:
        """Queue ENTRY. Returns at once unless the queue is full; then waits for room while the writer is
        busy, but STUCK_AFTER at most for a stuck one, and overflows to the spool, it and the rows after it,
        until the writer makes room."""
        if self._closed:
            self.spooler.keep([entry], "a row came after close()")
            return
        if not self._running:
            self._restart()
        if self._overflowing:
            # Back to the queue once the writer has taken a batch out of it, not at the first free place:
            # each row would otherwise wait ROOM_WAIT for the next.
            if len(self._queue) > self._queue.maxsize - self._queue.batch_size:
                self._overflow.add(entry)
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
        self._overflow.add(entry)

    def flush(self) -> None:
        """Wait until everything queued so far is committed (or spooled)."""
        if self._closed:
            return
        marker = _Flush()
        self._queue.put(marker, urgent=True)
        marker.done.wait(CLOSE_TIMEOUT + COMMIT_ATTEMPTS * COMMIT_PAUSE)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> bool:
        """Commit everything queued and stop the thread, within TIMEOUT seconds; what it has not taken by
        then goes to the spool. Safe to call twice: False when it was closed already."""
        if self._closed:
            return False
        self._closed = True
        self._queue.put(_STOP, urgent=True)
        # Not Thread.join() nor is_alive(): a signal handler's exception (SIGTERM → SystemExit) that lands
        # inside is_alive() can leave a live thread marked stopped (CPython's cleanup for bpo-45274
        # releases the thread's own lock), and join() then returns at once while the writer still holds
        # the queue's last rows, which the exit then drops. The writer says itself when it is done.
        # Polled from 0.1 ms, doubling to 5 ms: a one-shot CLI run's writer is done in a millisecond or two,
        # and a fixed 5 ms pause would be most of what close() costs it.
        deadline, pause = time.monotonic() + timeout, 0.0001
        while self._running and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
        if self._running:
            # The batch in the writer's hands too: should its commit still land, the replay skips those
            # rows by id, so nothing is lost and nothing counted twice.
            why = f"the ledger writer did not finish within {timeout:.0f} s"
            self.spooler.keep_rows(self._in_hand, why)
            self.spooler.keep(self._drain() + self._overflow.take(), why)
        return True

    # -- the thread ----------------------------------------------------------------------------------

    def _start(self) -> threading.Thread:
        self._running = True  #: cleared by the thread itself as it ends, however it ends
        thread = threading.Thread(target=self._run, name="hybrid-weather-ledger", daemon=True)
        thread.start()
        return thread

    def _restart(self) -> None:
        with self._thread_lock:
            if not self._running:
                logger.error("the ledger writer had stopped; starting it again")
                self.spooler.note("the ledger writer had stopped and was started again")
                self._thread = self._start()

    def _run(self) -> None:
        try:
            self._write_until_stopped()
        finally:
            self._running = False

    def _write_until_stopped(self) -> None:
        db: Any = None
        stopping = False
        away_until = 0.0  # after a failure the database is given a pause: batches go to the spool meanwhile
        while not stopping:
            batch, markers, stopping = self._next_batch()
            batch = self._overflow.take() + batch  # rows that overflowed while the writer was away
            if db is None and time.monotonic() < away_until:
                self.spooler.keep(
                    batch, f"the ledger at {self.database.location} failed less than {AWAY_PAUSE:g} s ago"
                )
            elif batch or db is not None or self._replay_waiting() or self._pruner.due():
                db, failed = self._write(db, batch)
                if failed:
                    away_until = time.monotonic() + AWAY_PAUSE
            # else: nothing to write, write back or delete: no connection for nothing
            _release(markers)
        self.spooler.keep(self._overflow.take(), "rows overflowed while the ledger writer was stuck")
        if self._replay_waiting():
            db = self._last_replay(db)
        if db is not None:
            _close(db)

    def _write(self, db: Any, batch: list[LedgerEntry]) -> tuple[Any, bool]:
        """BATCH written over DB (or a new connection), then the writer's chores; the connection to go on
        with, and whether the database failed (it is then left for AWAY_PAUSE, the connection closed)."""
        try:
            db = self._reach(db)
            if batch:
                self._commit(db, batch)
                batch = []  # stored: a fault after this point must not spool it again
            self._look_after(db)
        except Exception as error:  # the writer must outlive any row and any fault
            logger.warning("ledger writer: %s: %s", type(error).__name__, error)  # a KeyError says only its key
            why = f"rows could not be written ({type(error).__name__}: {error})"
            if self._in_hand:
                self.spooler.keep_rows(self._in_hand, why)
            else:
                self.spooler.keep(batch, why)
            self._in_hand = []
            self.spooler.due = True  # what was spooled goes back once the database answers again
            if isinstance(error, self.database.retryable):
                return db, False  # busy (other writers), not away: the next batch tries again, same connection
            if db is not None:
                _close(db)
            return None, True
        return db, False

    def _replay_waiting(self) -> bool:
        """Whether rows wait in the spool for this writer to write back."""
        return self.spooler.due and self.database.replays and self.spooler.waiting()

    def _reach(self, db: Any) -> Any:
        """DB, or a new writer connection; a database away when the ledger started is opened first (its
        hashing key replaces the local one)."""
        if not self._opened:
            self.spooler.use_secret(self.database.open())
            self._opened = True
        return db or self.database.writer()

    def _last_replay(self, db: Any) -> Any:
        """At close, what was spooled while the database was away, written back if it answers now (close()
        spools the rows again should this outlast its timeout)."""
        try:
            db = self._reach(db)
            self._replay(db)
        except Exception as error:
            self.spooler.keep_rows(self._in_hand, f"spooled rows could not be written back yet ({error})")
            self._in_hand = []
        return db

    def _next_batch(self) -> tuple[list[LedgerEntry], list[_Flush], bool]:
        """Entries until BATCH_SIZE rows, COMMIT_INTERVAL seconds after the first, a flush or the stop."""
        # Rows wait in the spool: an idle writer looks for the database again every AWAY_PAUSE, so they are
        # written back when it answers, not when the next request comes.
        idle = AWAY_PAUSE if self._replay_waiting() else None
        self._took_at = time.monotonic()  # waiting for rows is not being stuck: an idle writer comes at once
        taken = self._queue.take(self.commit_interval, idle)
        self._took_at = time.monotonic()
        return _split(taken)

    def _commit(self, db: Any, batch: list[LedgerEntry]) -> None:
        """BATCH stored, tried COMMIT_ATTEMPTS times; spooled when the database keeps refusing it. A
        connection that breaks raises to the loop, which spools the batch and connects again."""
        self._in_hand = self.spooler.rows(batch)
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
        if self.spooler.due and self.database.replays:
            self.spooler.due = False
            self._replay(db)
        self._pruner.run(db)

    def _replay(self, db: Any) -> None:
        """Rows an earlier writer had to spool, written now; each row's unique id makes a second replay of
        the same row a no-op, so nothing is counted twice."""
        rows = self.spooler.take()
        if not rows:
            return
        # In batches, like any other rows: one long transaction would hold the database from the other
        # writers (of other processes) until they spool in turn.
        for start in range(0, len(rows), self.batch_size):
            self._in_hand = rows[start:]  # what is not stored yet, should this batch fail
            self.database.write(db, rows[start : start + self.batch_size], once=True)
        self._in_hand = []
        logger.info("ledger: %d spooled rows replayed into %s", len(rows), self.database.location)

    def _drain(self) -> list[LedgerEntry]:
        left: list[LedgerEntry] = []
        for item in self._queue.take_all():
            if isinstance(item, _Flush):
                item.done.set()
            elif item is not _STOP:
                left.append(cast("LedgerEntry", item))
        return left


class _Overflow:
    """Rows for the spool while the writer is stuck: they go there once they make a batch or the first has
    waited COMMIT_INTERVAL, one write (and fsync) a batch, by the caller whose row completes it."""

    def __init__(self, spooler: Spooler, batch_size: int, commit_interval: float) -> None:
        self.spooler, self.batch_size, self.commit_interval = spooler, batch_size, commit_interval
        self._entries: list[LedgerEntry] = []
        self._since = 0.0
        self._lock = threading.Lock()

    def add(self, entry: LedgerEntry) -> None:
        with self._lock:
            if not self._entries:
                self._since = time.monotonic()
            self._entries.append(entry)
            if len(self._entries) < self.batch_size and time.monotonic() - self._since < self.commit_interval:
                return
            entries, self._entries = self._entries, []
        self.spooler.keep(entries, f"the ledger writer made no room in {STUCK_AFTER:g} s (is the database answering?)")

    def take(self) -> list[LedgerEntry]:
        """What waits for the spool, taken out (by the writer, which has room for it again)."""
        if not self._entries:  # nearly always: no lock taken
            return []
        with self._lock:
            entries, self._entries = self._entries, []
        return entries


class _Pruner:
    """Deletes DATABASE's rows older than KEEP_DAYS (None: keeps them), once every PRUNE_INTERVAL."""

    def __init__(self, database: Database, keep_days: float | None) -> None:
        self.database, self.keep_days = database, keep_days
        self._at = -PRUNE_INTERVAL  # monotonic time can be small: the first prune runs at once

    def due(self) -> bool:
        return self.keep_days is not None and time.monotonic() - self._at > PRUNE_INTERVAL

    def run(self, db: Any) -> None:
        if self.keep_days is None or not self.due():
            return
        self._at = time.monotonic()
        before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=self.keep_days)
        if pruned := self.database.prune(db, before):
            days = self.keep_days
            logger.info("ledger: %d rows older than %g days deleted (their sums stay in the rollup)", pruned, days)


def _split(taken: list[Any]) -> tuple[list[LedgerEntry], list[_Flush], bool]:
    """What a take from the queue holds: its entries, the flush it ends with, whether it ends with the stop.
    Only the markers are urgent, and a take ends at its first urgent item: what comes before its last item
    is entries, with no look at each."""
    last = taken[-1] if taken else None
    if last is _STOP:
        return cast("list[LedgerEntry]", taken[:-1]), [], True
    if isinstance(last, _Flush):
        return cast("list[LedgerEntry]", taken[:-1]), [last], False
    return cast("list[LedgerEntry]", taken), [], False


def _release(markers: list[_Flush]) -> None:
    for marker in markers:
        marker.done.set()


def _close(db: Any) -> None:
    with contextlib.suppress(Exception):  # a connection already broken: nothing more to do with it
        db.close()

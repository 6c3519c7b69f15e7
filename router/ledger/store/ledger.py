"""The cost ledger's front door: one row per request, in SQLite or PostgreSQL, recorded without waiting on
the database (writer.py's thread writes them in batches), read back by reports, marked by feedback and
checked by /readyz.

Nothing is dropped: a row that cannot be stored as given is stored in a safe form (rows.py); rows the
database cannot take now wait in the spool file (spool.py) and are written back, once, when it answers.
`problem` says what went wrong, once, for the CLI to print.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hybrid_weather.agent.errors import LedgerUnavailable
from hybrid_weather.agent.llm.models import ModelTable

from ...settings import redact
from ..entry import LedgerEntry
from .database import Database, database_for, first_line
from .rows import COLUMNS, RowFormat
from .spool import Spool, Spooler, spool_path, stray_spool
from .writer import CLOSE_TIMEOUT, COMMIT_INTERVAL, DEFAULT_BATCH_SIZE, DEFAULT_QUEUE_SIZE, Writer

logger = logging.getLogger("hybrid_weather")
T = TypeVar("T")

#: Seconds a readiness check (check()) waits for the database to answer.
CHECK_TIMEOUT = 0.8


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
        self.spool = Spool(spool or spool_path(str(location)))
        secret, problem = self._open()
        models = models or ModelTable()
        row_format = RowFormat(
            models=models, model=model or models.default_model, store_queries=store_queries, secret=secret
        )
        self._spooler = Spooler(self.spool, row_format, stray=stray_spool(str(location)), problem=problem)
        self._probe: _Probe | None = None  # the readiness check in flight, if any
        self._probe_lock = threading.Lock()
        self._writer = Writer(
            self.database,
            self._spooler,
            opened=problem is None,
            queue_size=queue_size,
            batch_size=batch_size,
            commit_interval=commit_interval,
            keep_days=keep_days,
        )
        atexit.register(self.close)

    def _open(self) -> tuple[bytes, str | None]:
        """The database opened: its hashing key, and None; for a server that is down when this process
        starts, a local key and why: rows are spooled under it until the writer reaches the server, then
        written back."""
        try:
            return self.database.open(), None
        except self.database.away as error:
            problem = (
                f"the ledger at {self.location} could not be reached ({first_line(error)}); rows kept in "
                f"{self.spool.path} until it can"
            )
            logger.warning("ledger: %s", problem)
            return self.spool.secret(), problem
        except self.database.unusable as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} cannot be used ({type(error).__name__}: {first_line(error)}); "
                f"set {self.setting} to another path, or to off"
            ) from None

    @property
    def problem(self) -> str | None:
        """The first problem writing rows, for the CLI to say once (None: none)."""
        return self._spooler.problem

    @property
    def pending(self) -> int:
        """Rows this process has queued that are not yet stored or spooled."""
        return self._writer.pending

    @property
    def spooled(self) -> int:
        """Rows waiting to be replayed into this ledger: in its spool, and in its stray spool (rows spooled
        while its folder could not be written)."""
        return self._spooler.count()

    def record(self, entry: LedgerEntry) -> None:
        """Queue ENTRY for writing. Returns at once unless the queue is full; then waits for room while the
        writer is busy, but a second at most for a stuck one, and spools it (writer.STUCK_AFTER)."""
        self._writer.put(entry)

    def connect(self) -> Any:
        """A new read connection (for reports): sqlite3 or psycopg; LedgerUnavailable, in one line, when
        the database cannot be reached or opened."""
        try:
            return self.database.connect()
        except self.database.unusable as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} cannot be reached ({first_line(error)}); start it, or set "
                f"{self.setting} to one that can"
            ) from None

    def report(self, read: Callable[[Any], T]) -> T:
        """READ's result over a new read connection, closed after; LedgerUnavailable, in one line, when
        the database cannot be reached or read (a server that went away, a database that is not there)."""
        db = self.connect()
        try:
            return read(db)
        except self.database.unusable as error:
            raise LedgerUnavailable(
                f"the ledger at {self.location} could not be read ({first_line(error)}); start it, or set "
                f"{self.setting} to one that can"
            ) from None
        finally:
            with contextlib.suppress(Exception):
                db.close()

    def feedback(self, request_id: str, verdict: str, comment: str | None = None, caller: str | None = None) -> str:
        """Keep VERDICT on the request REQUEST_ID, of CALLER's if given (after everything queued here is
        stored, so an answer just given can be marked): "kept", "pending" (its row may be on its way from
        another process: applied when it lands) or "unknown" (feedback.record_feedback)."""
        from .feedback import record_feedback

        self.flush()
        return self.report(lambda db: record_feedback(db, request_id, verdict, comment, caller))

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
        self._writer.flush()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Commit everything queued and stop the writer, within TIMEOUT seconds; what the writer has not
        taken by then goes to the spool file. Safe to call twice."""
        if not self._writer.close(timeout):
            return  # closed already
        self.database.close()
        with contextlib.suppress(Exception):  # the interpreter may be shutting down
            atexit.unregister(self.close)


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
            self.problem = f"{type(error).__name__}: {first_line(error)}"
        finally:
            self.done.set()


class SpoolLedger:
    """Stands in for a Ledger whose location cannot hold one: every row goes to the spool file, so asking
    still answers and no row is lost. `problem` says why, for the CLI to print once."""

    def __init__(
        self,
        location: str,
        problem: str,
        *,
        models: ModelTable | None = None,
        model: str | None = None,
        store_queries: str = "masked",
        spool: Path | None = None,
    ) -> None:
        self.location = redact(location)
        self.problem: str | None = problem
        self.spool = Spool(spool or spool_path(location))
        models = models or ModelTable()
        self._format = RowFormat(
            models=models, model=model or models.default_model, store_queries=store_queries, secret=self.spool.secret()
        )
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

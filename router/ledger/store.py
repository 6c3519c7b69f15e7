"""The cost ledger: one SQLite row per request, written by a background thread in batches.

Writes never block the request path: ask() puts an entry on a queue and returns. Nothing is dropped:
when the queue is full (the disk cannot keep up), the caller waits for room rather than losing the row.
close() — and, failing that, interpreter exit — flushes everything queued.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import logging
import os
import queue
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_weather.agent.llm.models import ModelTable

from .baseline import default_baseline_cost
from .entry import LedgerEntry
from .migrations import migrate
from .privacy import mask_personal_data

logger = logging.getLogger("hybrid_weather")

DEFAULT_QUEUE_SIZE = 10_000
DEFAULT_BATCH_SIZE = 500
QUERY_STORAGE = ("masked", "hash")

_COLUMNS = (
    "id",
    "datetime_utc",
    "route",
    "reason",
    "aspect",
    "places",
    "provider",
    "cache_hit",
    "stale",
    "model",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "llm_attempts",
    "cost_usd",
    "baseline_cost_usd",
    "baseline_method",
    "latency_ms",
    "outcome",
    "session_id",
    "query",
    "query_sha256",
    "days",
    "llm_loops",
    "tool_calls",
    "tool_failures",
    "agreement",
    "unknown_words",
    "plain_lookup",
)
_INSERT = f"INSERT INTO requests ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
_memory_ids = itertools.count()


@dataclass(slots=True)
class _Flush:
    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()


class Ledger:
    """Append-only request log in SQLite (WAL). Thread-safe; one per process and location."""

    def __init__(
        self,
        location: str | Path,
        *,
        models: ModelTable | None = None,
        model: str | None = None,
        store_queries: str = "masked",
        queue_size: int = DEFAULT_QUEUE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if store_queries not in QUERY_STORAGE:
            raise ValueError(f"store_queries must be one of {QUERY_STORAGE}")
        self.location = str(location)
        self.models = models or ModelTable()
        self.model = model or self.models.default_model
        self.store_queries = store_queries
        self.batch_size = batch_size
        self._keeper: sqlite3.Connection | None = None
        if self.location == ":memory:":
            # A named shared-cache database: the writer and readers see the same rows.
            self._uri = f"file:hybrid-weather-ledger-{os.getpid()}-{next(_memory_ids)}?mode=memory&cache=shared"
            self._keeper = self._connect()
        else:
            Path(self.location).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self._uri = Path(self.location).expanduser().resolve().as_uri()
        setup = self._keeper or self._connect()
        if self._keeper is None:
            setup.execute("PRAGMA journal_mode=WAL")
        migrate(setup)
        if setup is not self._keeper:
            setup.close()
        self._queue: queue.Queue[LedgerEntry | _Flush | object] = queue.Queue(maxsize=queue_size)
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="hybrid-weather-ledger", daemon=True)
        self._writer.start()
        atexit.register(self.close)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._uri, uri=True, isolation_level=None, check_same_thread=False, timeout=30)
        db.execute("PRAGMA busy_timeout=30000")
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
        """Queue ENTRY for writing. Returns at once unless the queue is full; then waits for room."""
        if self._closed:
            raise RuntimeError("ledger is closed")
        self._queue.put(entry)

    def flush(self) -> None:
        """Wait until everything recorded so far is committed."""
        if self._closed:
            return
        marker = _Flush()
        self._queue.put(marker)
        marker.done.wait()

    def close(self) -> None:
        """Commit everything queued and stop the writer. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._writer.join()
        if self._keeper is not None:
            self._keeper.close()
        with contextlib.suppress(Exception):  # the interpreter may be shutting down
            atexit.unregister(self.close)

    # -- the writer thread ---------------------------------------------------------------------------

    def _write_loop(self) -> None:
        db = self._connect()
        stopping = False
        while not stopping:
            batch: list[LedgerEntry] = []
            markers: list[_Flush] = []
            item = self._queue.get()
            while True:
                if item is _STOP:
                    stopping = True
                elif isinstance(item, _Flush):
                    markers.append(item)
                elif isinstance(item, LedgerEntry):
                    batch.append(item)
                if stopping or len(batch) >= self.batch_size:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._commit(db, batch)
            for marker in markers:
                marker.done.set()
        db.close()

    def _commit(self, db: sqlite3.Connection, batch: list[LedgerEntry]) -> None:
        rows = [self._row(entry) for entry in batch]
        while True:
            try:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(_INSERT, rows)
                db.execute("COMMIT")
                return
            except sqlite3.Error as error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                # Keep the rows: a locked or full disk is waited out, not a reason to lose requests.
                logger.error("ledger write failed (%s); retrying %d rows in 1 s", error, len(rows))
                threading.Event().wait(1.0)

    def _row(self, e: LedgerEntry) -> tuple[Any, ...]:
        when = dt.datetime.fromtimestamp(e.started_at, dt.timezone.utc)
        row_id = f"{int(e.started_at * 1000):012x}{os.urandom(5).hex()}"
        if e.route == "llm":
            baseline, method = e.cost_usd, "actual"  # an all-LLM design pays the same for these
        elif e.route == "shadow":
            baseline, method = None, None  # extra spend to measure the baseline, not a request
        else:
            baseline = default_baseline_cost(self.models, self.model, len(e.places))
            method = f"default:{self.model}"
        masked = mask_personal_data(e.query)
        usage = e.usage
        return (
            row_id,
            when.isoformat(timespec="microseconds"),
            e.route,
            e.reason,
            e.aspect,
            json.dumps(list(e.places), ensure_ascii=False),
            e.provider,
            _flag(e.cache_hit),
            _flag(e.stale),
            e.model,
            usage.prompt_tokens if usage else None,
            usage.cached_tokens if usage else None,
            usage.completion_tokens if usage else None,
            e.llm_attempts,
            e.cost_usd,
            baseline,
            method,
            round(e.latency_ms, 3),
            e.outcome,
            e.session_id,
            masked if self.store_queries == "masked" else None,
            hashlib.sha256(e.query.encode()).hexdigest(),
            e.days,
            e.llm_loops,
            e.tool_calls,
            e.tool_failures,
            _flag(e.agreement),
            json.dumps([mask_personal_data(w) for w in e.unknown_words], ensure_ascii=False)
            if e.unknown_words
            else None,
            _flag(e.plain_lookup),
        )


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)

"""The ledger's PostgreSQL database: one ledger for a fleet of processes and hosts (psycopg 3).

Loaded only when HYBRID_WEATHER_LEDGER is a postgresql:// URL. Money is `double precision`, as in SQLite
(REAL) and in Python: every backend sums the same IEEE doubles, so `savings` gives the same figures on
both, and a request's cost (a few millionths of a dollar from per-million-token prices) needs 15
significant digits, not decimal exactness. Times are `timestamptz`, lists `jsonb`, flags `boolean`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import psycopg.conninfo
from psycopg import errors

from ...settings import redact
from .migrations import MIGRATIONS_TABLE
from .rollup import (
    EXAMPLES,
    LATENCY_BOUNDS_MS,
    MISSED,
    MODEL_LATENCY,
    MODEL_TIMED,
    POSTGRES,
    ROLLUP_KEY,
    ROLLUP_SUMS,
    listed_words,
    misses_backfill,
)
from .rows import COLUMNS

#: Seconds to wait for a connection (psycopg's least), and for one statement of the writer (a report gets
#: longer). A batch is written in milliseconds; one that takes seconds is spooled rather than waited for.
#: The application_name of the ledger's connections when its URL names none.
APPLICATION_NAME = "hybrid-weather"
CONNECT_TIMEOUT = 2
WRITE_TIMEOUT_MS = 2_000
READ_TIMEOUT_MS = 60_000
#: Seconds past its statement_timeout that a call may take before the connection is cut from this side: the
#: server's timeout is the server's, and a server that stops answering never sends it. A writer stuck on
#: such a server is free again within WRITE_TIMEOUT_MS + CUT_GRACE (2.5 s), well inside the ledger's close
#: timeout (5 s), so close() still writes back what was spooled when the server is back.
CUT_GRACE = 0.5
#: TCP keepalives on every connection: an idle one whose server has gone is noticed in 5 + 3 x 2 s.
KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3}
# One lock id for everything that must not run twice at once on one database (migrations, pruning).
_MIGRATION_LOCK = 0x68772D6D  # "hw-m"
_PRUNE_LOCK = 0x68772D70  # "hw-p"
_PRUNE_BATCH = 50_000
#: Held shared by every insert's pending-feedback trigger, exclusively by a verdict kept pending (m010).
PENDING_LOCK = 0x68772D66  # "hw-f"


def _rollup_statements() -> tuple[str, ...]:
    # What m006_rollup does in SQLite, for PostgreSQL: a statement-level trigger over the rows an INSERT
    # really inserted (its transition table), so a batch costs one upsert per group, not per row, and a
    # replayed row that ON CONFLICT skipped is never counted. Keys are upserted in order, so two writers
    # adding to the same hour cannot deadlock.
    key = ", ".join(ROLLUP_KEY)
    bounds = ", ".join(repr(le) for le in LATENCY_BOUNDS_MS)
    return (
        f"""CREATE TABLE requests_hourly (
            hour timestamptz NOT NULL, route text NOT NULL, aspect text NOT NULL, model text NOT NULL,
            outcome text NOT NULL, baseline_method text NOT NULL, places integer NOT NULL, llm_loops integer NOT NULL,
            requests bigint NOT NULL, priced bigint NOT NULL, cost_usd double precision NOT NULL,
            baseline_cost_usd double precision NOT NULL, tool_calls bigint NOT NULL, tool_failures bigint NOT NULL,
            agreed bigint NOT NULL, judged bigint NOT NULL, invalid bigint NOT NULL,
            PRIMARY KEY ({key}))""",
        """CREATE TABLE latency_hourly (
            hour timestamptz NOT NULL, route text NOT NULL, le double precision NOT NULL, requests bigint NOT NULL,
            PRIMARY KEY (hour, route, le))""",
        "CREATE TABLE latency_bounds (le double precision PRIMARY KEY)",
        f"INSERT INTO latency_bounds SELECT unnest(ARRAY[{bounds}]::double precision[])",
        _rollup_function("CREATE", "inserted"),
        """CREATE TRIGGER requests_rollup AFTER INSERT ON requests REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION requests_rollup()""",
        # No rows to roll up here: a PostgreSQL ledger is born with this migration's schema.
    )


def _rollup_function(verb: str, inserted: str) -> str:
    """m006's trigger function (VERB: CREATE, or CREATE OR REPLACE), rolling up the rows of INSERTED (the
    transition table, or a subquery of it)."""
    key, sums = ", ".join(ROLLUP_KEY), ", ".join(ROLLUP_SUMS)
    row = POSTGRES.row_values("i")
    positions = ", ".join(str(n) for n in range(1, len(ROLLUP_KEY) + 1))
    added = ", ".join(f"{c} = h.{c} + excluded.{c}" for c in ROLLUP_SUMS)
    return f"""{verb} FUNCTION requests_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO requests_hourly AS h ({key}, {sums})
            SELECT {", ".join(row[c] for c in ROLLUP_KEY)}, {", ".join(f"sum({row[c]})" for c in ROLLUP_SUMS)}
            FROM {inserted} AS i GROUP BY {positions} ORDER BY {positions}
            ON CONFLICT ({key}) DO UPDATE SET {added};
            INSERT INTO latency_hourly AS l (hour, route, le, requests)
            SELECT {row["hour"]}, i.route, {POSTGRES.latency_bucket("i")}, count(*)
            FROM {inserted} AS i WHERE i.outcome = 'ok' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (hour, route, le) DO UPDATE SET requests = l.requests + excluded.requests;
            RETURN NULL;
        END $$"""


def _misses_statements() -> tuple[str, ...]:
    # What m007_misses_rollup does in SQLite, for PostgreSQL: a statement-level trigger over the rows an
    # INSERT really inserted, keys upserted in order (no deadlock between writers), then each touched
    # word's examples of the hour cut back to the last EXAMPLES.
    return (
        """CREATE TABLE lookups_hourly (
            hour timestamptz PRIMARY KEY, requests bigint NOT NULL, priced bigint NOT NULL,
            cost_usd double precision NOT NULL)""",
        """CREATE TABLE misses_hourly (
            hour timestamptz NOT NULL, word text NOT NULL, requests bigint NOT NULL, priced bigint NOT NULL,
            cost_usd double precision NOT NULL, PRIMARY KEY (hour, word))""",
        """CREATE TABLE misses_examples (
            word text NOT NULL, hour timestamptz NOT NULL, query text NOT NULL, last_id text NOT NULL,
            PRIMARY KEY (hour, word, query))""",
        "CREATE INDEX requests_disagreements ON requests (id) WHERE route = 'shadow' AND agreement IS FALSE",
        _misses_function("CREATE", "inserted"),
        """CREATE TRIGGER requests_misses AFTER INSERT ON requests REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION requests_misses()""",
        *misses_backfill(POSTGRES),  # the rows a ledger already holds, rolled up once
    )


def _misses_function(verb: str, inserted: str) -> str:
    """m007's trigger function (VERB: CREATE, or CREATE OR REPLACE), rolling up the plain lookups of INSERTED."""
    hour, missed, words = POSTGRES.row["hour"].format(r="i"), MISSED.format(r="i"), listed_words(POSTGRES, "i")
    return f"""{verb} FUNCTION requests_misses() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO lookups_hourly AS h (hour, requests, priced, cost_usd)
            SELECT {hour}, count(*), count(i.cost_usd), coalesce(sum(i.cost_usd), 0.0) FROM {inserted} AS i
            WHERE {missed} GROUP BY 1 ORDER BY 1
            ON CONFLICT (hour) DO UPDATE SET requests = h.requests + excluded.requests,
                priced = h.priced + excluded.priced, cost_usd = h.cost_usd + excluded.cost_usd;
            INSERT INTO misses_hourly AS m (hour, word, requests, priced, cost_usd)
            SELECT {hour}, w.value, count(*), count(i.cost_usd), coalesce(sum(i.cost_usd), 0.0)
            FROM {inserted} AS i, {words} WHERE {missed} GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (hour, word) DO UPDATE SET requests = m.requests + excluded.requests,
                priced = m.priced + excluded.priced, cost_usd = m.cost_usd + excluded.cost_usd;
            INSERT INTO misses_examples AS e (word, hour, query, last_id)
            SELECT w.value, {hour}, i.query, max(i.id) FROM {inserted} AS i, {words}
            WHERE {missed} AND i.query IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (hour, word, query) DO UPDATE SET last_id = greatest(e.last_id, excluded.last_id);
            DELETE FROM misses_examples AS e
            USING (SELECT DISTINCT w.value AS word, {hour} AS hour FROM {inserted} AS i, {words}
                   WHERE {missed} AND i.query IS NOT NULL) AS t
            WHERE e.word = t.word AND e.hour = t.hour
            AND e.last_id < (SELECT x.last_id FROM misses_examples AS x WHERE x.word = e.word AND x.hour = e.hour
                             ORDER BY x.last_id DESC LIMIT 1 OFFSET {EXAMPLES - 1});
            RETURN NULL;
        END $$"""


def _tenancy_statements() -> tuple[str, ...]:
    # What m010_tenancy does in SQLite, for PostgreSQL: a statement-level trigger over the rows an INSERT
    # really inserted. It holds PENDING_LOCK shared (writers never wait for each other), which a verdict kept
    # pending takes exclusively before it looks for its row again (feedback.py): a row whose trigger ran
    # before the verdict was committed is then committed too, and found; none falls between the two.
    return (
        "ALTER TABLE requests ADD COLUMN caller text",
        "CREATE INDEX requests_caller ON requests (caller, datetime_utc) WHERE caller IS NOT NULL",
        """CREATE TABLE pending_feedback (
            request_id text NOT NULL, caller text NOT NULL, verdict text NOT NULL, comment text,
            datetime_utc timestamptz NOT NULL, expires double precision NOT NULL, PRIMARY KEY (request_id, caller))""",
        f"""CREATE FUNCTION requests_pending_feedback() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared({PENDING_LOCK});
            IF EXISTS (SELECT 1 FROM pending_feedback) THEN  -- nearly always empty: one look a batch
                INSERT INTO feedback AS f (request_id, verdict, comment, datetime_utc)
                SELECT DISTINCT ON (p.request_id) p.request_id, p.verdict, p.comment, p.datetime_utc
                FROM pending_feedback AS p JOIN inserted AS i ON i.id = p.request_id
                WHERE (p.caller = '' OR p.caller = i.caller) AND p.expires > extract(epoch FROM clock_timestamp())
                ORDER BY p.request_id, p.datetime_utc DESC
                ON CONFLICT (request_id) DO UPDATE SET verdict = excluded.verdict, comment = excluded.comment,
                    datetime_utc = excluded.datetime_utc;
                DELETE FROM pending_feedback AS p USING inserted AS i WHERE p.request_id = i.id;
            END IF;
            RETURN NULL;
        END $$""",
        """CREATE TRIGGER requests_pending_feedback AFTER INSERT ON requests REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION requests_pending_feedback()""",
    )


def _pending_feedback_once_statements() -> tuple[str, ...]:
    # m010's trigger applied the pending verdicts in one statement and deleted them in the next: under READ
    # COMMITTED each has its own snapshot, so a verdict committed between the two was deleted, never applied,
    # while its request was told "kept". The verdicts are taken (deleted) and applied in one statement now:
    # what is deleted is what is applied, and a verdict that comes later waits for feedback.py to settle it.
    # SQLite has nothing to mend: its one writer at a time runs the trigger's two statements alone.
    return (
        f"""CREATE OR REPLACE FUNCTION requests_pending_feedback() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared({PENDING_LOCK});
            IF EXISTS (SELECT 1 FROM pending_feedback) THEN  -- nearly always empty: one look a batch
                WITH taken AS (
                    DELETE FROM pending_feedback AS p USING inserted AS i WHERE p.request_id = i.id
                    RETURNING p.request_id, p.caller, p.verdict, p.comment, p.datetime_utc, p.expires,
                        i.caller AS row_caller
                )
                INSERT INTO feedback AS f (request_id, verdict, comment, datetime_utc)
                SELECT DISTINCT ON (t.request_id) t.request_id, t.verdict, t.comment, t.datetime_utc
                FROM taken AS t
                WHERE (t.caller = '' OR t.caller = t.row_caller) AND t.expires > extract(epoch FROM clock_timestamp())
                ORDER BY t.request_id, t.datetime_utc DESC
                ON CONFLICT (request_id) DO UPDATE SET verdict = excluded.verdict, comment = excluded.comment,
                    datetime_utc = excluded.datetime_utc;
            END IF;
            RETURN NULL;
        END $$""",
    )


def _model_time_statements() -> tuple[str, ...]:
    # What m011_model_time does in SQLite, for PostgreSQL: the column, and its histogram kept by a
    # statement-level trigger over the rows an INSERT really inserted, keys upserted in order.
    return (
        "ALTER TABLE requests ADD COLUMN model_ms double precision",
        """CREATE TABLE model_latency_hourly (
            hour timestamptz NOT NULL, route text NOT NULL, le double precision NOT NULL, requests bigint NOT NULL,
            PRIMARY KEY (hour, route, le))""",
        _model_latency_function("CREATE", "inserted"),
        """CREATE TRIGGER requests_model_latency AFTER INSERT ON requests REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT EXECUTE FUNCTION requests_model_latency()""",
    )


def _model_latency_function(verb: str, inserted: str) -> str:
    """m011's trigger function (VERB: CREATE, or CREATE OR REPLACE), the model times of INSERTED."""
    return f"""{verb} FUNCTION requests_model_latency() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO model_latency_hourly AS l (hour, route, le, requests)
            SELECT {POSTGRES.row["hour"].format(r="i")}, i.route, {MODEL_LATENCY.format(r="i")}, count(*)
            FROM {inserted} AS i WHERE {MODEL_TIMED.format(r="i")} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (hour, route, le) DO UPDATE SET requests = l.requests + excluded.requests;
            RETURN NULL;
        END $$"""


def _demo_statements() -> tuple[str, ...]:
    # What m014_demo does in SQLite, for PostgreSQL: the column, its partial index, and the rollups' trigger
    # functions replaced by the same over the inserted rows that are not a demo provider's.
    counted = f"(SELECT * FROM inserted AS i WHERE {POSTGRES.counted.format(r='i')})"
    return (
        "ALTER TABLE requests ADD COLUMN demo boolean",
        f"CREATE INDEX requests_demo ON requests (datetime_utc) WHERE {POSTGRES.demo.format(r='requests')}",
        _rollup_function("CREATE OR REPLACE", counted),
        _misses_function("CREATE OR REPLACE", counted),
        _model_latency_function("CREATE OR REPLACE", counted),
    )


def _fleet_overlay_statements() -> tuple[str, ...]:
    # The overlay of a fleet whose ledger is here (router/understand/overlay_postgres.py): every version with
    # its text (as a version's file holds it), the command that made it, when and on which host; one row
    # saying which version is active (the canary, under HYBRID_WEATHER_CANARY, with its parent for the rest
    # of the sessions) and a counter every change bumps, so a process polls one integer to notice a change;
    # and the version each serving process last loaded, which `overlay status` lists.
    return (
        """CREATE TABLE overlay_versions (
            version integer PRIMARY KEY, parent integer, text text NOT NULL, command text NOT NULL,
            made_at timestamptz NOT NULL, host text NOT NULL)""",
        """CREATE TABLE overlay_state (
            one boolean PRIMARY KEY DEFAULT true CHECK (one), active integer REFERENCES overlay_versions,
            changes bigint NOT NULL)""",
        "INSERT INTO overlay_state (active, changes) VALUES (NULL, 0)",
        """CREATE TABLE overlay_hosts (
            host text NOT NULL, pid integer NOT NULL, version integer, canary double precision,
            loaded_at timestamptz NOT NULL, seen_at timestamptz NOT NULL, PRIMARY KEY (host, pid))""",
    )


#: migrations.MIGRATIONS in PostgreSQL's types, under the same names, so both ledgers record the same list.
POSTGRES_MIGRATIONS: list[tuple[str, tuple[str, ...]]] = [
    ("m001_requests", (
        """CREATE TABLE requests (
            id text PRIMARY KEY, datetime_utc timestamptz NOT NULL, route text NOT NULL, reason text, aspect text,
            places jsonb, provider text, cache_hit boolean, stale boolean, model text, prompt_tokens integer,
            cached_tokens integer, completion_tokens integer, llm_attempts integer, cost_usd double precision,
            baseline_cost_usd double precision, baseline_method text, latency_ms double precision,
            outcome text NOT NULL, session_id text, query text, query_sha256 text)""",
        "CREATE INDEX requests_datetime ON requests (datetime_utc)",
    )),
    ("m002_agent_health", (
        "ALTER TABLE requests ADD COLUMN days integer, ADD COLUMN llm_loops integer, ADD COLUMN tool_calls integer,"
        " ADD COLUMN tool_failures integer",
    )),
    ("m003_shadow", ("ALTER TABLE requests ADD COLUMN agreement boolean",)),
    ("m004_misses", ("ALTER TABLE requests ADD COLUMN unknown_words jsonb, ADD COLUMN plain_lookup boolean",)),
    ("m005_privacy", (
        "ALTER TABLE requests ADD COLUMN query_hmac text, ADD COLUMN invalid jsonb",
        # The hashing secret, shared by every process and host that writes here (SQLite keeps it in a file).
        "CREATE TABLE _hybrid_weather_settings (name text PRIMARY KEY, value text NOT NULL)",
    )),
    ("m006_rollup", _rollup_statements()),
    ("m007_misses_rollup", _misses_statements()),
    ("m008_learning", ("ALTER TABLE requests ADD COLUMN lookup_date text, ADD COLUMN overlay_version integer",)),
    ("m009_feedback", (
        "CREATE TABLE feedback (request_id text PRIMARY KEY, verdict text NOT NULL, comment text,"
        " datetime_utc timestamptz NOT NULL)",
    )),
    ("m010_tenancy", _tenancy_statements()),
    ("m011_model_time", _model_time_statements()),
    ("m012_reason_code", ("ALTER TABLE requests ADD COLUMN reason_code text",)),
    ("m013_fleet_overlay", _fleet_overlay_statements()),
    ("m014_demo", _demo_statements()),
    ("m015_pending_feedback_once", _pending_feedback_once_statements()),
]  # fmt: skip


def migrate_postgres(db: psycopg.Connection[Any]) -> list[str]:
    """Apply the migrations not yet recorded, in order, in one transaction under an advisory lock (many
    processes may start at once); return their names."""
    applied = []
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (name text PRIMARY KEY, applied_at timestamptz NOT NULL)"
        )
        done = {row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")}
        for name, statements in POSTGRES_MIGRATIONS:
            if name in done:
                continue
            for statement in statements:
                db.execute(statement)  # our own text, not a user's
            db.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (%s, now())", (name,))
            applied.append(name)
    return applied


class _Watchdog:
    """Cuts a connection whose call outlives its deadline. A server that stops answering without closing —
    a hung host, a network that drops packets, a relay that swallows them — is not noticed by TCP while
    something at the other end still acknowledges: keepalives and tcp_user_timeout then wait for ever, and
    statement_timeout is the server's own. Cutting the socket (shutdown) makes the waiting call fail at
    once, as if the server had closed it. One thread, idle when nothing is watched."""

    def __init__(self) -> None:
        self._watched: dict[object, tuple[Any, float]] = {}  # a call → (its connection, its deadline)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def guard(self, db: psycopg.Connection[Any], seconds: float) -> Iterator[None]:
        """DB cut should the block take longer than SECONDS."""
        call = object()
        with self._lock:
            self._watched[call] = (db, time.monotonic() + seconds)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="hybrid-weather-ledger-watchdog", daemon=True)
                self._thread.start()
        self._wake.set()
        try:
            yield
        finally:
            with self._lock:  # not cut after this: the connection may be closed, its descriptor reused
                self._watched.pop(call, None)  # gone already if it was cut

    def _watch(self) -> None:
        while True:
            self._wake.clear()
            with self._lock:
                now = time.monotonic()
                for call, (db, deadline) in list(self._watched.items()):
                    if deadline <= now:
                        _cut(db)
                        del self._watched[call]
                deadlines = [deadline for _, deadline in self._watched.values()]
            self._wake.wait(min(deadlines) - now if deadlines else None)


def _cut(db: psycopg.Connection[Any]) -> None:
    """DB's socket shut down both ways: the call waiting on it fails (OperationalError), nothing else."""
    with contextlib.suppress(OSError, psycopg.Error, ValueError), socket.socket(fileno=os.dup(db.fileno())) as sock:
        sock.shutdown(socket.SHUT_RDWR)


class PostgresDatabase:
    """A PostgreSQL ledger at URL: created on first use, written with COPY by each process's writer."""

    #: What open() raises when the URL cannot hold a ledger, and what means the server is away (for now).
    unusable: tuple[type[BaseException], ...] = (psycopg.Error, OSError)
    away: tuple[type[BaseException], ...] = (psycopg.OperationalError,)
    #: Write errors worth another try on the same connection.
    retryable: tuple[type[BaseException], ...] = (
        errors.DeadlockDetected,
        errors.SerializationFailure,
        errors.LockNotAvailable,
    )
    replays = True

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redact(url)
        self._watchdog = _Watchdog()
        # How the connections show in pg_stat_activity: as the URL names them (?application_name=web-1, so
        # an operator tells a fleet's hosts apart), or as hybrid-weather.
        named = "application_name" in psycopg.conninfo.conninfo_to_dict(url)
        self._name: dict[str, Any] = {} if named else {"application_name": APPLICATION_NAME}

    def _connect(self, timeout_ms: int, *, connect_timeout: int = CONNECT_TIMEOUT) -> psycopg.Connection[Any]:
        db = psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=connect_timeout,
            **self._name,
            # Data the server does not acknowledge is given up in seconds, not the OS's fifteen minutes.
            tcp_user_timeout=WRITE_TIMEOUT_MS + 1_000,
            **KEEPALIVES,
        )
        try:
            with self.deadline(db, WRITE_TIMEOUT_MS):
                db.execute("SET TIME ZONE 'UTC'")  # timestamps read back as UTC, like SQLite's text
                db.execute(f"SET statement_timeout = {int(timeout_ms)}")
        except BaseException:
            db.close()
            raise
        return db

    def deadline(self, db: psycopg.Connection[Any], timeout_ms: int) -> contextlib.AbstractContextManager[None]:
        """DB cut from this side should the block outlast TIMEOUT_MS (its statement_timeout) and CUT_GRACE."""
        return self._watchdog.guard(db, timeout_ms / 1000 + CUT_GRACE)

    def ping(self) -> None:
        """Raises unless the server answers a query now (connect included: within CONNECT_TIMEOUT, then
        WRITE_TIMEOUT_MS)."""
        with self._connect(WRITE_TIMEOUT_MS) as db, self.deadline(db, WRITE_TIMEOUT_MS):
            db.execute("SELECT 1").fetchone()

    def open(self) -> bytes:
        """Create or migrate the schema; return the ledger's hashing secret (made by the first process)."""
        with self._connect(READ_TIMEOUT_MS) as db:
            migrate_postgres(db)
            db.execute(
                "INSERT INTO _hybrid_weather_settings VALUES ('hmac_secret', %s) ON CONFLICT DO NOTHING",
                (secrets.token_hex(32),),
            )
            row = db.execute("SELECT value FROM _hybrid_weather_settings WHERE name = 'hmac_secret'").fetchone()
            db.execute(f"SELECT {', '.join(COLUMNS)} FROM requests LIMIT 0")  # a foreign `requests` table
        assert row is not None
        return bytes.fromhex(row[0])

    def writer(self) -> psycopg.Connection[Any]:
        """A connection for the writer thread, with its staging table."""
        db = self._connect(WRITE_TIMEOUT_MS)
        try:
            with self.deadline(db, WRITE_TIMEOUT_MS):
                db.execute("CREATE TEMP TABLE incoming (LIKE requests) ON COMMIT DELETE ROWS")
        except BaseException:
            db.close()
            raise
        return db

    def connect(self, timeout_ms: int = READ_TIMEOUT_MS) -> psycopg.Connection[Any]:
        """A new read connection (for reports), its statements given TIMEOUT_MS."""
        return self._connect(timeout_ms)

    def write(
        self,
        db: psycopg.Connection[Any],
        rows: Sequence[tuple[object, ...]],
        *,
        once: bool = False,
        columns: tuple[str, ...] = COLUMNS,
    ) -> int:
        """ROWS (values of COLUMNS) stored in one transaction: COPY into the staging table, then one
        INSERT that skips ids already stored — so a batch retried after a lost acknowledgement, or replayed
        from the spool, never counts twice (ONCE is always so here). Returns how many were new."""
        names = ", ".join(columns)
        with self.deadline(db, WRITE_TIMEOUT_MS), db.transaction(), db.cursor() as cursor:
            with cursor.copy(f"COPY incoming ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(
                f"INSERT INTO requests ({names}) SELECT {names} FROM incoming ORDER BY id ON CONFLICT (id) DO NOTHING"
            )
            return cursor.rowcount

    def prune(self, db: psycopg.Connection[Any], before: dt.datetime) -> int:
        """Delete rows that arrived before BEFORE, in batches, by one process of the fleet at a time, and the
        questions `misses` keeps as examples of the hours before BEFORE's (the rollups keep their sums)."""
        deleted = 0
        while True:
            with self.deadline(db, WRITE_TIMEOUT_MS), db.transaction():
                locked = db.execute("SELECT pg_try_advisory_xact_lock(%s)", (_PRUNE_LOCK,)).fetchone()
                if not locked or not locked[0]:
                    return deleted
                cursor = db.execute(
                    "DELETE FROM requests WHERE id IN (SELECT id FROM requests WHERE datetime_utc < %s LIMIT %s)",
                    (before, _PRUNE_BATCH),
                )
            deleted += cursor.rowcount
            if cursor.rowcount < _PRUNE_BATCH:
                # The questions `misses` keeps as examples go with their rows (the hours before BEFORE's).
                with self.deadline(db, WRITE_TIMEOUT_MS):
                    db.execute(
                        "DELETE FROM misses_examples WHERE hour < date_trunc('hour', %s::timestamptz, 'UTC')", (before,)
                    )
                return deleted

    def count(self, db: psycopg.Connection[Any]) -> int:
        with self.deadline(db, READ_TIMEOUT_MS):
            row = db.execute("SELECT count(*) FROM requests").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        """Nothing to close: each connection belongs to the thread that opened it."""

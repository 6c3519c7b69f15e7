"""The ledger's schema as ordered, append-only migrations; each applied one is recorded by name.

A fix is a new migration, never an edit of one that has shipped. SQLite and PostgreSQL run migrations
of the same names, each in its own types (postgres.py holds PostgreSQL's), so either ledger says which
schema it holds the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .rollup import (
    EXAMPLES,
    LATENCY_BOUNDS_MS,
    MISSED,
    MODEL_LATENCY,
    MODEL_TIMED,
    ROLLUP_KEY,
    ROLLUP_SUMS,
    SQLITE,
    listed_words,
    misses_backfill,
)

MIGRATIONS_TABLE = "_hybrid_weather_migrations"
#: Seconds since 1970, now, in SQLite's SQL (unixepoch('subsec') needs SQLite 3.42).
SQLITE_NOW = "((julianday('now') - 2440587.5) * 86400.0)"


def m001_requests(db: sqlite3.Connection) -> None:
    db.execute("""
        CREATE TABLE requests (
            id TEXT PRIMARY KEY,          -- time-sortable: milliseconds since 1970 in hex, then random hex
            datetime_utc TEXT NOT NULL,   -- ISO 8601, when the request arrived
            route TEXT NOT NULL,          -- rule, clarify or llm
            reason TEXT,                  -- the router's reason, so a report can say why
            aspect TEXT,
            places TEXT,                  -- JSON list of canonical place names
            provider TEXT,                -- weather provider asked (NULL when none was)
            cache_hit INTEGER,
            stale INTEGER,
            model TEXT,                   -- LLM used (NULL for rule and clarify answers)
            prompt_tokens INTEGER,        -- includes cached_tokens (OpenAI's convention)
            cached_tokens INTEGER,
            completion_tokens INTEGER,
            llm_attempts INTEGER,         -- HTTP attempts to the LLM, retries included
            cost_usd REAL,                -- actual spend; NULL when the model's price is unknown
            baseline_cost_usd REAL,       -- estimated spend had an LLM answered (the all-LLM design)
            baseline_method TEXT,
            latency_ms REAL,
            outcome TEXT NOT NULL,        -- ok, or the error class that ended the request
            session_id TEXT,
            query TEXT,                   -- with phone, ID and e-mail masked; NULL when only hashed
            query_sha256 TEXT             -- to count repeats without keeping text
        )
    """)
    db.execute("CREATE INDEX requests_datetime ON requests(datetime_utc)")


def m002_agent_health(db: sqlite3.Connection) -> None:
    # What an agent's operators watch: loops per request and whether tool calls succeed.
    db.execute("ALTER TABLE requests ADD COLUMN days INTEGER")
    db.execute("ALTER TABLE requests ADD COLUMN llm_loops INTEGER")
    db.execute("ALTER TABLE requests ADD COLUMN tool_calls INTEGER")
    db.execute("ALTER TABLE requests ADD COLUMN tool_failures INTEGER")


def m003_shadow(db: sqlite3.Connection) -> None:
    # Shadow mode: a sample of rule-answered questions also goes through the LLM in the background, as
    # rows with route 'shadow'. Their cost is real spend; agreement says whether the LLM's answer matched
    # the rule answer (condition and temperatures): 1 yes, 0 no, NULL when the LLM gave no such facts.
    db.execute("ALTER TABLE requests ADD COLUMN agreement INTEGER")


def m004_misses(db: sqlite3.Connection) -> None:
    # What `hybrid-weather misses` reads. unknown_words: JSON list of the words that sent a question to the
    # LLM (unknown words or the open-ended marker), masked like the query. plain_lookup: 1 when the LLM
    # answered with weather-tool calls only, about one place and one set of days: a question the rules
    # could have answered, had they known those words.
    db.execute("ALTER TABLE requests ADD COLUMN unknown_words TEXT")
    db.execute("ALTER TABLE requests ADD COLUMN plain_lookup INTEGER")


def m005_privacy(db: sqlite3.Connection) -> None:
    # query_hmac replaces query_sha256 (left NULL from now on): an HMAC-SHA256 of the masked query under a
    # per-installation secret, because an unsalted hash of the raw query gave a phone number back to
    # anyone who hashed the ten billion candidates. invalid: JSON list of the fields that could not be
    # stored as sent (a negative cost, absurd token counts, text that is not Unicode): they are NULL, not facts.
    db.execute("ALTER TABLE requests ADD COLUMN query_hmac TEXT")
    db.execute("ALTER TABLE requests ADD COLUMN invalid TEXT")


def m006_rollup(db: sqlite3.Connection) -> None:
    # An hourly rollup kept by a trigger in the same transaction as each insert, so `savings` over a month
    # of a busy service reads a few thousand rows, not millions, and counts each stored row exactly once
    # (a replayed row the primary key ignores never fires it). Deleting old rows leaves it as it is.
    key, sums = ", ".join(ROLLUP_KEY), ", ".join(ROLLUP_SUMS)
    db.execute(f"""
        CREATE TABLE requests_hourly (
            hour TEXT NOT NULL, route TEXT NOT NULL, aspect TEXT NOT NULL, model TEXT NOT NULL,
            outcome TEXT NOT NULL, baseline_method TEXT NOT NULL, places INTEGER NOT NULL, llm_loops INTEGER NOT NULL,
            requests INTEGER NOT NULL, priced INTEGER NOT NULL, cost_usd REAL NOT NULL, baseline_cost_usd REAL NOT NULL,
            tool_calls INTEGER NOT NULL, tool_failures INTEGER NOT NULL, agreed INTEGER NOT NULL,
            judged INTEGER NOT NULL, invalid INTEGER NOT NULL,
            PRIMARY KEY ({key})
        )
    """)
    # Latency of answered requests per hour and route: how many fell at or below each bound `le`.
    db.execute("""
        CREATE TABLE latency_hourly (
            hour TEXT NOT NULL, route TEXT NOT NULL, le REAL NOT NULL, requests INTEGER NOT NULL,
            PRIMARY KEY (hour, route, le)
        )
    """)
    db.execute("CREATE TABLE latency_bounds (le REAL PRIMARY KEY)")
    db.executemany("INSERT INTO latency_bounds VALUES (?)", [(le,) for le in LATENCY_BOUNDS_MS])
    db.execute(_rollup_trigger())
    # Rows stored before this migration, rolled up once.
    old = SQLITE.row_values("r")
    db.execute(f"""
        INSERT INTO requests_hourly ({key}, {sums})
        SELECT {", ".join(old[c] for c in ROLLUP_KEY)}, {", ".join(f"sum({old[c]})" for c in ROLLUP_SUMS)}
        FROM requests AS r GROUP BY {", ".join(str(i) for i in range(1, len(ROLLUP_KEY) + 1))}
    """)
    db.execute(f"""
        INSERT INTO latency_hourly (hour, route, le, requests)
        SELECT {old["hour"]}, r.route, {SQLITE.latency_bucket("r")}, count(*) FROM requests AS r
        WHERE r.outcome = 'ok' GROUP BY 1, 2, 3
    """)


def _rollup_trigger(when: str = "") -> str:
    """m006's trigger: each row into the hourly rollup and, answered, its latency histogram; WHEN: which rows."""
    key, sums = ", ".join(ROLLUP_KEY), ", ".join(ROLLUP_SUMS)
    new = SQLITE.row_values("NEW")
    added = ", ".join(f"{column} = {column} + excluded.{column}" for column in ROLLUP_SUMS)
    return f"""
        CREATE TRIGGER requests_rollup AFTER INSERT ON requests {when and f"WHEN {when} "}BEGIN
            INSERT INTO requests_hourly ({key}, {sums}) VALUES ({", ".join(new.values())})
                ON CONFLICT ({key}) DO UPDATE SET {added};
            INSERT INTO latency_hourly (hour, route, le, requests)
                SELECT {new["hour"]}, NEW.route, {SQLITE.latency_bucket("NEW")}, 1 WHERE NEW.outcome = 'ok'
                ON CONFLICT (hour, route, le) DO UPDATE SET requests = requests + 1;
        END
    """


def m007_misses_rollup(db: sqlite3.Connection) -> None:
    # What `misses` reads, rolled up by hour like m006's, so a month of a busy service is read in well under
    # a second, not scanned row by row with each row's words (19 s at a million rows): the plain lookups
    # per hour, each of their words per hour, and each word's last EXAMPLES questions per hour. `priced`
    # counts the rows with a cost, so a sum of none stays "no cost" as SUM() says it. A word has no type:
    # it is kept as the JSON list held it. Rows pruned later leave their sums here.
    db.execute("""
        CREATE TABLE lookups_hourly (
            hour TEXT PRIMARY KEY, requests INTEGER NOT NULL, priced INTEGER NOT NULL, cost_usd REAL NOT NULL
        )
    """)
    db.execute("""
        CREATE TABLE misses_hourly (
            hour TEXT NOT NULL, word NOT NULL, requests INTEGER NOT NULL, priced INTEGER NOT NULL,
            cost_usd REAL NOT NULL, PRIMARY KEY (hour, word)
        )
    """)
    db.execute("""
        CREATE TABLE misses_examples (
            word NOT NULL, hour TEXT NOT NULL, query TEXT NOT NULL, last_id TEXT NOT NULL,
            PRIMARY KEY (hour, word, query)
        )
    """)
    # The shadow verdicts `misses` lists, newest first: a few among millions of rows.
    db.execute("CREATE INDEX requests_disagreements ON requests (id) WHERE route = 'shadow' AND agreement IS FALSE")
    db.execute(_misses_trigger(MISSED.format(r="NEW")))
    for statement in misses_backfill(SQLITE):  # the rows stored before this migration, rolled up once
        db.execute(statement)


def _misses_trigger(when: str) -> str:
    """m007's trigger: a plain lookup (WHEN) into the misses rollup, its words and its examples."""
    hour, words = SQLITE.row["hour"].format(r="NEW"), listed_words(SQLITE, "NEW")
    return f"""
        CREATE TRIGGER requests_misses AFTER INSERT ON requests WHEN {when} BEGIN
            INSERT INTO lookups_hourly (hour, requests, priced, cost_usd)
                VALUES ({hour}, 1, NEW.cost_usd IS NOT NULL, coalesce(NEW.cost_usd, 0.0))
                ON CONFLICT (hour) DO UPDATE SET requests = requests + 1, priced = priced + excluded.priced,
                    cost_usd = cost_usd + excluded.cost_usd;
            INSERT INTO misses_hourly (hour, word, requests, priced, cost_usd)
                SELECT {hour}, w.value, 1, NEW.cost_usd IS NOT NULL, coalesce(NEW.cost_usd, 0.0) FROM {words}
                WHERE true
                ON CONFLICT (hour, word) DO UPDATE SET requests = requests + 1, priced = priced + excluded.priced,
                    cost_usd = cost_usd + excluded.cost_usd;
            INSERT INTO misses_examples (word, hour, query, last_id)
                SELECT w.value, {hour}, NEW.query, NEW.id FROM {words} WHERE NEW.query IS NOT NULL
                ON CONFLICT (hour, word, query) DO UPDATE SET last_id = max(last_id, excluded.last_id);
            DELETE FROM misses_examples
                WHERE word IN (SELECT w.value FROM {words}) AND hour = {hour}
                AND last_id < (SELECT x.last_id FROM misses_examples AS x WHERE x.word = misses_examples.word
                               AND x.hour = misses_examples.hour ORDER BY x.last_id DESC LIMIT 1 OFFSET {EXAMPLES - 1});
        END
    """


def m008_learning(db: sqlite3.Connection) -> None:
    # What `learn` reads and `savings --by overlay` compares: the date a plain lookup's weather tools were
    # called with (its places are in `places`), and the overlay version each question was read through.
    db.execute("ALTER TABLE requests ADD COLUMN lookup_date TEXT")
    db.execute("ALTER TABLE requests ADD COLUMN overlay_version INTEGER")


def m009_feedback(db: sqlite3.Connection) -> None:
    # What users said of an answer (`hybrid-weather feedback ID wrong`, POST /v1/feedback): the last verdict
    # on each request, so `misses`, `savings` and the dashboard can show rule answers marked wrong.
    db.execute("""
        CREATE TABLE feedback (
            request_id TEXT PRIMARY KEY,  -- requests.id
            verdict TEXT NOT NULL,        -- wrong or right
            comment TEXT,                 -- personal data masked
            datetime_utc TEXT NOT NULL    -- when it was given
        )
    """)


def m010_tenancy(db: sqlite3.Connection) -> None:
    # caller: whose request a row is (serve with keys: "key:" and a prefix of the key's SHA-256, never the key),
    # so feedback, `misses`, `savings` and the dashboard show a key only its own; indexed for a key's window.
    # pending_feedback: a verdict that came before its row was stored (another worker's queue, the spool),
    # applied by the trigger as the row lands, if it lands by `expires` (seconds since 1970) and the verdict's
    # caller ('' for one who sees every row) is the row's; then it is gone either way.
    db.execute("ALTER TABLE requests ADD COLUMN caller TEXT")
    db.execute("CREATE INDEX requests_caller ON requests(caller, datetime_utc) WHERE caller IS NOT NULL")
    db.execute("""
        CREATE TABLE pending_feedback (
            request_id TEXT NOT NULL, caller TEXT NOT NULL, verdict TEXT NOT NULL, comment TEXT,
            datetime_utc TEXT NOT NULL, expires REAL NOT NULL, PRIMARY KEY (request_id, caller)
        )
    """)
    db.execute(f"""
        CREATE TRIGGER requests_pending_feedback AFTER INSERT ON requests
        WHEN EXISTS (SELECT 1 FROM pending_feedback WHERE request_id = NEW.id) BEGIN
            INSERT INTO feedback (request_id, verdict, comment, datetime_utc)
                SELECT request_id, verdict, comment, datetime_utc FROM pending_feedback
                WHERE request_id = NEW.id AND (caller = '' OR caller = NEW.caller) AND expires > {SQLITE_NOW}
                ORDER BY datetime_utc
                ON CONFLICT (request_id) DO UPDATE SET verdict = excluded.verdict, comment = excluded.comment,
                    datetime_utc = excluded.datetime_utc;
            DELETE FROM pending_feedback WHERE request_id = NEW.id;
        END
    """)


def m011_model_time(db: sqlite3.Connection) -> None:
    # model_ms: the model's own time within latency_ms (its calls, retries included; NULL where no model was
    # called), so `savings` tells a slow model from a slow answer: the first LLM answer of a process once
    # paid the client's import inside it, and latency_ms alone called that the model's. Its histogram per
    # hour and route is kept like latency_hourly's, on the same bounds. Rows before this have no model time.
    db.execute("ALTER TABLE requests ADD COLUMN model_ms REAL")
    db.execute("""
        CREATE TABLE model_latency_hourly (
            hour TEXT NOT NULL, route TEXT NOT NULL, le REAL NOT NULL, requests INTEGER NOT NULL,
            PRIMARY KEY (hour, route, le)
        )
    """)
    db.execute(_model_latency_trigger(MODEL_TIMED.format(r="NEW")))


def _model_latency_trigger(when: str) -> str:
    """m011's trigger: the model time of a row WHEN says has one into its histogram."""
    return f"""
        CREATE TRIGGER requests_model_latency AFTER INSERT ON requests WHEN {when} BEGIN
            INSERT INTO model_latency_hourly (hour, route, le, requests)
                SELECT {SQLITE.row["hour"].format(r="NEW")}, NEW.route, {MODEL_LATENCY.format(r="NEW")}, 1 WHERE true
                ON CONFLICT (hour, route, le) DO UPDATE SET requests = requests + 1;
        END
    """


def m012_reason_code(db: sqlite3.Connection) -> None:
    # reason_code: the rule that decided, as a short stable code (lookup, no_place, open_ended:advice,
    # correction, …) beside the prose reason, so a report groups by the rule without reading prose. The
    # router's own word, kept in hash mode too; NULL on rows before this.
    db.execute("ALTER TABLE requests ADD COLUMN reason_code TEXT")


def m013_fleet_overlay(db: sqlite3.Connection) -> None:
    # Nothing in SQLite: with a SQLite ledger the overlay stays in $HYBRID_WEATHER_HOME/overlay/ (one host's
    # files). The name is here so both ledgers record the same list; PostgreSQL's holds the fleet's overlay.
    del db


def m014_demo(db: sqlite3.Connection) -> None:
    # demo: 1 on the rows of a router that answers from the demo provider (synthetic weather, a trial's
    # traffic), so `savings`, `misses` and the dashboard leave them out unless asked: a dashboard saying
    # "saved 99.9 %" of synthetic traffic misleads. NULL on rows before this: they count as they did. The
    # rollups keep counting the other rows only (each trigger gains the condition), so a report reads them as
    # fast as before; the demo rows a report counts back, or says it left out, are found by a partial index.
    db.execute("ALTER TABLE requests ADD COLUMN demo INTEGER")
    db.execute(f"CREATE INDEX requests_demo ON requests (demo, datetime_utc) WHERE {SQLITE.demo.format(r='requests')}")
    counted = SQLITE.counted.format(r="NEW")
    for trigger in ("requests_rollup", "requests_misses", "requests_model_latency"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute(_rollup_trigger(counted))
    db.execute(_misses_trigger(f"{MISSED.format(r='NEW')} AND {counted}"))
    db.execute(_model_latency_trigger(f"{MODEL_TIMED.format(r='NEW')} AND {counted}"))


def m015_pending_feedback_once(db: sqlite3.Connection) -> None:
    # Nothing in SQLite: PostgreSQL's pending-feedback trigger could delete a verdict it had not applied (see
    # postgres_db); SQLite's runs under the one write lock, which no verdict commits beside. The name is here so
    # both ledgers record the same list.
    del db


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_requests,
    m002_agent_health,
    m003_shadow,
    m004_misses,
    m005_privacy,
    m006_rollup,
    m007_misses_rollup,
    m008_learning,
    m009_feedback,
    m010_tenancy,
    m011_model_time,
    m012_reason_code,
    m013_fleet_overlay,
    m014_demo,
    m015_pending_feedback_once,
]


def migrate(db: sqlite3.Connection, migrations: list[Callable[[sqlite3.Connection], None]] = MIGRATIONS) -> list[str]:
    """Apply the migrations not yet recorded, in order, each in its own transaction; return their names.

    DB must be in autocommit mode (isolation_level=None) so that BEGIN/COMMIT here cover the DDL too.
    """
    db.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")}
    applied = []
    for migration in migrations:
        if migration.__name__ in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            migration(db)
            db.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, datetime('now'))", (migration.__name__,))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        applied.append(migration.__name__)
    return applied

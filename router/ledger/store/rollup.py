"""The ledger's hourly rollup: what it keeps, how each SQL dialect computes it, and reading a window.

The rollup (per hour × route × aspect × model × outcome × baseline method × number of places × LLM
loops, and a latency histogram per hour × route) is kept by a trigger in the transaction of each insert
(migration m006), so `savings` over a month of a busy service reads a few thousand rows. A report
window rarely starts on the hour: the rows of its first, partial hour are aggregated from `requests`
with the same expressions, so the figures are those of the rows themselves.
"""

from __future__ import annotations

import datetime as dt
import math
import sqlite3
from collections import defaultdict
from typing import Any, NamedTuple

#: Upper bounds (ms) of the latency histogram: 5 % apart from 10 µs to past an hour, so a p50 or p95 read
#: from it is at most 5 % above the exact one. The last bound catches everything slower.
LATENCY_BOUNDS_MS = (*(round(0.01 * 1.05**i, 6) for i in range(404)), 1e300)
#: The rollup's key, with '' and -1 standing for NULL (a key column cannot be NULL); `places` is 1, 2 or 3
#: (three or more), the place bucket the baseline is estimated by.
ROLLUP_KEY = ("hour", "route", "aspect", "model", "outcome", "baseline_method", "places", "llm_loops")
#: Its sums; `priced` counts rows whose cost is known, `agreed` of `judged` shadow verdicts said yes.
ROLLUP_SUMS = (
    "requests",
    "priced",
    "cost_usd",
    "baseline_cost_usd",
    "tool_calls",
    "tool_failures",
    "agreed",
    "judged",
    "invalid",
)


class Dialect(NamedTuple):
    """How one SQL engine computes the rollup: each key and sum's value for one row named {r}."""

    row: dict[str, str]  #: ROLLUP_KEY and ROLLUP_SUMS → an expression over row {r}
    latency: str  #: the row's latency bucket: the smallest bound at or above its latency (NULL counts as 0)
    day_of_hour: str  #: the rollup's `hour` column as 'YYYY-MM-DD' (UTC)
    day_of_row: str  #: {r}.datetime_utc as 'YYYY-MM-DD' (UTC)
    words: str  #: a FROM item: each element of {r}.unknown_words (a JSON list) as w.value
    listed: str  #: {r}.unknown_words where the words FROM item can read it, else NULL (no words, no error)
    #: Row {r} is a demo provider's (m014), as its partial index reads it: the reports leave it out unless asked.
    demo: str
    counted: str  #: row {r} is not a demo provider's (NULL before m014): what the rollups count

    def row_values(self, r: str) -> dict[str, str]:
        return {column: value.format(r=r) for column, value in self.row.items()}

    def latency_bucket(self, r: str) -> str:
        return self.latency.format(r=r)


SQLITE = Dialect(
    row={
        "hour": "substr({r}.datetime_utc, 1, 13)",
        "route": "{r}.route",
        "aspect": "coalesce({r}.aspect, '')",
        "model": "coalesce({r}.model, '')",
        "outcome": "{r}.outcome",
        "baseline_method": "coalesce({r}.baseline_method, '')",
        "places": "CASE WHEN json_valid({r}.places) THEN min(max(json_array_length({r}.places), 1), 3) ELSE 1 END",
        "llm_loops": "coalesce({r}.llm_loops, -1)",
        "requests": "1",
        "priced": "{r}.cost_usd IS NOT NULL",
        "cost_usd": "coalesce({r}.cost_usd, 0.0)",
        "baseline_cost_usd": "coalesce({r}.baseline_cost_usd, 0.0)",
        "tool_calls": "coalesce({r}.tool_calls, 0)",
        "tool_failures": "coalesce({r}.tool_failures, 0)",
        "agreed": "coalesce({r}.agreement = 1, 0)",
        "judged": "{r}.agreement IS NOT NULL",
        "invalid": "{r}.invalid IS NOT NULL",
    },
    latency="(SELECT min(le) FROM latency_bounds WHERE le >= coalesce({r}.latency_ms, 0))",
    day_of_hour="substr(hour, 1, 10)",
    day_of_row="substr({r}.datetime_utc, 1, 10)",
    words="json_each({r}.unknown_words) AS w",
    listed="CASE WHEN json_valid({r}.unknown_words) THEN {r}.unknown_words END",
    # An equality, so the planner takes the index on (demo, datetime_utc) over the one on datetime_utc alone.
    demo="{r}.demo = 1",
    counted="{r}.demo IS NOT 1",
)

POSTGRES = Dialect(
    row={
        "hour": "date_trunc('hour', {r}.datetime_utc, 'UTC')",
        "route": "{r}.route",
        "aspect": "coalesce({r}.aspect, '')",
        "model": "coalesce({r}.model, '')",
        "outcome": "{r}.outcome",
        "baseline_method": "coalesce({r}.baseline_method, '')",
        "places": "CASE WHEN jsonb_typeof({r}.places) = 'array'"
        " THEN least(greatest(jsonb_array_length({r}.places), 1), 3) ELSE 1 END",
        "llm_loops": "coalesce({r}.llm_loops, -1)",
        "requests": "1",
        "priced": "({r}.cost_usd IS NOT NULL)::int",
        "cost_usd": "coalesce({r}.cost_usd, 0.0)",
        "baseline_cost_usd": "coalesce({r}.baseline_cost_usd, 0.0)",
        "tool_calls": "coalesce({r}.tool_calls, 0)",
        "tool_failures": "coalesce({r}.tool_failures, 0)",
        "agreed": "coalesce({r}.agreement, false)::int",
        "judged": "({r}.agreement IS NOT NULL)::int",
        "invalid": "({r}.invalid IS NOT NULL)::int",
    },
    latency="(SELECT min(le) FROM latency_bounds WHERE le >= coalesce({r}.latency_ms, 0))",
    day_of_hour="to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    day_of_row="to_char({r}.datetime_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    words="jsonb_array_elements_text({r}.unknown_words) AS w(value)",
    listed="CASE WHEN jsonb_typeof({r}.unknown_words) = 'array' THEN {r}.unknown_words END",
    demo="{r}.demo",
    counted="{r}.demo IS NOT TRUE",
)


#: A row's model time bucket (m011), on latency_bounds as its latency's: the same expression in both dialects.
MODEL_LATENCY = "(SELECT min(le) FROM latency_bounds WHERE le >= {r}.model_ms)"
#: The rows whose model time the histogram counts: answered, with a model's call in them.
MODEL_TIMED = "{r}.outcome = 'ok' AND {r}.model_ms IS NOT NULL"


#: The rows `misses` reads: LLM answers that were plain lookups (a question the rules could have answered).
MISSED = "{r}.route = 'llm' AND {r}.plain_lookup IS TRUE"
#: A report's feedback (f) on its requests (r), as FROM … WHERE that further conditions follow with AND:
#: feedback is a few rows, the window's requests can be millions. SQLite walks the left table of a CROSS JOIN
#: first and looks each request up by its key (an inner JOIN let it walk every request of the window by the
#: datetime index: 0.7–1.1 s over a million rows); PostgreSQL plans a CROSS JOIN with a WHERE as any join.
FEEDBACK_FIRST = "FROM feedback AS f CROSS JOIN requests AS r WHERE r.id = f.request_id"
#: Example questions `misses` shows per word: the last ones asked, each once.
EXAMPLES = 3


def listed_words(dialect: Dialect, r: str) -> str:
    """The dialect's FROM item of row R's words, reading only a list it can (a trigger must not fail a row)."""
    return dialect.words.format(r=r).replace(f"({r}.unknown_words)", f"({dialect.listed.format(r=r)})", 1)


def misses_backfill(dialect: Dialect) -> tuple[str, ...]:
    """The statements that roll up the rows a ledger already holds into the misses rollup (m007): per hour,
    the plain lookups (lookups_hourly) and each of their words (misses_hourly) with their count, priced
    count and cost, and each word's last EXAMPLES questions of the hour (misses_examples) — enough for the
    last EXAMPLES of any window, since a question among those is among the last of its own last hour."""
    hour, missed, words = dialect.row["hour"].format(r="r"), MISSED.format(r="r"), listed_words(dialect, "r")
    return (
        f"""INSERT INTO lookups_hourly (hour, requests, priced, cost_usd)
            SELECT {hour}, count(*), count(r.cost_usd), coalesce(sum(r.cost_usd), 0.0) FROM requests AS r
            WHERE {missed} GROUP BY 1""",
        f"""INSERT INTO misses_hourly (hour, word, requests, priced, cost_usd)
            SELECT {hour}, w.value, count(*), count(r.cost_usd), coalesce(sum(r.cost_usd), 0.0)
            FROM requests AS r, {words} WHERE {missed} GROUP BY 1, 2""",
        f"""INSERT INTO misses_examples (word, hour, query, last_id)
            SELECT word, hour, query, last_id FROM (
                SELECT w.value AS word, {hour} AS hour, r.query AS query, max(r.id) AS last_id,
                    row_number() OVER (PARTITION BY w.value, {hour} ORDER BY max(r.id) DESC) AS n
                FROM requests AS r, {words} WHERE {missed} AND r.query IS NOT NULL GROUP BY 1, 2, 3
            ) AS ranked WHERE n <= {EXAMPLES}""",
    )


def dialect_of(db: Any) -> Dialect:
    """SQLITE for a sqlite3 connection, POSTGRES for a psycopg one."""
    return SQLITE if isinstance(db, sqlite3.Connection) else POSTGRES


def execute(db: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """SQL (written with ? placeholders) run on a sqlite3 or psycopg connection; its cursor."""
    if isinstance(db, sqlite3.Connection):
        return db.execute(sql, params)
    return db.execute(sql.replace("%", "%%").replace("?", "%s"), params)


def query(db: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Rows of SQL (written with ? placeholders) on a sqlite3 or psycopg connection."""
    return execute(db, sql, params).fetchall()  # type: ignore[no-any-return]


def moment(db: Any, when: dt.datetime) -> Any:
    """WHEN as the ledger's column compares it: ISO 8601 text in SQLite, a timestamptz in PostgreSQL."""
    return when.isoformat(timespec="microseconds") if isinstance(db, sqlite3.Connection) else when


def iso(value: Any) -> str:
    """A datetime_utc read back, as ISO 8601 text whichever database it came from."""
    return value.isoformat(timespec="microseconds") if isinstance(value, dt.datetime) else str(value)


class Window(NamedTuple):
    """A report window's rows, aggregated: `groups` by day and the rollup's key (minus the hour), and the
    latency histograms of answered requests per route: the whole answer's, and the model's own time."""

    groups: list[dict[str, Any]]
    latency: dict[str, dict[float, int]]
    model_latency: dict[str, dict[float, int]]


_GROUP = ("day", *ROLLUP_KEY[1:])


#: Past every row: where the rollup's part of one caller's window starts (it has none: the rollup keeps no
#: caller), so all of it is read from the rows, by the index on (caller, datetime_utc).
_NEVER = dt.datetime(9999, 12, 31, tzinfo=dt.timezone.utc)


def of_caller(caller: str | None) -> str:
    """The condition (after another) that keeps CALLER's rows `r`: none for None; caller_params binds it."""
    return "" if caller is None else " AND r.caller = ?"


def caller_params(caller: str | None) -> tuple[str, ...]:
    return () if caller is None else (caller,)


def rows_of(dialect: Dialect, caller: str | None, demo: bool = False) -> tuple[str, str]:
    """The FROM item `r` and the condition on it that bind split_window's parameters: the rows of the partial
    hour but a demo provider's (m014), with DEMO every demo row of the window too (the rollups count none),
    found by their partial index; CALLER's, if given."""

    def partial(t: str) -> str:
        return f"{t}.datetime_utc >= ? AND {t}.datetime_utc < ? AND {dialect.counted.format(r=t)}"

    if not demo:
        return "requests AS r", partial("r") + of_caller(caller)
    demos = f"{dialect.demo.format(r='d')} AND d.datetime_utc >= ?"
    both = f"SELECT * FROM requests AS p WHERE {partial('p')} UNION ALL SELECT * FROM requests AS d WHERE {demos}"
    return f"({both}) AS r", "true" + of_caller(caller)


def split_window(
    db: Any, since: dt.datetime, caller: str | None = None, demo: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """A window from SINCE as a rollup reads it: the first whole hour (as the rollup's `hour` column holds
    it), and the parameters of rows_of(…, CALLER, DEMO): the bounds of the partial hour before it, read from
    the rows themselves, and with DEMO the window's start again. One CALLER's window is all read from its
    rows (the rollup's part starts past them)."""
    first_hour = since.replace(minute=0, second=0, microsecond=0)
    if first_hour < since:
        first_hour += dt.timedelta(hours=1)
    if caller is not None:
        first_hour = _NEVER
    hour: Any = first_hour.strftime("%Y-%m-%dT%H") if isinstance(db, sqlite3.Connection) else first_hour
    again = (moment(db, since),) if demo else ()
    return hour, (moment(db, since), moment(db, first_hour), *again, *caller_params(caller))


def demo_rows(db: Any, since: dt.datetime, caller: str | None = None) -> int:
    """How many of the rows that arrived at or after SINCE (CALLER's, if given) are a demo provider's: what a
    report leaves out unless asked, and says it did."""
    demo = dialect_of(db).demo.format(r="r")
    sql = f"SELECT count(*) FROM requests AS r WHERE {demo} AND r.datetime_utc >= ?{of_caller(caller)}"
    return int(query(db, sql, (moment(db, since), *caller_params(caller)))[0][0])


def not_demo(db: Any, demo: bool) -> str:
    """The condition (after another) that leaves a demo provider's rows `r` out, unless DEMO includes them."""
    return "" if demo else f" AND {dialect_of(db).counted.format(r='r')}"


def read_window(db: Any, since: dt.datetime, caller: str | None = None, demo: bool = False) -> Window:
    """The rows that arrived at or after SINCE (CALLER's, if given), a demo provider's only with DEMO,
    aggregated in SQL: whole hours from the rollup, the partial first hour (and demo rows) from the rows."""
    dialect = dialect_of(db)
    hour_param, bounds = split_window(db, since, caller, demo)
    row = dialect.row_values("r")
    keys = ", ".join(ROLLUP_KEY[1:])
    positions = ", ".join(str(i) for i in range(1, len(_GROUP) + 1))
    source, condition = rows_of(dialect, caller, demo)
    edge = (f"FROM {source} WHERE {condition}", bounds)
    groups = query(
        db,
        f"SELECT {dialect.day_of_hour}, {keys}, {', '.join(f'sum({c})' for c in ROLLUP_SUMS)}"
        f" FROM requests_hourly WHERE hour >= ? GROUP BY {positions}"
        f" UNION ALL SELECT {dialect.day_of_row.format(r='r')}, {', '.join(row[c] for c in ROLLUP_KEY[1:])},"
        f" {', '.join(f'sum({row[c]})' for c in ROLLUP_SUMS)} {edge[0]} GROUP BY {positions}",
        (hour_param, *edge[1]),
    )

    def histogram(table: str, bucket: str, counted: str) -> dict[str, dict[float, int]]:
        # A latency histogram per route: the rollup TABLE's whole hours, and the window's partial first hour
        # from the rows (their BUCKET, the rows COUNTED).
        found: dict[str, dict[float, int]] = defaultdict(lambda: defaultdict(int))
        for route, le, count in query(
            db,
            f"SELECT route, le, sum(requests) FROM {table} WHERE hour >= ? GROUP BY 1, 2"
            f" UNION ALL SELECT r.route, {bucket}, count(*) {edge[0]} AND {counted} GROUP BY 1, 2",
            (hour_param, *edge[1]),
        ):
            found[route][float(le)] += int(count)
        return found

    latency = histogram("latency_hourly", dialect.latency_bucket("r"), "r.outcome = 'ok'")
    model_latency = histogram("model_latency_hourly", MODEL_LATENCY.format(r="r"), MODEL_TIMED.format(r="r"))
    return Window(
        groups=[
            {
                **dict(zip(_GROUP, values[: len(_GROUP)], strict=True)),
                **{
                    c: float(v) if c.endswith("_usd") else int(v)
                    for c, v in zip(ROLLUP_SUMS, values[len(_GROUP) :], strict=True)
                },
            }
            for values in groups
        ],
        latency=latency,
        model_latency=model_latency,
    )


def percentile(histogram: dict[float, int], fraction: float) -> float | None:
    """The bound at or below which FRACTION of the requests fell (the bucket of the rank a sorted list
    would hold there), rounded up to the microsecond; None for no requests."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = min(total - 1, int(total * fraction))
    seen = 0
    for le in sorted(histogram):
        seen += histogram[le]
        if seen > rank:
            return math.ceil(le * 1000 - 1e-9) / 1000
    raise AssertionError("unreachable: the counts sum to total")

"""Benchmark `misses --days 30` over a month of a busy service (issue 36's bar: at most 1 s over 10 million
rows in PostgreSQL, and over 1 million in SQLite, on this machine).

    python tests/bench/bench_misses.py --backend sqlite [--rows 1000000] [--path FILE] [--runs 5] [--raw]
    python tests/bench/bench_misses.py --backend postgres [--rows 10000000] [--url postgresql://…] [--fresh]

Fills ROWS synthetic rows spread evenly over the last 30 days — a fifth of them LLM answers, half of those
plain lookups naming one or two of 300 words — in one statement per chunk (generate_series in PostgreSQL,
a recursive CTE in SQLite), through the ledger's own schema and triggers, so the rollup is built as the
writers build it. A PostgreSQL load is kept in the schema `hw_bench_misses` between runs (--fresh drops
it). Then times, each as the median of RUNS runs: the report in-process (misses_report over one
connection) and the whole `hybrid-weather misses --days 30 --json` command; with --raw, once, the query
over the raw rows the report used before its rollup, for contrast.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMA = "hw_bench_misses"
CHUNK = 500_000
WORDS = 300
SPAN_S = 30 * 86400 - 3600  # inside the window, whatever the minute the report runs
TARGETS = {"sqlite": (1.0, 1_000_000), "postgres": (1.0, 10_000_000)}

# Row n of TOTAL, at NOW (seconds since 1970) minus its share of the month. Shares: 72 % rule, 8 % clarify,
# 19 % llm (half of them plain lookups), 1 % shadow runs (a twentieth of them disagreeing).
_SQLITE_ROWS = """
WITH RECURSIVE g(n) AS (SELECT ?1 UNION ALL SELECT n + 1 FROM g WHERE n < ?2),
x AS (SELECT n, ?4 - n * ?5 / ?3 AS t,
             CASE WHEN n % 100 < 72 THEN 'rule' WHEN n % 100 < 80 THEN 'clarify' WHEN n % 100 < 99 THEN 'llm'
                  ELSE 'shadow' END AS route FROM g)
INSERT INTO requests (id, datetime_utc, route, reason, cost_usd, latency_ms, outcome, query, unknown_words,
                      plain_lookup, agreement)
SELECT printf('b%021d', n),
       strftime('%Y-%m-%dT%H:%M:%S', t, 'unixepoch')
           || printf('.%06d+00:00', CAST((t - CAST(t AS INTEGER)) * 1e6 AS INTEGER)),
       route, 'bench', CASE WHEN route = 'llm' THEN 0.0003 + (n % 7) * 0.00001 ELSE 0 END, 1.0, 'ok',
       CASE WHEN route = 'llm' THEN 'q' || (n % 5000) ELSE '上海今天天气' END,
       CASE WHEN route = 'llm' THEN CASE WHEN n % 3 = 0
            THEN json_array('w' || (n / 100 % ?6), 'w' || ((n / 100 * 7 + 3) % ?6))
            ELSE json_array('w' || (n / 100 % ?6)) END END,
       CASE WHEN route = 'llm' THEN n % 2 = 0 END, CASE WHEN route = 'shadow' THEN n % 20 <> 0 END
FROM x
"""

_POSTGRES_ROWS = """
INSERT INTO requests (id, datetime_utc, route, reason, cost_usd, latency_ms, outcome, query, unknown_words,
                      plain_lookup, agreement)
SELECT 'b' || lpad(n::text, 21, '0'), to_timestamp(%(now)s - n * %(span)s / %(total)s), route, 'bench',
       CASE WHEN route = 'llm' THEN 0.0003 + (n %% 7) * 0.00001 ELSE 0 END, 1.0, 'ok',
       CASE WHEN route = 'llm' THEN 'q' || (n %% 5000) ELSE '上海今天天气' END,
       CASE WHEN route = 'llm' THEN CASE WHEN n %% 3 = 0
            THEN jsonb_build_array('w' || (n / 100 %% %(words)s), 'w' || ((n / 100 * 7 + 3) %% %(words)s))
            ELSE jsonb_build_array('w' || (n / 100 %% %(words)s)) END END,
       CASE WHEN route = 'llm' THEN n %% 2 = 0 END, CASE WHEN route = 'shadow' THEN n %% 20 <> 0 END
FROM (SELECT n, CASE WHEN n %% 100 < 72 THEN 'rule' WHEN n %% 100 < 80 THEN 'clarify'
                     WHEN n %% 100 < 99 THEN 'llm' ELSE 'shadow' END AS route
      FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS n) AS x
"""

_RAW = """
SELECT w.value, COUNT(*), COALESCE(SUM(r.cost_usd), 0) FROM requests AS r, {words}
WHERE r.route = 'llm' AND r.plain_lookup IS TRUE AND r.datetime_utc >= ?
GROUP BY w.value ORDER BY COUNT(*) DESC, SUM(r.cost_usd) DESC, w.value
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=sorted(TARGETS), default="sqlite")
    parser.add_argument("--rows", type=int, default=None, help="default: 1,000,000 (sqlite), 10,000,000 (postgres)")
    parser.add_argument("--path", type=Path, default=None, help="the SQLite ledger (default: a temporary file)")
    parser.add_argument(
        "--url", default=os.environ.get("HYBRID_WEATHER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fresh", action="store_true", help="drop the PostgreSQL benchmark schema and load it again")
    parser.add_argument("--raw", action="store_true", help="also time the raw query once (slow: tens of seconds)")
    args = parser.parse_args()
    target_s, default_rows = TARGETS[args.backend]
    rows = args.rows or default_rows

    from hybrid_weather.router.ledger import Ledger, misses_report
    from hybrid_weather.router.ledger.store.rollup import dialect_of, moment, query

    location, db = _sqlite(args, rows) if args.backend == "sqlite" else _postgres(args, rows)
    Ledger(location).close()  # the schema, migrations and triggers, as any process makes them
    try:
        have = db.execute("SELECT count(*) FROM requests").fetchone()[0]
        if have < rows:
            print(f"loading {rows - have:,} rows (the rollup triggers run on each chunk) ...", flush=True)
            started = time.perf_counter()
            now = time.time()
            for first in range(have + 1, rows + 1, CHUNK):
                last = min(first + CHUNK - 1, rows)
                if args.backend == "sqlite":
                    db.execute(_SQLITE_ROWS, (first, last, rows, now, SPAN_S, WORDS))
                else:
                    db.execute(_POSTGRES_ROWS, {"first": first, "last": last, "total": rows, "now": now,
                                                "span": SPAN_S, "words": WORDS})  # fmt: skip
            db.execute("ANALYZE" if args.backend == "sqlite" else "VACUUM ANALYZE")
            print(f"loaded in {time.perf_counter() - started:.0f} s", flush=True)
        stored = db.execute("SELECT count(*) FROM requests").fetchone()[0]
        rollup = db.execute("SELECT count(*), sum(requests) FROM misses_hourly").fetchone()
        print(f"rows: {stored:,}; misses rollup: {rollup[0]:,} rows holding {rollup[1]:,} words of plain lookups")

        report_s = _timed(lambda: misses_report(db, 30), args.runs)
        report = misses_report(db, 30)
        raw_s = None
        if args.raw:
            since = moment(db, dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=30))
            raw_s = _timed(lambda: query(db, _RAW.format(words=dialect_of(db).words.format(r="r")), (since,)), 1)
    finally:
        db.close()
    env = {**os.environ, "HYBRID_WEATHER_LEDGER": location}
    command = [sys.executable, "-m", "hybrid_weather.router", "misses", "--days", "30", "--json"]
    cli_s = _timed(lambda: subprocess.run(command, env=env, check=True, capture_output=True), args.runs)
    print(f"misses --days 30 over {report['plain_lookups']:,} plain lookups, {len(report['words'])} words:")
    print(f"  misses_report(), in-process        {1000 * report_s:8.1f} ms  (median of {args.runs})")
    print(f"  hybrid-weather misses --json, CLI  {1000 * cli_s:8.1f} ms  (whole process)")
    if raw_s is not None:
        print(f"  words alone, over the raw rows     {1000 * raw_s:8.1f} ms  (the query before the rollup)")
    if args.backend == "sqlite" and args.path is None:  # a temporary ledger: not left behind
        import shutil

        shutil.rmtree(Path(location).parent, ignore_errors=True)
    verdict = "met" if cli_s <= target_s else "MISSED"
    print(f"target: <= {target_s:.0f} s for the command over {rows:,} rows ({args.backend}) -> {verdict}")
    print(f"load: {os.getloadavg()[0]:.2f} (1-min), {os.cpu_count()} cores")


def _sqlite(args: Any, rows: int) -> tuple[str, Any]:
    import sqlite3

    path = args.path or Path(tempfile.mkdtemp(prefix="hw-bench-misses-")) / "ledger.db"
    from hybrid_weather.router.ledger import Ledger

    Ledger(path).close()
    return str(path), sqlite3.connect(path, isolation_level=None)


def _postgres(args: Any, rows: int) -> tuple[str, Any]:
    import psycopg

    url = f"{args.url}{'&' if '?' in args.url else '?'}options=-csearch_path%3D{SCHEMA}"
    with psycopg.connect(args.url, autocommit=True) as admin:
        if args.fresh:
            admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        admin.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    from hybrid_weather.router.ledger import Ledger

    Ledger(url).close()
    db = psycopg.connect(url, autocommit=True)
    db.execute("SET TIME ZONE 'UTC'")
    return url, db


def _timed(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


if __name__ == "__main__":
    main()

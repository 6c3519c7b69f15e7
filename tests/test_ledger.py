"""The cost ledger: rows, migrations, batching under load, crash safety, prices and the savings report."""

import datetime as dt
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_weather.agent.llm import ModelTable, Usage
from hybrid_weather.router import HybridRouter, LLMUnavailable
from hybrid_weather.router.cli import cli
from hybrid_weather.router.ledger import MIGRATIONS, Ledger, LedgerEntry, mask_personal_data, migrate, savings_report

from support import entries_of_every_kind

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def count(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM requests").fetchone()[0]


# -- prices ------------------------------------------------------------------------------------------


def test_prices_with_cached_tokens():
    table = ModelTable()
    # gpt-4o-mini: $0.15 in, $0.075 cached in, $0.60 out per 1M tokens.
    usage = Usage(prompt_tokens=10_000, cached_tokens=4_000, completion_tokens=1_000)
    assert table.cost("gpt-4o-mini", usage) == pytest.approx((6_000 * 0.15 + 4_000 * 0.075 + 1_000 * 0.60) / 1e6)
    # deepseek-v4-flash: cache hits at $0.0028, misses at $0.14.
    assert table.cost("deepseek-v4-flash", Usage(1_000, 800, 100)) == pytest.approx(
        (200 * 0.14 + 800 * 0.0028 + 100 * 0.28) / 1e6
    )


def test_unknown_model_cost_is_unknown_not_zero(caplog):
    with caplog.at_level(logging.WARNING, logger="hybrid_weather"):
        assert ModelTable().cost("my-local-llama", Usage(100, 0, 10)) is None
    assert "my-local-llama" in caplog.text


def test_user_price_override(tmp_path):
    override = tmp_path / "models.json"
    override.write_text(
        json.dumps(
            {"models": {"my-local-llama": {"input": 0, "cached_input": 0, "output": 0}, "gpt-4o-mini": {"input": 1.0}}}
        )
    )
    table = ModelTable(override)
    assert table.cost("my-local-llama", Usage(100, 0, 10)) == 0.0
    assert table.cost("gpt-4o-mini", Usage(1_000_000, 0, 0)) == pytest.approx(1.0)


# -- rows ----------------------------------------------------------------------------------------------


def test_masking():
    text = "提醒13812345678和+86 13912345678，身份证11010519491231002X，邮件 a.b+c@example.com.cn 上海天气"
    assert mask_personal_data(text) == "提醒[phone]和[phone]，身份证[id]，邮件 [email] 上海天气"


def test_ask_writes_one_complete_row(tmp_path):
    path = tmp_path / "ledger.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        router.ask("魔都明天会下雨吗")
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        (row,) = db.execute("SELECT * FROM requests").fetchall()
    assert row["route"] == "rule" and row["aspect"] == "rain" and json.loads(row["places"]) == ["上海市"]
    assert row["provider"] == "demo" and row["outcome"] == "ok" and row["cost_usd"] == 0.0
    assert row["baseline_cost_usd"] > 0 and row["baseline_method"].startswith("default:")
    assert row["query"] == "魔都明天会下雨吗"
    assert len(row["id"]) == 22 and row["datetime_utc"].endswith("+00:00")


def test_the_recorder_builds_the_entry_its_fields_name(tmp_path):
    """Each value of an answer lands in the field that names it, for rule, clarify and LLM-bound answers, with
    and without a session."""
    from hybrid_weather.router.ledger import Recorder

    class Kept:
        def __init__(self):
            self.entries = []

        def record(self, entry):
            self.entries.append(entry)

    kept = Kept()
    recorder = Recorder(kept)
    with HybridRouter(provider="demo", ledger="off") as router:
        questions = [("魔都明天会下雨吗", None), ("北京和上海明天哪个冷", "s-1"), ("天气", "s-2"), ("", None)]
        for query, session_id in questions:
            answer = router.ask(query)
            request_id = recorder.answered(query, answer, arrived=1234.5, session_id=session_id)
            decision = answer.decision
            expected = LedgerEntry(
                started_at=1234.5, route=answer.route, query=query, reason=decision.reason, aspect=decision.aspect,
                places=tuple(decision.cities), days=len(decision.dates), provider=answer.source,
                cache_hit=answer.cache_hit, stale=answer.stale, cost_usd=answer.cost_usd,
                latency_ms=answer.latency_ms, model=answer.model, session_id=session_id,
                unknown_words=decision.unknown_words, outcome="empty" if decision.is_empty else "ok",
                request_id=request_id, reason_code=decision.reason_code,
            )  # fmt: skip
            assert kept.entries[-1]._asdict() == expected._asdict()
            # The id the answer carries: the arrival's milliseconds, then 40 random bits.
            assert re.fullmatch(r"00000012d644[0-9a-f]{10}", request_id), request_id
    assert {entry.route for entry in kept.entries} >= {"rule", "clarify"}


def test_hash_only_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_WEATHER_LEDGER_QUERIES", "hash")
    path = tmp_path / "ledger.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        router.ask("上海今天天气")
    with sqlite3.connect(path) as db:
        query, digest = db.execute("SELECT query, query_hmac FROM requests").fetchone()
    assert query is None and len(digest) == 64


def test_failed_requests_are_recorded_too(tmp_path):
    path = tmp_path / "ledger.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router, pytest.raises(LLMUnavailable):
        router.ask("北京明天适合出游吗？不行就打13812345678告诉我")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT route, outcome, query FROM requests").fetchall() == [
            ("llm", "LLMUnavailable", "北京明天适合出游吗？不行就打[phone]告诉我")
        ]


def test_memory_and_off():
    with HybridRouter(provider="demo", ledger=":memory:") as router:
        router.ask("上海今天天气")
        router.ledger.flush()
        db = router.ledger.connect()
        assert db.execute("SELECT count(*) FROM requests").fetchone()[0] == 1
        db.close()
    with HybridRouter(provider="demo", ledger="off") as router:
        router.ask("上海今天天气")
        assert router.ledger is None


def test_ids_sort_by_time(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    for i in range(50):
        ledger.record(LedgerEntry(started_at=1_700_000_000 + i, route="rule", query=str(i)))
    ledger.close()
    with sqlite3.connect(tmp_path / "l.db") as db:
        assert [r[0] for r in db.execute("SELECT query FROM requests ORDER BY id")] == [str(i) for i in range(50)]


@pytest.mark.parametrize("way", ["written", "spooled and written back"])
def test_entries_of_every_kind_in_one_batch_store_every_column(tmp_path, way):
    # Rule rows omit the columns only LLM, failed or session requests fill; a batch that mixes them must
    # still store each row's every column, straight away or by way of the spool.
    entries, expected = entries_of_every_kind(time.time())
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    if way != "written":
        blocker.execute("BEGIN EXCLUSIVE")  # the database is away: the batch goes to the spool
    for entry in entries:
        ledger.record(entry)
    ledger.close()
    if way != "written":
        blocker.execute("ROLLBACK")
        assert count(path) == 0
        Ledger(path).close()  # written back
    blocker.close()
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        stored = {row["query"]: dict(row) for row in db.execute("SELECT * FROM requests")}
    assert sorted(stored) == sorted(expected)
    for query, columns in expected.items():
        assert {name: stored[query][name] for name in columns} == columns, query
        assert stored[query]["route"] in {"rule", "llm"} and stored[query]["datetime_utc"].endswith("+00:00")


# -- load, crash, migration --------------------------------------------------------------------------


def test_8_threads_5000_asks_each_lose_no_row(tmp_path):
    path = tmp_path / "ledger.db"
    router = HybridRouter(provider="demo", ledger=str(path))
    router.route("上海今天天气")
    queries = ["上海今天天气", "魔都明天会下雨吗", "北京和上海明天哪个冷", "明天会下雨吗"]

    def work(n):
        for i in range(5_000):
            router.ask(queries[(n + i) % len(queries)])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    router.close()
    assert count(path) == 40_000


def test_a_small_queue_makes_callers_wait_not_drop(tmp_path):
    ledger = Ledger(tmp_path / "l.db", queue_size=2, batch_size=1)
    for i in range(300):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query=str(i)))
    ledger.close()
    assert count(tmp_path / "l.db") == 300


_WRITER = """
import sys, time
from hybrid_weather.router.ledger import Ledger, LedgerEntry
ledger = Ledger(sys.argv[1], batch_size=50)
n = 0
while True:
    for _ in range(100):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query=f"q{n}"))
        n += 1
    ledger.flush()
    print(n, flush=True)
"""


def test_sigkill_keeps_every_committed_row(tmp_path):
    path = tmp_path / "ledger.db"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    committed = 0
    while committed < 3_000:
        committed = int(writer.stdout.readline())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert rows >= committed  # everything flushed before the kill is there (and maybe a batch more)
    ledger = Ledger(path)  # and it opens, recovers the WAL and takes new rows
    ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="after"))
    ledger.close()
    assert count(path) == rows + 1


def test_a_ledger_from_an_older_schema_migrates(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, MIGRATIONS[:1])  # as the first release left it
    db.execute(
        "INSERT INTO requests (id, datetime_utc, route, outcome, cost_usd, baseline_cost_usd, query) "
        "VALUES ('0001', '2026-11-28T00:00:00+00:00', 'rule', 'ok', 0.0, 0.0001, '上海今天天气')"
    )
    db.close()
    ledger = Ledger(path)
    ledger.record(
        LedgerEntry(started_at=time.time(), route="llm", query="x", llm_loops=2, tool_calls=1, tool_failures=0)
    )
    ledger.close()
    with sqlite3.connect(path) as db:
        assert (
            [r[0] for r in db.execute("SELECT name FROM _hybrid_weather_migrations ORDER BY name")]
            == [m.__name__ for m in MIGRATIONS]
            == [
                "m001_requests",
                "m002_agent_health",
                "m003_shadow",
                "m004_misses",
                "m005_privacy",
                "m006_rollup",
                "m007_misses_rollup",
                "m008_learning",
                "m009_feedback",
                "m010_tenancy",
                "m011_model_time",
                "m012_reason_code",
                "m013_fleet_overlay",
                "m014_demo",
                "m015_pending_feedback_once",
            ]
        )
        # The row stored before the rollup existed is in it once, beside the one written after.
        hours = db.execute("SELECT hour, route, requests, baseline_cost_usd FROM requests_hourly ORDER BY hour")
        assert hours.fetchall()[0] == ("2026-11-28T00", "rule", 1, 0.0001)
        assert db.execute("SELECT sum(requests) FROM requests_hourly").fetchone()[0] == 2
        assert db.execute("SELECT query, llm_loops FROM requests ORDER BY id").fetchall() == [
            ("上海今天天气", None),
            ("x", 2),
        ]


# -- the savings report ------------------------------------------------------------------------------


def _fixture_ledger(tmp_path, llm_answers=3):
    ledger = Ledger(tmp_path / "fixture.db", model="gpt-4o-mini")
    start = NOW.timestamp() - 3600
    for i in range(6):  # rule answers about one place: baseline 500 tokens (425 in, 75 out) on gpt-4o-mini
        ledger.record(
            LedgerEntry(
                started_at=start + i,
                route="rule",
                query="q",
                places=("上海市",),
                days=1,
                latency_ms=1.0 + i,
                provider="open-meteo",
            )
        )
    ledger.record(LedgerEntry(started_at=start + 10, route="clarify", query="q", latency_ms=0.5))
    for i in range(llm_answers):  # LLM answers with known usage
        ledger.record(
            LedgerEntry(
                started_at=start + 20 + i,
                route="llm",
                query="q",
                model="gpt-4o-mini",
                usage=Usage(1_000, 200, 100),
                cost_usd=ModelTable().cost("gpt-4o-mini", Usage(1_000, 200, 100)),
                latency_ms=800.0,
                llm_loops=2,
                tool_calls=2,
                tool_failures=1 if i == 0 else 0,
                places=("北京市",),
            )
        )
    ledger.record(LedgerEntry(started_at=NOW.timestamp() - 40 * 86400, route="rule", query="too old"))
    ledger.close()
    db = sqlite3.connect(tmp_path / "fixture.db")
    db.row_factory = sqlite3.Row
    return db


def test_savings_arithmetic_with_the_default_baseline(tmp_path):
    report = savings_report(_fixture_ledger(tmp_path), 30, now=NOW)
    llm_cost = (800 * 0.15 + 200 * 0.075 + 100 * 0.60) / 1e6
    one_place = (425 * 0.15 + 75 * 0.60) / 1e6
    assert report["requests"] == 10 and report["by_route"] == {"rule": 6, "clarify": 1, "llm": 3}
    assert report["actual_cost_usd"] == pytest.approx(3 * llm_cost)
    assert report["baseline_cost_usd"] == pytest.approx(7 * one_place + 3 * llm_cost)
    assert report["saved_usd"] == pytest.approx(7 * one_place)
    assert report["saved_pct"] == pytest.approx(round(100 * 7 * one_place / (7 * one_place + 3 * llm_cost), 2))
    # Read from the rollup's histogram: the upper bound of each value's bucket, at most 5 % above it.
    latency = report["latency_ms"]["rule"]
    assert 4.0 <= latency["p50"] <= 4.2 and 6.0 <= latency["p95"] <= 6.3
    assert report["baseline_method"].startswith("default:") and report["baseline_sample"] == 3
    assert report["llm_loops"] == {"2": 3} and report["tool_success_rate"] == pytest.approx(5 / 6, abs=1e-4)


def test_savings_baseline_from_the_ledgers_own_llm_answers(tmp_path):
    report = savings_report(_fixture_ledger(tmp_path, llm_answers=25), 30, now=NOW)
    llm_cost = (800 * 0.15 + 200 * 0.075 + 100 * 0.60) / 1e6
    # Enough LLM answers: every request's baseline is the mean LLM cost for its number of places.
    assert report["baseline_cost_usd"] == pytest.approx(32 * llm_cost)
    assert report["baseline_method"].startswith("ledger:") and report["baseline_sample"] == 25


def test_savings_cli_empty_and_full(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_WEATHER_LEDGER", str(tmp_path / "cli.db"))
    result = CliRunner().invoke(cli, ["savings"], catch_exceptions=False)
    assert result.exit_code == 0 and "No requests in the last 30 days" in result.output
    for query in ("上海今天天气", "北京和上海明天哪个冷", "明天会下雨吗"):
        assert CliRunner().invoke(cli, [query, "--provider", "demo"], catch_exceptions=False).exit_code == 0
    result = CliRunner().invoke(cli, ["savings", "--days", "30", "--json", "--include-demo"], catch_exceptions=False)
    report = json.loads(result.output)
    assert report["requests"] == 3 and report["by_route"] == {"rule": 2, "clarify": 1, "llm": 0}
    for key in (
        "days",
        "requests",
        "by_route",
        "actual_cost_usd",
        "baseline_cost_usd",
        "saved_usd",
        "saved_pct",
        "latency_ms",
        "baseline_method",
    ):
        assert key in report
    text = CliRunner().invoke(cli, ["savings", "--by", "route", "--include-demo"], catch_exceptions=False).output
    assert "Saved" in text and "rule" in text and ("█" in text or "░" in text)
    # Without --include-demo, the demo provider's answers are left out, and the report says so.
    text = CliRunner().invoke(cli, ["savings"], catch_exceptions=False).output
    assert "No requests in the last 30 days" in text and "but 3 answered from synthetic demo weather" in text


def test_simulate(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("上海今天天气\n北京明天适合出游吗\n\n北京和上海明天哪个冷\n明天会下雨吗\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["simulate", str(log), "--model", "gpt-4o-mini", "--per-day", "1000", "--json"], catch_exceptions=False
    )
    projection = json.loads(result.output)
    one, two = (425 * 0.15 + 75 * 0.60) / 1e6, (1275 * 0.15 + 225 * 0.60) / 1e6
    assert projection["by_route"] == {"rule": 2, "clarify": 1, "llm": 1}
    assert projection["daily_all_llm_usd"] == pytest.approx(round(250 * (one + one + two + one), 6))
    assert projection["daily_hybrid_usd"] == pytest.approx(round(250 * one, 6))
    bad = CliRunner().invoke(cli, ["simulate", str(log), "--model", "nope"])
    assert bad.exit_code == 2 and "no price" in bad.output


# -- the rollup and retention ------------------------------------------------------------------------


def test_the_rollup_counts_what_the_rows_count_and_outlives_their_deletion(tmp_path):
    path = tmp_path / "kept.db"
    ledger = Ledger(path, model="gpt-4o-mini")
    now = time.time()
    for i in range(50):  # 20 days of rows, some of them older than the ledger keeps
        ledger.record(LedgerEntry(started_at=now - i * 0.4 * 86400, route="rule", query=f"q{i}", places=("上海市",),
                                  latency_ms=1.0 + i % 5))  # fmt: skip
    ledger.close()
    db = sqlite3.connect(path)
    whole = savings_report(db, 30)
    by_rows = db.execute("SELECT count(*), sum(baseline_cost_usd) FROM requests").fetchone()
    assert whole["requests"] == by_rows[0] == 50
    assert whole["baseline_cost_usd"] == pytest.approx(by_rows[1])
    db.close()
    pruning = Ledger(path, model="gpt-4o-mini", keep_days=7)
    pruning.flush()  # the writer deletes rows older than 7 days when it starts, then hourly
    pruning.close()
    db = sqlite3.connect(path)
    left = db.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert left == sum(1 for i in range(50) if i * 0.4 < 7)  # the older rows are gone...
    after = savings_report(db, 30)
    assert after["requests"] == 50 and after["baseline_cost_usd"] == whole["baseline_cost_usd"]  # ...not their sums
    assert after["latency_ms"] == whole["latency_ms"]
    db.close()


def test_a_window_that_starts_mid_hour_counts_the_rows_of_that_hour_from_the_rows(tmp_path):
    path = tmp_path / "edge.db"
    ledger = Ledger(path)
    now = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
    since = now - dt.timedelta(days=1)  # 2026-11-29T12:00 — shifted to mid-hour below
    for minutes in (-20, -10, 5, 15, 25, 70):  # around 12:12 the day before
        at = since + dt.timedelta(minutes=12 + minutes)
        ledger.record(LedgerEntry(started_at=at.timestamp(), route="rule", query="q"))
    ledger.close()
    db = sqlite3.connect(path)
    report = savings_report(db, 1, now=now + dt.timedelta(minutes=12))
    assert report["requests"] == 4  # the rows at or after 12:12, not the hour's other two
    db.close()


@pytest.mark.parametrize("value", ["0", "-3", "soon"])
def test_a_keep_days_that_is_not_one_is_a_configuration_error(value, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", "--provider", "demo", "上海今天天气"],
        capture_output=True, text=True, env={**os.environ, "HYBRID_WEATHER_LEDGER_KEEP_DAYS": value},
    )  # fmt: skip
    assert result.returncode == 2 and "HYBRID_WEATHER_LEDGER_KEEP_DAYS" in result.stderr
    assert "Traceback" not in result.stderr


def test_row_ids_stay_unique_when_the_program_seeds_random_and_after_a_fork():
    # Ids are time (ms) + 40 random bits; a program that seeds the global generator (tests do) or forks must
    # not make two rows of one millisecond share an id: the replay would skip the second as already stored.
    import random

    from hybrid_weather.router.ledger.store.rows import RowFormat

    row_format = RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries="masked", secret=b"k" * 32)
    entry = LedgerEntry(started_at=1_764_460_800.0, route="rule", query="上海今天天气")
    ids = set()
    for _ in range(50):
        random.seed(42)
        ids.add(row_format.row(entry)[0])
    assert len(ids) == 50
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child formats with the same RowFormat it inherited
        os.write(writer, row_format.row(entry)[0].encode())
        os._exit(0)
    os.waitpid(child, 0)
    assert os.read(reader, 100).decode() != row_format.row(entry)[0]


def test_a_row_keeps_its_answers_id_and_one_made_here_sorts_by_time():
    from hybrid_weather.router.ledger.store.rows import RowFormat

    made = RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries="masked", secret=b"k" * 32)
    started = 1_764_600_000.123456
    ids = [row.id for row in made.rows([LedgerEntry(started_at=started, route="rule", query="q")] * 10_000)]
    assert len(set(ids)) == 10_000 and {row_id[:12] for row_id in ids} == {f"{int(started * 1000):012x}"}
    later = [made.row(LedgerEntry(started_at=started + n / 100, route="rule", query="q")).id for n in range(50)]
    assert later == sorted(later) and len(set(later)) == 50
    given = LedgerEntry(started_at=started, route="rule", query="q", request_id="0193a1b2c3d4e5f6a7b8c9")
    assert made.row(given).id == "0193a1b2c3d4e5f6a7b8c9"


def test_a_new_secret_hashes_questions_under_it_not_the_old_one():
    from hybrid_weather.router.ledger.store.rows import RowFormat

    made = RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries="masked", secret=b"k" * 32)
    entry = LedgerEntry(started_at=1_764_600_000.0, route="rule", query="上海今天天气")
    before = made.row(entry).query_hmac
    made.secret = b"j" * 32
    fresh = RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries="masked", secret=b"j" * 32)
    assert before != made.row(entry).query_hmac == fresh.row(entry).query_hmac


def test_values_no_request_can_have_are_stored_as_faults_not_as_they_came(tmp_path):
    # What a program's own entry (or a fault) may carry: each row is stored all the same, the fault NULL.
    from hybrid_weather.router.ledger.store.rows import RowFormat
    from hybrid_weather.router.ledger.store.sqlite_db import SQLiteDatabase

    made = RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries="masked", secret=b"k" * 32)
    started = 1_764_600_000.5

    def rule(query: str = "上海今天天气", **fields: object) -> LedgerEntry:
        return LedgerEntry(**{"started_at": started, "route": "rule", "query": query, **fields})  # type: ignore[arg-type]

    entries = {
        "nan-latency": rule("nan-latency", latency_ms=float("nan")),
        "inf-latency": rule("inf-latency", latency_ms=float("inf")),
        "nan-time": rule("nan-time", started_at=float("nan")),
        "nan-cost": rule("nan-cost", cost_usd=float("nan")),
        "nul": rule("nul\x00"),
        "list": rule("list", places=["上海市"]),
        "phone": rule("电话13812345678明天天气"),
    }
    database = SQLiteDatabase(str(tmp_path / "l.db"))
    database.open()
    db = database.writer()
    assert database.write(db, made.rows(list(entries.values()))) == len(entries)
    db.row_factory = sqlite3.Row
    stored = {row["hmac_of"]: row for row in db.execute("SELECT *, query_hmac AS hmac_of FROM requests")}
    by_query = {made.row(entry).query_hmac: name for name, entry in entries.items()}
    rows = {by_query[key]: row for key, row in stored.items()}
    assert rows["nan-latency"]["latency_ms"] is None and rows["inf-latency"]["latency_ms"] is None
    assert rows["nan-time"]["datetime_utc"] == "1970-01-01T00:00:00.000000+00:00"
    assert rows["nan-cost"]["cost_usd"] is None and json.loads(rows["nan-cost"]["invalid"]) == ["cost_usd"]
    assert rows["nul"]["query"] == "nul\ufffd" and "query:repaired" in rows["nul"]["invalid"]
    assert rows["list"]["places"] == '["上海市"]'
    assert "13812345678" not in rows["phone"]["query"]
    assert rows["nan-latency"]["datetime_utc"] == "2025-12-01T14:40:00.500000+00:00"
    database.close()


@settings(max_examples=2_000)
@given(
    st.floats(min_value=-1e9, max_value=4.2e9)
    | st.builds(lambda second, tail: second + tail, st.integers(0, 4_200_000_000),
                st.sampled_from([0.0, 0.5, 0.4999995, 0.5000005, 0.9999995, 0.9999999, 0.0000005]))
)  # fmt: skip
def test_row_times_are_written_as_datetime_writes_them(timestamp):
    # The writer keeps a row's date and time to the second once a second and adds the microseconds itself:
    # it must be the string datetime makes, their rounding and its carry into the next second included.
    from hybrid_weather.router.ledger.store.rows import RowFormat

    made = RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries="masked", secret=b"k" * 32)
    expected = dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).isoformat(timespec="microseconds")
    assert made._time(timestamp) == expected


def test_request_ids_stay_unique_when_the_program_seeds_random_and_after_a_fork():
    # The id an answer carries is its row's: a repeat would merge two requests' feedback, and the replay
    # would skip the second row as stored already.
    import random

    from hybrid_weather.router.ledger.entry import RequestIds

    ids, made = RequestIds(), set()
    for _ in range(50):
        random.seed(42)
        made.add(ids.new(1_764_460_800.0))
    assert len(made) == 50 and all(len(i) == 22 and i.startswith(f"{1_764_460_800_000:012x}") for i in made)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child asks with the generator it inherited
        os.write(writer, ids.new(1_764_460_800.0).encode())
        os._exit(0)
    os.waitpid(child, 0)
    assert os.read(reader, 100).decode() != ids.new(1_764_460_800.0)


def test_each_row_keeps_the_code_of_the_rule_that_decided(tmp_path):
    path = tmp_path / "ledger.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        for query in ("魔都明天会下雨吗", "天气", "苏州、无锡、常州后天天气，常州不用了"):
            router.ask(query)
    with sqlite3.connect(path) as db:
        codes = dict(db.execute("SELECT query, reason_code FROM requests"))
    assert codes["魔都明天会下雨吗"] == "lookup"
    assert codes["天气"] == "no_place"
    assert codes["苏州、无锡、常州后天天气，常州不用了"] == "correction"

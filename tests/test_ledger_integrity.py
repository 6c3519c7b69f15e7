"""The ledger keeps every row and tells the truth: hostile rows, signals, unusable locations, honest savings,
invalid values, and personal data (issue 10). Over the real CLI and the real SQLite file where the point
is about them."""

import json
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from hybrid_weather.agent.llm import ModelTable, Usage
from hybrid_weather.router import HybridRouter, LLMUnavailable, Settings
from hybrid_weather.router.cli import cli
from hybrid_weather.router.ledger import Ledger, LedgerEntry, savings_report
from hybrid_weather.router.ledger.store.spool import Spool, spool_path, stray_spool
from hybrid_weather.router.ledger.store.writer import DEFAULT_BATCH_SIZE, DEFAULT_QUEUE_SIZE

from fake_openai import answer, tool_calls
from support import FAST_LLM, TODAY, subprocess_env

KEY = "sk-test-secret-key-0123456789"


def rows(path, columns="*"):
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute(f"SELECT {columns} FROM requests ORDER BY id")]


def console(*args, **env):
    """The installed console script's code path (entry.main), in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", *args],
        capture_output=True,
        env=subprocess_env(**env),
        timeout=60,
    )


# -- rows are never lost ------------------------------------------------------------------------------


def test_a_lone_surrogate_is_stored_safely_and_the_writer_lives_on(tmp_path):
    path = tmp_path / "l.db"
    # The byte \xff is not UTF-8: Python hands it over as a lone surrogate. The CLI refuses it (exit 2,
    # tests/test_cli_contract.py); a program's own str may still hold one, and the ledger must take it.
    refused = console("--provider", "demo", "--today", "2026-11-29", b"\xff\xe4\xb8\x8a\xe6\xb5\xb7\xe4\xbb\x8a\xe5"
                      b"\xa4\xa9\xe5\xa4\xa9\xe6\xb0\x94", HYBRID_WEATHER_LEDGER=str(path))  # fmt: skip
    assert refused.returncode == 2 and "not UTF-8" in refused.stderr.decode() and not path.exists()
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        assert "上海" in router.ask("\udcff上海今天天气", today=TODAY).text
        router.ask("北京明天天气", today=TODAY)
    stored = rows(path, "query, invalid")
    assert len(stored) == 2
    assert stored[0]["query"].startswith("\ufffd上海") and json.loads(stored[0]["invalid"]) == ["query:repaired"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the death is the point
def test_a_writer_that_died_is_started_again_and_loses_nothing(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    writer = ledger._writer
    next_batch = writer._next_batch
    writer._next_batch = lambda: sys.exit()  # the thread ends, as a bug in it would end it
    ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="a"))
    writer._thread.join(2)
    assert not writer._thread.is_alive()
    writer._next_batch = next_batch
    ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="b"))
    ledger.close()
    assert [r["query"] for r in rows(tmp_path / "l.db", "query")] == ["a", "b"]
    assert "started again" in ledger.problem


def test_close_waits_for_the_writer_even_when_threading_says_it_stopped(tmp_path):
    # A SIGTERM whose SystemExit lands inside Thread.is_alive() can leave the live writer marked stopped
    # (CPython's cleanup for bpo-45274 releases the thread's own lock); join() then returns at once. Once,
    # in CI, the queue's last 957 rows went with the exit. close() must wait for the writer itself.
    ledger = Ledger(tmp_path / "l.db", commit_interval=0.3)
    for i in range(3_000):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query=f"q{i}"))
    writer = ledger._writer._thread
    writer._tstate_lock.release()  # what the interrupted is_alive() does to the live thread's lock …
    writer._stop()  # … and to its state: join() and is_alive() now say it ended
    ledger.close()
    assert len(rows(tmp_path / "l.db", "id")) == 3_000  # all of them, as close() returns


def test_a_database_that_stays_locked_spools_the_rows_and_close_is_bounded(tmp_path):
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holds the database
    for i in range(3):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query=f"q{i}"))
    started = time.monotonic()
    ledger.close()
    assert time.monotonic() - started < 15
    blocker.execute("ROLLBACK")
    spooled = [json.loads(line) for line in ledger.spool.path.read_text("utf-8").splitlines()]
    assert [row["query"] for row in spooled] == ["q0", "q1", "q2"] and rows(path) == []
    assert str(ledger.spool.path) in ledger.problem


_ASKER = """
import signal, sys
from hybrid_weather.router import HybridRouter
# What a library user does for SIGTERM (README): turn it into SystemExit, so close() runs.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
with HybridRouter(provider="demo", ledger=sys.argv[1]) as router:
    while True:
        router.ask("上海今天天气")
        print("ok", flush=True)
"""


@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL])
def test_killed_while_asking(tmp_path, kill):
    path = tmp_path / "l.db"
    child = subprocess.Popen([sys.executable, "-c", _ASKER, str(path)], stdout=subprocess.PIPE, text=True,
                             env=subprocess_env())  # fmt: skip
    acknowledged = 0
    deadline = time.monotonic() + 3 + random.random() * 2  # a random moment under load
    while time.monotonic() < deadline:
        if child.stdout.readline() == "ok\n":
            acknowledged += 1
    child.send_signal(kill)
    acknowledged += sum(1 for line in child.stdout if line == "ok\n")
    child.wait(30)
    committed = len(rows(path, "id"))
    # What a close() that ran out of time spooled is not lost: the next process to open the ledger writes it
    # back. The test is that process, so only rows in the database count.
    spooled = Spool(spool_path(str(path))).count()
    Ledger(path).close()  # opening replays the spool
    stored = sum(1 for row in rows(path, "outcome") if row["outcome"] == "ok")  # an interrupted ask is no answer
    lost = acknowledged - stored
    print(f"{kill.name}: {acknowledged} asks acknowledged, {committed} rows committed by the child, {spooled} "
          f"spooled, {stored} ok rows stored after the replay, {lost} lost")  # fmt: skip
    if kill == signal.SIGTERM:
        # Nothing acknowledged is lost; one more row than acknowledgements is the ask the signal caught
        # between its row and its print (answered and recorded, never shown).
        assert lost in (0, -1), lost
    else:
        # Never more than the queue and the batch being committed hold (the README's stated window).
        assert 0 <= lost <= DEFAULT_QUEUE_SIZE + DEFAULT_BATCH_SIZE, lost


def test_sigterm_to_the_cli_records_the_interrupted_ask(tmp_path, weather_server):
    # The CLI turns SIGTERM into an exit through close(); a slow weather server keeps it busy meanwhile.
    path = tmp_path / "l.db"
    weather_server.delay = 20
    child = subprocess.Popen(
        [sys.executable, "-m", "hybrid_weather.router", "上海今天天气"],
        env=subprocess_env(HYBRID_WEATHER_LEDGER=str(path), HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while weather_server.requests["/v1/forecast"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # until the ask is waiting on the weather
    child.send_signal(signal.SIGTERM)
    assert child.wait(30) == 128 + signal.SIGTERM
    (row,) = rows(path, "route, outcome")
    assert row == {"route": "rule", "outcome": "Interrupted"}


# -- a ledger that cannot be written never costs the answer ------------------------------------------


def _garbage(path):
    path.write_bytes(os.urandom(4096))


def _foreign(path):
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE requests (who TEXT, what TEXT)")


def _folder(path):
    path.mkdir()


def _parent_is_a_file(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "file").write_text("x")
    return path.parent / "file" / "ledger.db"


@pytest.mark.parametrize("spoil", [_garbage, _foreign, _folder, _parent_is_a_file])
def test_an_unusable_ledger_still_answers_with_one_warning(tmp_path, spoil):
    path = tmp_path / "ledger" / "l.db"
    path.parent.mkdir()
    path = spoil(path) or path
    started = time.monotonic()
    result = console("--provider", "demo", "上海今天天气", HYBRID_WEATHER_LEDGER=str(path))
    assert time.monotonic() - started < 20
    assert result.returncode == 0
    assert result.stdout.decode().startswith("【演示数据】")
    warnings = result.stderr.decode().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("Warning:") and str(path) in warnings[0]
    assert "HYBRID_WEATHER_LEDGER" in warnings[0] and "spool" in warnings[0]


def test_rows_spooled_for_one_ledger_are_replayed_into_that_ledger_only(tmp_path):
    """A ledger whose folder cannot be written spools to a file of its own in the temporary folder: the
    first run in a fresh home (its folder not made yet) does not take those rows, and the ledger they were
    meant for replays them once its folder can be written."""
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the ledger's folder should be")
    meant_for = blocked / "ledger.db"
    stray = Spool(stray_spool(str(meant_for)))
    try:
        assert console("--provider", "demo", "上海今天天气", HYBRID_WEATHER_LEDGER=str(meant_for)).returncode == 0
        assert stray.count() == 1
        fresh_home = tmp_path / "not-yet" / "home"
        assert console("--provider", "demo", "北京明天天气", HYBRID_WEATHER_HOME=str(fresh_home)).returncode == 0
        assert [row["query"] for row in rows(fresh_home / "ledger.db")] == ["北京明天天气"]
        assert stray.count() == 1
        blocked.unlink()  # the folder can be made now
        assert console("--provider", "demo", "广州后天天气", HYBRID_WEATHER_LEDGER=str(meant_for)).returncode == 0
        assert sorted(row["query"] for row in rows(meant_for)) == ["上海今天天气", "广州后天天气"]
        assert stray.count() == 0
    finally:
        stray.path.unlink(missing_ok=True)


def test_a_home_that_is_a_file_still_answers(tmp_path):
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    result = console("--provider", "demo", "上海今天天气", HYBRID_WEATHER_HOME=str(home))
    assert result.returncode == 0 and "HYBRID_WEATHER_HOME" in result.stderr.decode()


@pytest.mark.parametrize("off", ["off", "OFF", "Off", " off "])
def test_ledger_off_in_any_case_writes_nothing(tmp_path, off):
    result = console("--provider", "demo", "上海今天天气", HYBRID_WEATHER_LEDGER=off, HYBRID_WEATHER_HOME=str(tmp_path))
    assert result.returncode == 0 and result.stderr == b""
    assert list(tmp_path.iterdir()) == []


def test_tests_keep_the_user_home_untouched():
    # conftest points HOME and XDG_* at the test's folder; a process started with subprocess_env() too.
    home = subprocess_env()["HOME"]
    assert "pytest" in home or "tmp" in home


# -- savings are honest ----------------------------------------------------------------------------------


def test_failures_and_empties_are_shown_apart_and_the_figures_add_up(tmp_path):
    path = tmp_path / "l.db"
    env = {"HYBRID_WEATHER_LEDGER": str(path), "HYBRID_WEATHER_MODEL": "gpt-4o-mini"}
    runner = CliRunner()
    for query in ("上海今天天气", "北京明天天气"):
        assert runner.invoke(cli, ["--provider", "demo", query], env=env).exit_code == 0
    for query in ("上海今天天气", "广州明天天气", "深圳后天天气", "杭州今天天气"):  # the weather service is down
        result = runner.invoke(cli, [query], env={**env, "HYBRID_WEATHER_OPEN_METEO_URL": "http://127.0.0.1:9"})
        assert result.exit_code == 3
    for query in ("", "   "):
        assert runner.invoke(cli, ["--provider", "demo", query], env=env).exit_code == 0
    ledger = Ledger(path, model="gpt-4o-mini")
    ledger.record(LedgerEntry(started_at=time.time(), route="shadow", query="q", places=("上海市",), cost_usd=0.0002))
    ledger.close()
    report = json.loads(runner.invoke(cli, ["savings", "--json", "--include-demo"], env=env).output)
    assert report["requests"] == 8 and report["by_outcome"] == {"ok": 2, "failed": 4, "empty": 2}
    assert report["failures"] == {"UpstreamConnectError": 4}
    one_place = ModelTable().cost("gpt-4o-mini", Usage(425, 0, 75))
    assert report["baseline_cost_usd"] == pytest.approx(2 * one_place)  # the two answered questions only
    assert report["actual_cost_usd"] == pytest.approx(0.0002)  # the shadow run
    groups = report["groups"]["rows"]
    assert sum(g["actual_cost_usd"] for g in groups.values()) == pytest.approx(report["actual_cost_usd"])
    assert sum(g["baseline_cost_usd"] for g in groups.values()) == pytest.approx(report["baseline_cost_usd"])
    assert sum(g["requests"] for g in groups.values()) == report["requests"]
    text = runner.invoke(cli, ["savings", "--include-demo"], env=env).output
    assert "Not counted: 4 failed (UpstreamConnectError 4) and 2 empty" in text and "Shadow:    1 run," in text


def test_absurd_money_and_tokens_are_recorded_as_invalid_not_summed(tmp_path):
    path = tmp_path / "l.db"
    ledger = Ledger(path, model="gpt-4o-mini")
    now = time.time()
    ledger.record(LedgerEntry(started_at=now, route="llm", query="a", cost_usd=-5.0, usage=Usage(-1, 0, 10)))
    ledger.record(LedgerEntry(started_at=now + 1, route="llm", query="b", cost_usd=float("nan"),
                              usage=Usage(10**12, 0, 10)))  # fmt: skip
    ledger.record(LedgerEntry(started_at=now + 2, route="llm", query="c", cost_usd=0.001, usage=Usage(100, 0, 10)))
    ledger.close()
    stored = rows(path, "cost_usd, prompt_tokens, invalid")
    assert [(r["cost_usd"], r["prompt_tokens"]) for r in stored] == [(None, None), (None, None), (0.001, 100)]
    assert [json.loads(r["invalid"]) if r["invalid"] else [] for r in stored] == [
        ["cost_usd", "prompt_tokens"],
        ["cost_usd", "prompt_tokens"],
        [],
    ]
    with sqlite3.connect(path) as db:
        report = savings_report(db, 30)
    assert report["actual_cost_usd"] == pytest.approx(0.001) and report["invalid_rows"] == 2


@pytest.mark.parametrize(
    ("usage", "flagged"),
    [
        (Usage(100, 101, 10), ["cached_tokens"]),  # more cached than prompt tokens
        (Usage(100.5, 0, 10), ["prompt_tokens"]),  # not a whole number
        (Usage(100, 0, -10), ["completion_tokens"]),
        (Usage(100, 0, 10**9), ["completion_tokens"]),
        (Usage(100, 0, 10, invalid=("prompt_tokens",)), ["prompt_tokens"]),  # the endpoint's count was a fault
    ],
)
def test_a_cost_priced_on_impossible_tokens_is_null_and_flagged_not_stored(tmp_path, usage, flagged):
    path = tmp_path / "l.db"
    ledger = Ledger(path, model="gpt-4o-mini")
    ledger.record(LedgerEntry(started_at=time.time(), route="llm", query="a", cost_usd=0.004, usage=usage))
    ledger.close()
    (row,) = rows(path, "cost_usd, prompt_tokens, cached_tokens, completion_tokens, invalid")
    assert row["cost_usd"] is None and json.loads(row["invalid"]) == [*flagged, "cost_usd"]
    assert [c for c in ("prompt_tokens", "cached_tokens", "completion_tokens") if row[c] is None] == flagged
    with sqlite3.connect(path) as db:
        report = savings_report(db, 30)
    assert report["actual_cost_usd"] == 0 and report["invalid_rows"] == 1 and report["unknown_cost_requests"] == 1


def test_a_usage_that_names_a_fault_has_no_price():
    assert ModelTable().cost("gpt-4o-mini", Usage(100, 0, 10)) > 0
    assert ModelTable().cost("gpt-4o-mini", Usage(100, 0, 10, invalid=("completion_tokens",))) is None


def test_failed_llm_requests_record_their_attempts(weather_server, llm_server, tmp_path):
    llm_server.then(*[{"status": 503, "body": {"error": {"message": "busy"}}}] * 3)
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url)
    with HybridRouter(settings=settings, ledger=str(tmp_path / "l.db"), llm_options=FAST_LLM) as router, \
            pytest.raises(LLMUnavailable):  # fmt: skip
        router.ask("北京明天适合出游吗", today=TODAY)
    (row,) = rows(tmp_path / "l.db", "outcome, llm_attempts")
    assert row == {"outcome": "LLMUnavailable", "llm_attempts": 3}


# -- personal data -------------------------------------------------------------------------------------


def test_every_stored_text_is_masked_and_hashed_with_a_secret(tmp_path):
    path = tmp_path / "l.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        router.ask("13812345678明天天气")  # the number stands where a place would
    (row,) = rows(path, "query, reason, query_hmac, query_sha256")
    assert "13812345678" not in json.dumps(row, ensure_ascii=False)
    assert row["query"] == "[phone]明天天气" and row["query_sha256"] is None and len(row["query_hmac"]) == 64
    key = path.with_name(path.name + ".key")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert b"13812345678" not in path.read_bytes()


def test_hash_mode_keeps_nothing_readable(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_WEATHER_LEDGER_QUERIES", "hash")
    path = tmp_path / "l.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        router.ask("纳尼亚明天天气")
        with pytest.raises(LLMUnavailable):  # no LLM here: a failed row, which must keep nothing readable too
            router.ask("北京明天遛狗天气")
    stored = rows(path, "query, reason, unknown_words")
    assert all(r["query"] is None and r["unknown_words"] is None for r in stored)
    assert [r["reason"] for r in stored] == ["clarify: unknown place", "unrecognised"]


def test_personal_data_is_not_sent_to_the_geocoder(weather_server):
    settings = Settings(open_meteo_url=weather_server.url)
    with HybridRouter(settings=settings, ledger="off") as router:
        answer = router.ask("13812345678明天天气", today=TODAY)
    assert answer.route == "clarify" and weather_server.requests["/v1/search"] == 0


def test_the_llm_sees_masked_text_unless_told_otherwise(weather_server, llm_server, monkeypatch):
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url)
    question = "北京明天适合出游吗？不行就打13812345678告诉我"
    llm_server.then(answer("好。"))
    with HybridRouter(settings=settings, ledger="off", llm_options=FAST_LLM) as router:
        router.ask(question, today=TODAY)
    assert llm_server.requests[-1]["messages"][-1]["content"] == "北京明天适合出游吗？不行就打[phone]告诉我"
    raw = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url,
                   llm_sees="raw")  # fmt: skip
    llm_server.then(answer("好。"))
    with HybridRouter(settings=raw, ledger="off", llm_options=FAST_LLM) as router:
        router.ask(question, today=TODAY)
    assert llm_server.requests[-1]["messages"][-1]["content"] == question


def test_llm_sees_setting_is_checked():
    from hybrid_weather.router import ConfigurationError

    with pytest.raises(ConfigurationError, match="HYBRID_WEATHER_LLM_SEES"):
        Settings.from_env({"HYBRID_WEATHER_LLM_SEES": "everything"})


def test_a_tool_call_needing_no_second_loop_still_works_masked(weather_server, llm_server):
    # The masked text still carries the question: the model calls its tool as before.
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url)
    llm_server.then(tool_calls(("get_weather", {"place": "北京", "date": "明天"})), answer("适合。"))
    with HybridRouter(settings=settings, ledger="off", llm_options=FAST_LLM) as router:
        result = router.ask("北京明天适合出游吗 我的邮箱foo@example.com", today=TODAY)
    assert result.text == "适合。"
    assert "foo@example.com" not in json.dumps(llm_server.requests, ensure_ascii=False)


def test_spooled_rows_are_replayed_once_when_the_ledger_is_back(tmp_path):
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # the database is away: rows go to the spool
    for i in range(3):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query=f"q{i}"))
    ledger.close()
    blocker.execute("ROLLBACK")
    blocker.close()
    spool = ledger.spool.path
    spool.write_text(spool.read_text("utf-8") * 2 + '{"id": "cut short', "utf-8")  # the same rows twice, a torn line
    again = Ledger(path)
    again.flush()
    again.close()
    assert sorted(row["query"] for row in rows(path)) == ["q0", "q1", "q2"]  # once each: ids are unique
    assert spool.read_text("utf-8") == '{"id": "cut short\n'  # the torn line waits, it is not dropped


_OPENER = """
import sys, time
from hybrid_weather.router.ledger import Ledger, LedgerEntry
path, start = sys.argv[1], float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))  # every process opens the new ledger at the same moment
ledger = Ledger(path)
ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="q"))
ledger.close()
print(ledger.problem or "", flush=True)
"""


def test_workers_that_open_a_new_ledger_at_once_all_get_it(tmp_path):
    # serve --workers N starts N processes that create the same ledger together; before the open was
    # serialized, one of them met the other mid-migration and spooled every row of its life.
    path = tmp_path / "new.db"
    start = time.time() + 1.5
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(path), str(start)],
            stdout=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
        )
        for _ in range(6)
    ]
    problems = [process.communicate(timeout=60)[0].strip() for process in openers]
    assert problems == [""] * 6
    assert len(rows(path)) == 6 and not (tmp_path / "new.db.spool.jsonl").exists()

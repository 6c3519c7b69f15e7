"""Feedback (issue 40, item 2): every answer carries its ledger row's id, and a user's verdict on it is kept,
listed first by `misses` and the dashboard, and counted by `savings` — from the CLI, the library, `serve`'s
/v1/ask and its OpenAI-compatible endpoint, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import openai
import pytest
from live_server import post, serving

from hybrid_weather.agent.errors import InvalidQuestion
from hybrid_weather.router import HybridRouter, Settings

from support import subprocess_env


def console(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], capture_output=True, text=True,
                          env=subprocess_env(**env), timeout=60)  # fmt: skip


def test_an_answer_marked_wrong_from_the_command_line_is_listed_first_and_counted():
    # Answered by the demo provider: counted with --include-demo (test_demo_rows.py holds the default).
    first = json.loads(console("--provider", "demo", "--json", "上海明天天气").stdout)
    request_id = first["request_id"]
    assert isinstance(request_id, str) and len(request_id) == 22
    explained = console("--provider", "demo", "--explain", "北京明天天气").stdout
    assert "request:" in explained and "hybrid-weather feedback" in explained
    done = console("feedback", request_id, "wrong", "--comment", "明天是晴天，打13812345678问过了")
    assert done.returncode == 0 and request_id in done.stdout, done.stderr
    misses = json.loads(console("misses", "--json", "--include-demo").stdout)
    (marked,) = misses["marked_wrong"]
    assert marked["request_id"] == request_id and marked["query"] == "上海明天天气"
    assert "13812345678" not in marked["comment"] and "晴天" in marked["comment"]
    assert console("misses", "--include-demo").stdout.startswith("Rule answers users marked wrong (1)")
    savings = json.loads(console("savings", "--json", "--include-demo").stdout)["feedback"]
    assert savings == {"rule_answers": 2, "rule_marked_wrong": 1, "rule_marked_wrong_share": 0.5}
    assert "1 of 2 rule answers marked wrong" in console("savings", "--include-demo").stdout
    # A second verdict replaces the first: right now, and no longer listed.
    assert console("feedback", request_id, "right").returncode == 0
    assert json.loads(console("misses", "--json", "--include-demo").stdout)["marked_wrong"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["0193a1b2c3d4e5f6a7b8c9", "wrong"], "no answer with request id"),
        (["not-an-id", "wrong"], "is not a request id"),
        (["0193a1b2c3d4e5f6a7b8c9", "meh"], "'meh' is not one of"),
    ],
)
def test_feedback_on_what_is_no_answer_is_one_clear_line(args, message):
    console("--provider", "demo", "上海明天天气")  # a ledger to look in
    done = console("feedback", *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_the_library_and_a_postgresql_ledger_keep_verdicts_too(pg_url):
    with HybridRouter(settings=Settings(provider="demo"), ledger=pg_url) as router:
        answer = router.ask("广州明天天气")
        router.feedback(answer.request_id, "wrong", "下雨了")
        router.feedback(f"chatcmpl-{answer.request_id}", "wrong")  # a completion's id names it too
        with pytest.raises(InvalidQuestion, match="verdict"):
            router.feedback(answer.request_id, "bad")
        from hybrid_weather.router.ledger import misses_report, savings_report

        misses = router.ledger.report(lambda db: misses_report(db, 30, include_demo=True))
        savings = router.ledger.report(lambda db: savings_report(db, 30, include_demo=True))
    assert [m["request_id"] for m in misses["marked_wrong"]] == [answer.request_id]
    assert savings["feedback"]["rule_marked_wrong"] == 1


def test_serve_gives_the_id_on_every_answer_and_takes_feedback_on_it(tmp_path, llm_server):
    with serving(tmp_path, llm_server) as server:
        request = urllib.request.Request(f"{server.url}/v1/ask", json.dumps({"query": "上海明天天气"}).encode(),
                                         {"content-type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            body, header = json.loads(response.read()), response.headers["x-request-id"]
        assert body["request_id"] == header and len(header) == 22
        assert post(f"{server.url}/v1/feedback", {"request_id": header, "verdict": "wrong", "comment": "晴"}) == (
            200, {"request_id": header, "verdict": "wrong"})  # fmt: skip

        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "北京明天天气"}]
        )
        completion = raw.parse()
        assert completion.id == f"chatcmpl-{raw.headers['x-request-id']}"
        assert post(f"{server.url}/v1/feedback", {"request_id": completion.id, "verdict": "right"})[0] == 200

        for wrong, status in [({"request_id": "0193a1b2c3d4e5f6a7b8c9", "verdict": "wrong"}, 404),
                              ({"request_id": header, "verdict": "maybe"}, 422), ({"verdict": "wrong"}, 422),
                              ({"request_id": header, "verdict": "wrong", "comment": 5}, 422)]:  # fmt: skip
            with pytest.raises(urllib.error.HTTPError) as refused:
                post(f"{server.url}/v1/feedback", wrong)
            assert refused.value.code == status, wrong
            assert "error" in json.loads(refused.value.read())
        with urllib.request.urlopen(f"{server.url}/?include_demo=1", timeout=10) as page:
            html = page.read().decode()
        assert "Rule answers users marked wrong (1 of 2)" in html and "上海明天天气" in html


def test_the_reports_walk_the_feedback_not_every_request_of_the_window(tmp_path):
    # Issue 54: joined the other way, SQLite walked each request of the window by its datetime index to find
    # the few with a verdict (0.7–1.1 s of `savings` over a million rows); read from the feedback, each
    # request is one lookup by its key. The plan is what decides, so the plan is what is checked.
    import datetime as dt
    import sqlite3

    from hybrid_weather.router.ledger import Ledger, LedgerEntry, misses_report, savings_report

    path = tmp_path / "ledger.db"
    now = dt.datetime.now(dt.timezone.utc)
    ledger = Ledger(path)
    for i in range(50):
        ledger.record(LedgerEntry(started_at=now.timestamp() - 60 * i, route="rule", query=f"上海{i}"))
    ledger.close()
    db = sqlite3.connect(path, isolation_level=None)
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    savings_report(db, 30, now=now)
    misses_report(db, 30, now=now)
    db.set_trace_callback(None)
    joined = [sql for sql in statements if " feedback " in sql and " requests " in sql]
    assert len(joined) == 2, statements  # savings' count of answers marked wrong, misses' list of them
    for sql in joined:
        plan = [step for *_, step in db.execute(f"EXPLAIN QUERY PLAN {sql}")]
        assert plan[0] == "SCAN f", plan
        assert plan[1].startswith("SEARCH r USING INDEX sqlite_autoindex_requests_1 (id=?)"), plan

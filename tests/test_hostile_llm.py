"""Hostile LLM endpoints, over the wire with the real openai SDK: every reply of every bad kind ends within
the deadline as LLMUnavailable (exit 4) or as a graceful answer, always with a ledger row, and the key
never shows (issue 11)."""

import json
import logging
import resource
import sqlite3
import time

import pytest
from click.testing import CliRunner

from hybrid_weather.agent.errors import LLMUnavailable
from hybrid_weather.agent.llm.loop import MAX_TOOL_CALLS, MAX_TOOL_CALLS_PER_TURN
from hybrid_weather.router import HybridRouter, Session, Settings
from hybrid_weather.router.cli import cli

import fake_weather
from fake_openai import answer, tool_calls, usage
from support import FAST_HTTP, FAST_LLM, TODAY, midway

KEY = "sk-test-secret-key-0123456789"
QUESTION = "北京明天适合出游吗"
DEADLINE = 3.0


def make_router(weather_server, url, ledger, **llm):
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=url, model="gpt-4o-mini")
    options = {**FAST_LLM, "deadline": DEADLINE, "call_timeout": 1.5, **llm}
    return HybridRouter(settings=settings, ledger=str(ledger), http_options=FAST_HTTP, llm_options=options)


def warm(router):
    """What a router loads once, before a test's clock: the reading's tables and the model's client (as serve
    and the CLI do at start)."""
    router.route(QUESTION, today=TODAY)
    router.connect_llm()


def rows(path):
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM requests ORDER BY id")]


def reply_with(message, **extra):
    return {"reply": {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}], **extra}}


# Replies no retry can mend: the loop must end with LLMUnavailable, by the deadline, with a row.
BROKEN = {
    "html-200": {"raw": "<html><body>502 Bad Gateway</body></html>", "content_type": "text/html"},
    "truncated-json": {"raw": '{"id": "chatcmpl-1", "choices": [{"index": 0, "mess'},
    "json-list": {"raw": "[1, 2, 3]"},
    "deep-json": {"raw": "[" * 100_000 + "]" * 100_000},
    "no-choices": {"reply": {"id": "x", "choices": []}},
    "choices-null": {"reply": {"id": "x", "choices": None}},
    "message-null": reply_with(None),
    "content-a-number": reply_with({"role": "assistant", "content": 5}),
    "tool-calls-a-string": reply_with({"role": "assistant", "content": None, "tool_calls": "get_weather"}),
    "tool-call-no-name": reply_with({"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}),
    "empty-answer": reply_with({"role": "assistant", "content": ""}),
    "blank-answer": reply_with({"role": "assistant", "content": "  \n", "tool_calls": []}),
    "hang": {"sleep": 5},
    "drip": {**answer("明天北京晴，适合出游。" * 20), "drip": 0.05},
    "500-forever": {"status": 500},
    "header-echo-400": {"echo_headers": True},
    "header-echo-500": {"echo_headers": True, "status": 503},
    "redirect": {"status": 307, "headers": {"Location": "https://elsewhere.invalid/v1/chat/completions"}},
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_reply_is_llm_unavailable_within_the_deadline(weather_server, llm_server, tmp_path, caplog, case):
    llm_server.then(BROKEN[case])
    llm_server.repeat_last = True  # every retry meets the same fault
    caplog.set_level(logging.DEBUG)
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        # The reading's tables load on a router's first question and the client's `openai` import on its first
        # LLM one (each a second or more on a loaded machine): both before the clock, which times the model's
        # deadline plus a second for the row.
        warm(router)
        started = time.monotonic()
        with pytest.raises(LLMUnavailable) as caught:
            router.ask(QUESTION, today=TODAY)
        took = time.monotonic() - started
    assert took < DEADLINE + 1, f"{case} took {took:.1f} s"
    (row,) = rows(tmp_path / "l.db")
    assert row["route"] == "llm" and row["outcome"] == "LLMUnavailable" and row["llm_attempts"] >= 1
    seen = str(caught.value) + caplog.text + json.dumps(row, ensure_ascii=False)
    assert KEY not in seen and "Bearer sk" not in seen


def test_the_key_echoed_in_an_error_body_is_scrubbed_but_the_reason_kept(weather_server, llm_server, tmp_path):
    llm_server.then({"echo_headers": True})
    with (
        make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router,
        pytest.raises(LLMUnavailable, match="HTTP 400") as caught,
    ):
        router.ask(QUESTION, today=TODAY)
    message = str(caught.value)
    assert "bad request from" in message and KEY not in message and "[hidden" in message


def test_a_redirect_blames_the_upstream_not_the_configured_url(weather_server, llm_server, tmp_path):
    llm_server.then(BROKEN["redirect"])
    with (
        make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router,
        pytest.raises(LLMUnavailable, match=r"redirected to another host \(https://elsewhere.invalid\)") as caught,
    ):
        router.ask(QUESTION, today=TODAY)
    assert caught.value.attempts == 1  # not retried: the server will redirect again


def test_a_gzip_bomb_from_the_llm_stops_at_4_mb(weather_server, llm_server, tmp_path):
    fake_weather._gzip_bomb()  # made before the request: compressing 1 GiB takes the server a while
    llm_server.then({**answer("x"), "gzip_bomb": True})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with (
        make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router,
        pytest.raises(LLMUnavailable, match="more than 4096 kB"),
    ):
        router.ask(QUESTION, today=TODAY)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 200


# Replies that bend the documented shape but still say something usable: the loop reads what they mean.
def test_arguments_as_an_object_null_or_without_id_still_run_the_tools(weather_server, llm_server, tmp_path):
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"place": "北京"}}},
        {"type": "function", "function": {"name": "get_current_weather", "arguments": None}},
    ]
    llm_server.then(reply_with({"role": "assistant", "content": None, "tool_calls": calls}), answer("好。"))
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        result = router.ask(QUESTION, today=TODAY)
    assert result.text == "好。"
    tools = [m for m in llm_server.requests[1]["messages"] if m["role"] == "tool"]
    assert tools[0]["tool_call_id"] == "call_a" and json.loads(tools[0]["content"])["place"] == "北京市"
    assert tools[1]["tool_call_id"].startswith("call_hw_")  # an id of our own, so the next request is valid
    assert "缺少必填参数 place" in json.loads(tools[1]["content"])["error"]
    assert [r["outcome"] for r in rows(tmp_path / "l.db")] == ["ok"]


@pytest.mark.parametrize("retry_after", ["-1", "nan", "inf", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_retry_after_that_is_no_wait_falls_back_to_backoff(weather_server, llm_server, tmp_path, retry_after):
    llm_server.then({"status": 429, "headers": {"retry-after": retry_after}}, answer("好。"))
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        result = router.ask(QUESTION, today=TODAY)
    assert result.text == "好。" and result.llm.attempts == 2


def test_a_retry_after_past_the_deadline_gives_up_at_once(weather_server, llm_server, tmp_path):
    llm_server.then({"status": 429, "headers": {"retry-after": "Fri, 01 Jan 2100 00:00:00 GMT"}})
    # A deadline of 30 s: giving up at once is told from waiting until it whatever the machine's load.
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db", deadline=30.0) as router:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable, match="past the deadline"):
            router.ask(QUESTION, today=TODAY)
    assert time.monotonic() - started < midway(0, 30.0)  # at once, not at the deadline


@pytest.mark.parametrize(
    ("sent", "flagged"),
    [
        ({"prompt_tokens": "many"}, ["prompt_tokens"]),
        ({"prompt_tokens": 12.5}, ["prompt_tokens"]),
        ({"prompt_tokens": True}, ["prompt_tokens"]),
        ({"completion_tokens": -5}, ["completion_tokens"]),
        ({"completion_tokens": 10**30}, ["completion_tokens"]),
        ({"prompt_tokens_details": {"cached_tokens": 10**30}}, ["cached_tokens"]),
        ({"prompt_tokens_details": {"cached_tokens": 401}}, ["cached_tokens"]),  # more cached than the prompt
        ({"prompt_tokens": 400, "prompt_cache_hit_tokens": -1}, ["cached_tokens"]),
        ({"prompt_tokens": -1, "completion_tokens": "x"}, ["prompt_tokens", "completion_tokens"]),
    ],
)
def test_impossible_token_counts_are_stored_as_null_and_flagged_not_as_zero_cost(
    weather_server, llm_server, tmp_path, sent, flagged
):
    llm_server.then({**answer("好。"), "usage": {**usage(prompt=400, completion=40), **sent}})
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        result = router.ask(QUESTION, today=TODAY)
    (row,) = rows(tmp_path / "l.db")
    assert result.text == "好。" and row["outcome"] == "ok"
    for field in ("prompt_tokens", "cached_tokens", "completion_tokens"):
        assert (row[field] is None) == (field in flagged), field
    assert row["cost_usd"] is None and result.cost_usd is None  # unknown, never $0 from counts that are faults
    assert json.loads(row["invalid"]) == flagged  # the row is counted apart (savings: invalid_rows)


def test_possible_token_counts_are_priced(weather_server, llm_server, tmp_path):
    llm_server.then({**answer("好。"), "usage": usage(prompt=400, completion=40, cached=400)})
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        router.ask(QUESTION, today=TODAY)
    (row,) = rows(tmp_path / "l.db")
    assert (row["prompt_tokens"], row["cached_tokens"], row["completion_tokens"]) == (400, 400, 40)
    assert row["cost_usd"] > 0 and row["invalid"] is None


def test_a_tool_call_flood_in_one_turn_runs_the_cap_and_answers_gracefully(weather_server, llm_server, tmp_path):
    places = [f"{city}" for city in ("北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "武汉", "西安", "重庆")]
    flood = [("get_weather", {"place": places[i % len(places)], "date": f"{i % 7 + 1}天后"}) for i in range(200)]
    llm_server.then(tool_calls(*flood))
    weather_server.delay = 0.2
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        warm(router)
        started = time.monotonic()
        result = router.ask(QUESTION, today=TODAY)
        took = time.monotonic() - started
    assert result.llm.stopped == "tool_calls" and result.llm.tool_calls == MAX_TOOL_CALLS_PER_TURN
    assert result.text.startswith("抱歉") and "我查到的天气" in result.text
    assert len(llm_server.requests) == 1 and took < DEADLINE + 1
    (row,) = rows(tmp_path / "l.db")
    assert row["outcome"] == "ok" and row["tool_calls"] == MAX_TOOL_CALLS_PER_TURN


def test_tool_calls_are_capped_across_turns(weather_server, llm_server, tmp_path):
    turn = [(name, {"place": f"北京{i}"}) for i, name in enumerate(["get_current_weather"] * MAX_TOOL_CALLS_PER_TURN)]
    llm_server.then(tool_calls(*turn))
    llm_server.repeat_last = True
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db", max_loops=50, deadline=20) as router:
        result = router.ask(QUESTION, today=TODAY)
    assert result.llm.stopped == "tool_calls" and result.llm.tool_calls == MAX_TOOL_CALLS


def test_tools_against_a_slow_weather_server_end_by_the_deadline(weather_server, llm_server, tmp_path):
    cities = ["北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "武汉", "西安", "重庆", "天津", "苏州"]
    llm_server.then(*[tool_calls(*[("get_weather", {"place": p}) for p in cities[i : i + 3]]) for i in (0, 3, 6, 9)])
    # The first turn's three fetches answer at once; every later body drips a byte every 0.3 s, each read in
    # time, the whole taking minutes: the deadline falls in the second turn's tools however slow the machine
    # (a turn's time was a share of the deadline, and under load the deadline fell in a model call instead).
    weather_server.fail("/v1/forecast", *["slow:0"] * 3, *["drip:0.3"] * 30)
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db", deadline=2.0) as router:
        router.connect_llm()  # the client built (openai imported) before the clock, as serve and the CLI do
        started = time.monotonic()
        result = router.ask("这些城市哪里适合出游", today=TODAY)
        took = time.monotonic() - started
    assert result.llm.stopped == "deadline" and took < midway(2.0, 60)  # a dripped body takes minutes
    assert "我查到的天气" in result.text and "北京市" in result.text
    assert len(rows(tmp_path / "l.db")) == 1


def test_cli_exit_4_not_1_with_the_weather_part_and_no_key(weather_server, llm_server):
    llm_server.then({"echo_headers": True, "status": 500})
    llm_server.repeat_last = True
    result = CliRunner().invoke(
        cli,
        ["北京明天天气怎么样，适合出游吗", "--today", "2026-11-29", "--no-emoji"],
        env={
            "HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url,
            "OPENAI_BASE_URL": llm_server.base_url,
            "OPENAI_API_KEY": KEY,
        },
    )
    assert result.exit_code == 4, result.output
    assert KEY not in result.output and "HTTP 500" in result.output


def test_chat_keeps_going_after_a_broken_reply(weather_server, llm_server, tmp_path):
    llm_server.then(BROKEN["no-choices"], BROKEN["no-choices"], BROKEN["no-choices"], answer("适合。"))
    session = Session()
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:
        with pytest.raises(LLMUnavailable):
            router.ask(QUESTION, today=TODAY, session=session)
        assert router.ask(QUESTION, today=TODAY, session=session).text == "适合。"
    assert [r["outcome"] for r in rows(tmp_path / "l.db")] == ["LLMUnavailable", "ok"]


def test_an_llm_aask_the_caller_gave_up_on_still_records_what_it_spent(weather_server, llm_server, tmp_path):
    import asyncio

    llm_server.then({"sleep": 0.6, "then": answer("好。", prompt=500, completion=20)})
    with make_router(weather_server, llm_server.base_url, tmp_path / "l.db") as router:

        async def impatient():
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(router.aask(QUESTION, today=TODAY), 0.1)
            await asyncio.sleep(1.0)  # the loop, shielded, runs to its end meanwhile

        asyncio.run(impatient())
    (row,) = rows(tmp_path / "l.db")
    assert (row["outcome"], row["prompt_tokens"], row["completion_tokens"]) == ("ok", 500, 20)

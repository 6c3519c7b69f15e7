"""The LLM fallback over real HTTP: the real openai SDK against a scripted server on 127.0.0.1."""

import json
import sqlite3
import time

import pytest
from click.testing import CliRunner

from hybrid_weather.agent.errors import LLMUnavailable
from hybrid_weather.agent.llm import ModelTable, Usage
from hybrid_weather.router import HybridRouter, Session, Settings
from hybrid_weather.router.cli import cli
from hybrid_weather.router.ledger import savings_report

from fake_openai import answer, tool_calls
from llm_router import KEY, QUESTION, ledger_rows, make_router
from support import FAST_HTTP, FAST_LLM, LIVE_LLM, LIVE_LLM_WANTED, TODAY, midway


def tool_messages(request):
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_tool_call_then_answer(weather_server, llm_server):
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
        answer("明天北京多云，8~15°C，适合出游。", prompt=560, completion=30, cached=256),
    )
    with make_router(weather_server, llm_server) as router:
        result = router.ask(QUESTION, today=TODAY)
        rows = ledger_rows(router)
    assert result.route == "llm" and result.text == "明天北京多云，8~15°C，适合出游。"
    first, second = llm_server.requests
    assert first["model"] == "gpt-4o-mini" and [t["function"]["name"] for t in first["tools"]] == [
        "get_weather",
        "get_air_quality",
        "get_current_weather",
        "distance",  # issue 16: a built-in tool like the weather ones
    ]
    assert "2026-11-29" in first["messages"][0]["content"] and "Asia/Shanghai" in first["messages"][0]["content"]
    call_id = second["messages"][-2]["tool_calls"][0]["id"]
    (tool,) = tool_messages(second)
    assert tool["tool_call_id"] == call_id
    payload = json.loads(tool["content"])
    assert payload["place"] == "北京市" and payload["days"][0]["date"] == "2026-11-30"
    expected = ModelTable().cost("gpt-4o-mini", Usage(980, 256, 55))
    assert result.cost_usd == pytest.approx(expected)
    (row,) = rows
    assert (row["route"], row["model"], row["prompt_tokens"], row["cached_tokens"], row["completion_tokens"]) == (
        "llm",
        "gpt-4o-mini",
        980,
        256,
        55,
    )
    assert row["cost_usd"] == pytest.approx(expected) and row["llm_loops"] == 2 and row["llm_attempts"] == 2
    assert json.loads(row["places"]) == ["北京市"] and row["tool_calls"] == 1 and row["tool_failures"] == 0
    assert llm_server.headers[0]["x-stainless-retry-count"] == "0"  # the SDK's own retries are off


def test_two_parallel_tool_calls_run_concurrently(weather_server, llm_server):
    weather_server.delay = 0.4
    llm_server.then(
        tool_calls(
            ("get_weather", {"place": "北京", "date": "明天"}), ("get_weather", {"place": "上海", "date": "明天"})
        ),
        answer("上海更暖和。"),
    )
    with make_router(weather_server, llm_server) as router:
        result = router.ask("北京和上海明天哪个更适合出游", today=TODAY)
    ids = [c["id"] for c in llm_server.requests[1]["messages"][-3]["tool_calls"]]
    tools = tool_messages(llm_server.requests[1])
    assert [t["tool_call_id"] for t in tools] == ids
    assert [json.loads(t["content"])["place"] for t in tools] == ["北京市", "上海市"]
    assert weather_server.max_in_flight == 2  # the two fetches were in progress at the same time
    assert result.llm.places == ["北京市", "上海市"]


@pytest.mark.parametrize(
    "call,error_text",
    [
        (("get_weather", '{"place": "北京", '), "不是合法的 JSON"),
        (("get_weather", {"city": "北京"}), "不认识的参数"),
        (("get_weather", {"date": "明天"}), "缺少必填参数 place"),
        (("run_shell", {"command": "rm -rf /"}), "没有名为 'run_shell' 的工具"),
        (("get_weather", {"place": "纳尼亚"}), "找不到地点"),
    ],
)
def test_bad_tool_calls_go_back_to_the_model_as_errors(weather_server, llm_server, call, error_text):
    llm_server.then(tool_calls(call), answer("抱歉，我查不到。"))
    with make_router(weather_server, llm_server) as router:
        result = router.ask(QUESTION, today=TODAY)
        rows = ledger_rows(router)
    (tool,) = tool_messages(llm_server.requests[1])
    assert error_text in json.loads(tool["content"])["error"]
    assert result.text == "抱歉，我查不到。" and rows[0]["tool_failures"] == 1
    assert weather_server.requests["/v1/forecast"] == 0  # nothing outside a valid declared call ever ran


def test_identical_call_in_one_request_is_answered_from_the_first(weather_server, llm_server):
    call = ("get_weather", {"place": "北京", "date": "明天"})
    llm_server.then(tool_calls(call), tool_calls(call), answer("好的。"))
    with make_router(weather_server, llm_server, ledger="off") as router:
        result = router.ask(QUESTION, today=TODAY)
    assert [t.reused for loop in result.llm.loops for t in loop.tools] == [False, True]
    assert tool_messages(llm_server.requests[2])[0]["content"] == tool_messages(llm_server.requests[2])[1]["content"]


def test_a_model_that_never_stops_calling_tools_gets_a_graceful_end(weather_server, llm_server):
    llm_server.then(tool_calls(("get_weather", {"place": "北京", "date": "明天"})))
    llm_server.repeat_last = True
    with make_router(weather_server, llm_server, ledger="off") as router:
        result = router.ask(QUESTION, today=TODAY)
    assert len(llm_server.requests) == 5 and result.llm.stopped == "max_loops"
    assert result.text.startswith("抱歉，这个问题步骤太多") and "北京市 2026-11-30" in result.text


def test_token_budget_ends_the_loop(weather_server, llm_server):
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京"}), prompt=5_000, completion=100),
        tool_calls(("get_weather", {"place": "上海"}), prompt=5_000, completion=100),
    )
    with make_router(weather_server, llm_server, ledger="off", token_budget=8_000) as router:
        result = router.ask(QUESTION, today=TODAY)
    assert result.llm.stopped == "token_budget" and len(llm_server.requests) == 2


def test_429_with_retry_after_then_success(weather_server, llm_server):
    llm_server.then({"status": 429, "headers": {"retry-after": "1"}}, answer("好。"))
    with make_router(weather_server, llm_server) as router:
        started = time.monotonic()
        result = router.ask(QUESTION, today=TODAY)
        waited = time.monotonic() - started
        rows = ledger_rows(router)
    assert result.text == "好。" and result.llm.attempts == 2 and rows[0]["llm_attempts"] == 2
    # The retry-after honoured, not the millisecond test backoff, and once: not until the deadline.
    assert 1.0 <= waited < midway(1.0, FAST_LLM["deadline"])


def test_500_then_success(weather_server, llm_server):
    llm_server.then({"status": 500}, {"status": 503}, answer("好。"))
    with make_router(weather_server, llm_server, ledger="off") as router:
        result = router.ask(QUESTION, today=TODAY)
    assert result.llm.attempts == 3 and result.llm.loops[0].attempts == 3


def test_timeout_is_retried(weather_server, llm_server):
    llm_server.then({"sleep": 1.5}, answer("好。"))
    with make_router(weather_server, llm_server, ledger="off", call_timeout=0.5) as router:
        result = router.ask(QUESTION, today=TODAY)
    assert result.text == "好。" and result.llm.attempts == 2


def test_every_attempt_failing_ends_in_a_clear_error_within_the_deadline(weather_server, llm_server):
    llm_server.then(*[{"sleep": 3}] * 5)
    with make_router(weather_server, llm_server, call_timeout=0.3, deadline=2.0) as router:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable, match="failed 3 times"):
            router.ask(QUESTION, today=TODAY)
        # Three attempts cut at their timeout, within the deadline; uncut they would take 3 × 3 s.
        assert time.monotonic() - started < midway(2.0, 3 * 3)
        assert ledger_rows(router)[0]["outcome"] == "LLMUnavailable"


def test_retry_after_past_the_deadline_gives_up_at_once(weather_server, llm_server):
    llm_server.then({"status": 429, "headers": {"retry-after": "60"}})
    # A deadline of 30 s, short of the 60 the server asks for: giving up at once is told from waiting until
    # the deadline whatever the machine's load.
    with make_router(weather_server, llm_server, deadline=30.0) as router:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable, match="wait 60"):
            router.ask(QUESTION, today=TODAY)
        assert time.monotonic() - started < midway(0, 30.0)  # at once, not at the deadline


def test_refused_connection(weather_server):
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url="http://127.0.0.1:9/v1")
    with (
        HybridRouter(settings=settings, ledger="off", llm_options=FAST_LLM) as router,
        pytest.raises(LLMUnavailable, match=r"127\.0\.0\.1:9"),
    ):
        router.ask(QUESTION, today=TODAY)


def test_bad_key_message_never_shows_the_key(weather_server, llm_server, tmp_path):
    llm_server.then({"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY}"}}})
    with make_router(weather_server, llm_server, ledger=str(tmp_path / "l.db")) as router:
        with pytest.raises(LLMUnavailable) as caught:
            router.ask(QUESTION, today=TODAY)
        assert "OPENAI_API_KEY" in str(caught.value) and KEY not in str(caught.value)
        assert KEY not in repr(router.agent)
    assert KEY.encode() not in (tmp_path / "l.db").read_bytes()


def test_usage_with_cached_tokens_openai_and_deepseek(weather_server, llm_server):
    llm_server.then(answer("好。", prompt=1_000, completion=100, cached=600))
    with make_router(weather_server, llm_server, ledger="off") as router:
        openai_style = router.ask(QUESTION, today=TODAY)
    llm_server.then(answer("好。", prompt=1_000, completion=100, cached=800, deepseek=True))
    with make_router(weather_server, llm_server, ledger="off", model="deepseek-v4-flash") as router:
        deepseek = router.ask(QUESTION, today=TODAY)
    assert openai_style.llm.usage == Usage(1_000, 600, 100)
    assert openai_style.cost_usd == pytest.approx((400 * 0.15 + 600 * 0.075 + 100 * 0.60) / 1e6)
    assert deepseek.llm.usage == Usage(1_000, 800, 100)
    assert deepseek.cost_usd == pytest.approx((200 * 0.14 + 800 * 0.0028 + 100 * 0.28) / 1e6)
    # The model table's required options reach the wire: thinking off for DeepSeek with tools.
    assert llm_server.requests[-1]["thinking"] == {"type": "disabled"}


@pytest.mark.parametrize(
    "reply",
    [{**answer("好。"), "no_usage": True}, {**answer("好。"), "usage": {"completion_tokens": 3}}],
    ids=["no usage", "no prompt count"],
)
def test_a_reply_that_says_nothing_of_its_usage_is_unknown_not_zero_tokens(weather_server, llm_server, reply):
    # A reply with no usage was stored as 0 tokens and $0: a free answer in savings, where nothing is known.
    llm_server.then(reply)
    with make_router(weather_server, llm_server) as router:
        result = router.ask(QUESTION, today=TODAY)
        (row,) = ledger_rows(router)
    assert result.text == "好。" and result.cost_usd is None and row["cost_usd"] is None
    assert row["prompt_tokens"] is None and "prompt_tokens" in json.loads(row["invalid"])


def test_unknown_model_cost_is_null(weather_server, llm_server):
    llm_server.then(answer("好。"))
    with make_router(weather_server, llm_server, model="my-local-llama") as router:
        result = router.ask(QUESTION, today=TODAY)
        rows = ledger_rows(router)
    assert result.cost_usd is None and rows[0]["cost_usd"] is None


@pytest.mark.parametrize(
    "question",
    ["上海到杭州怎么走", "北京和上海哪个人口多", "北京到上海开车要多久", "顺便查下北京到上海多远",
     "帮我规划上海两天行程", "上海的人口是多少", "深圳明天的新闻", "给杭州写首诗", "广州明天放假吗"],
)  # fmt: skip
def test_no_weather_part_for_a_question_that_asks_nothing_about_the_weather(question):
    # Naming places is not asking about their weather: a degraded answer gives only a part really asked.
    with HybridRouter(settings=Settings(provider="demo", ledger="off")) as router:
        assert router.route(question, today=TODAY).route == "llm"
        assert router.weather_part(question, today=TODAY) is None


ADVICE = ["北京明天适合出游吗", "上海明天穿什么", "广州后天适合爬山吗", "北京明天下雨吗，适合跑步吗",
          "杭州后天适合旅游吗", "成都明天适合出行吗"]  # fmt: skip


@pytest.mark.parametrize("question", ADVICE)
def test_a_weather_part_for_advice_that_rests_on_the_weather(question):
    with HybridRouter(settings=Settings(provider="demo", ledger="off")) as router:
        part = router.weather_part(question, today=TODAY)
        assert part is not None and part.route == "rule" and part.decision.cities


def test_no_key_is_exit_4_with_the_weather_part_answered(weather_server):
    result = CliRunner().invoke(
        cli,
        [QUESTION, "--today", "2026-11-29", "--no-emoji"],
        env={"HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url},
    )
    assert result.exit_code == 4
    assert "只能回答其中的天气部分" in result.output and "北京明天：多云" in result.output
    assert "set OPENAI_API_KEY" in result.output


def test_cli_runs_the_loop_and_explains_it(weather_server, llm_server):
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
        answer("明天北京多云，适合出游。", prompt=560, completion=30),
    )
    result = CliRunner().invoke(
        cli,
        [QUESTION, "--explain", "--today", "2026-11-29"],
        env={
            "HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url,
            "OPENAI_BASE_URL": llm_server.base_url,
            "OPENAI_API_KEY": KEY,
            "HYBRID_WEATHER_MODEL": "gpt-4o-mini",
        },
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "明天北京多云，适合出游。"
    assert any(line.startswith("调用链分析") for line in lines)
    assert any(line.split()[:4] == ["1", "420", "0", "25"] and "get_weather" in line for line in lines)
    assert any(line.split()[:4] == ["2", "560", "0", "30"] for line in lines)


def test_chat_follow_ups_stay_off_the_llm(weather_server, llm_server):
    session = Session()
    with make_router(weather_server, llm_server, ledger="off") as router:
        assert router.ask("上海明天会下雨吗", today=TODAY, session=session).route == "rule"
        follow = router.ask("那北京呢？", today=TODAY, session=session)
        assert follow.route == "rule" and follow.decision.cities == ["北京市"] and follow.decision.aspect == "rain"
        later = router.ask("后天呢", today=TODAY, session=session)
        assert later.decision.cities == ["北京市"] and [d.isoformat() for d in later.decision.dates] == ["2026-12-01"]
        both = router.ask("这两个城市哪个更热？", today=TODAY, session=session)
        assert both.route == "rule" and both.decision.cities == ["上海市", "北京市"] and both.decision.compare == "hot"
        llm_server.then(answer("适合。"))
        router.ask(QUESTION, today=TODAY, session=session)
    assert len(llm_server.requests) == 1
    history = [m["content"] for m in llm_server.requests[0]["messages"][1:-1]]
    assert history[0] == "上海明天会下雨吗" and history[-2] == "这两个城市哪个更热？"


def test_history_sent_to_the_llm_is_bounded(weather_server, llm_server):
    session = Session(history_tokens=200)
    with make_router(weather_server, llm_server, ledger="off") as router:
        for i in range(30):
            router.ask(f"上海明天会下雨吗{'吧' * i}", today=TODAY, session=session)
        llm_server.then(answer("好。"))
        router.ask(QUESTION, today=TODAY, session=session)
    sent = llm_server.requests[0]["messages"]
    assert sum(len(m["content"] or "") for m in sent[1:-1]) <= 200 + 100  # the newest turn is kept whole
    assert sent[-1]["content"] == QUESTION


def test_async_llm_route(weather_server, llm_server):
    import asyncio

    llm_server.then(answer("好。"))
    with make_router(weather_server, llm_server, ledger="off") as router:
        result = asyncio.run(router.aask(QUESTION, today=TODAY))
    assert result.route == "llm" and result.text == "好。"


@pytest.mark.skipif(
    not (LIVE_LLM_WANTED and "OPENAI_API_KEY" in LIVE_LLM),
    reason="live test: set HYBRID_WEATHER_LIVE_LLM=1 and OPENAI_API_KEY to run against a real endpoint",
)
def test_live_endpoint(monkeypatch):
    for name, value in LIVE_LLM.items():  # the autouse fixture cleared them; this test is the one that wants them
        monkeypatch.setenv(name, value)
    with HybridRouter(provider="demo", ledger="off") as router:
        result = router.ask(QUESTION)
    assert result.route == "llm" and result.text and result.llm.usage.prompt_tokens > 0


def test_mixed_run_then_savings_report_exact_figures(weather_server, llm_server, tmp_path):
    env = {
        "HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url,
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": KEY,
        "HYBRID_WEATHER_MODEL": "gpt-4o-mini",
        "HYBRID_WEATHER_LEDGER": str(tmp_path / "mixed.db"),
    }
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25, cached=100),
        answer("适合。", prompt=560, completion=30, cached=400),
        answer("不建议。", prompt=300, completion=20),
    )
    queries = [
        "上海今天天气",
        "魔都明天会下雨吗",
        "北京和上海明天哪个冷",
        "明天会下雨吗",
        QUESTION,
        "上海明天适合跑步吗",
    ]
    for query in queries:
        result = CliRunner().invoke(cli, [query, "--today", "2026-11-29"], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    report = json.loads(
        CliRunner().invoke(cli, ["savings", "--days", "30", "--json"], env=env, catch_exceptions=False).output
    )
    assert report["requests"] == 6 and report["by_route"] == {"rule": 3, "clarify": 1, "llm": 2}
    table = ModelTable()
    spent = table.cost("gpt-4o-mini", Usage(980, 500, 55)) + table.cost("gpt-4o-mini", Usage(300, 0, 20))
    assert report["actual_cost_usd"] == pytest.approx(spent, abs=1e-8)
    one, two = (425 * 0.15 + 75 * 0.60) / 1e6, (1275 * 0.15 + 225 * 0.60) / 1e6
    assert report["baseline_cost_usd"] == pytest.approx(one + one + two + one + spent, abs=1e-8)
    assert report["baseline_method"].startswith("default: published gpt-4o-mini measurements")
    assert report["llm_loops"] == {"1": 1, "2": 1} and report["tool_success_rate"] == 1.0


def test_shadow_mode_measures_real_cost_and_agreement(weather_server, llm_server, tmp_path):
    # The fake forecast for today: 多云, 8~15°C. One shadow answer agrees, one gets the numbers wrong.
    llm_server.then(
        answer("上海今天多云，8到15度。", prompt=500, completion=40),
        answer("北京今天晴，20~28°C。", prompt=500, completion=40),
    )
    settings = Settings(
        open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url, model="gpt-4o-mini"
    )
    path = tmp_path / "shadow.db"
    with HybridRouter(
        settings=settings, ledger=str(path), http_options=FAST_HTTP, llm_options=FAST_LLM, shadow_rate=1.0
    ) as router:
        first = router.ask("上海今天天气", today=TODAY)
        router.parts.shadow.wait()  # one at a time, so the script's order is the rows' order
        router.ask("北京今天天气", today=TODAY)
    assert first.route == "rule"  # the user's answer never waits for the shadow run
    with sqlite3.connect(path) as db:
        shadows = db.execute(
            "SELECT query, cost_usd, agreement FROM requests WHERE route='shadow' ORDER BY id"
        ).fetchall()
        db.row_factory = sqlite3.Row
        report = savings_report(db, 30)
    cost = ModelTable().cost("gpt-4o-mini", Usage(500, 0, 40))
    assert shadows == [("上海今天天气", pytest.approx(cost), 1), ("北京今天天气", pytest.approx(cost), 0)]
    assert report["requests"] == 2 and report["by_route"] == {"rule": 2, "clarify": 0, "llm": 0}
    assert report["shadow"] == {"runs": 2, "cost_usd": pytest.approx(2 * cost), "agreement_rate": 0.5, "judged": 2}
    assert report["actual_cost_usd"] == pytest.approx(2 * cost)  # shadow spend is real spend


def test_enough_shadow_runs_set_the_baseline(tmp_path):
    from hybrid_weather.router.ledger import Ledger, LedgerEntry

    ledger = Ledger(tmp_path / "l.db", model="gpt-4o-mini")
    now = time.time()
    for i in range(12):
        ledger.record(LedgerEntry(started_at=now - 100 + i, route="rule", query="q", places=("上海市",)))
        ledger.record(
            LedgerEntry(
                started_at=now - 50 + i, route="shadow", query="q", places=("上海市",), cost_usd=0.0002, agreement=True
            )
        )
    ledger.close()
    db = sqlite3.connect(tmp_path / "l.db")
    db.row_factory = sqlite3.Row
    report = savings_report(db, 30)
    assert report["baseline_method"].startswith("shadow: rule answers at the mean cost of 12 shadow LLM runs")
    assert report["baseline_cost_usd"] == pytest.approx(12 * 0.0002)
    assert report["actual_cost_usd"] == pytest.approx(12 * 0.0002) and report["saved_usd"] == pytest.approx(0.0)


def _misses_env(weather_server, llm_server, tmp_path):
    """The environment of a CLI run whose LLM answers and whose ledger `misses` reads."""
    return {
        "HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url,
        "OPENAI_BASE_URL": llm_server.base_url,
        "OPENAI_API_KEY": KEY,
        "HYBRID_WEATHER_MODEL": "gpt-4o-mini",
        "HYBRID_WEATHER_LEDGER": str(tmp_path / "misses.db"),
    }


def test_misses_groups_plain_lookups_by_the_words_the_router_did_not_know(weather_server, llm_server, tmp_path):
    env = _misses_env(weather_server, llm_server, tmp_path)
    lookup = ("get_weather", {"place": "北京", "date": "明天"})
    llm_server.then(
        # 遛狗 is a word the router does not know; the model only looked the weather up: a miss, twice.
        tool_calls(lookup, prompt=400, completion=20),
        answer("北京明天多云。", prompt=500, completion=20),
        tool_calls(lookup, prompt=400, completion=20),
        answer("北京明天多云。", prompt=500, completion=20),
        # An open-ended question answered with two places is no plain lookup.
        tool_calls(lookup, ("get_weather", {"place": "上海", "date": "明天"}), prompt=400, completion=20),
        answer("都可以。", prompt=500, completion=20),
    )
    for query in ("北京明天遛狗天气", "北京明天遛狗天气", "北京和上海明天哪个适合出游"):
        result = CliRunner().invoke(cli, [query, "--today", "2026-11-29"], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    report = json.loads(CliRunner().invoke(cli, ["misses", "--json"], env=env, catch_exceptions=False).output)
    cost = 2 * ModelTable().cost("gpt-4o-mini", Usage(900, 0, 40))
    assert report["plain_lookups"] == 2 and report["cost_usd"] == pytest.approx(cost)
    assert [(w["word"], w["count"]) for w in report["words"]] == [("遛狗", 2)]
    assert report["words"][0]["examples"] == ["北京明天遛狗天气"]
    text = CliRunner().invoke(cli, ["misses"], env=env, catch_exceptions=False).output
    assert "2 requests went to the LLM but were plain lookups" in text and "遛狗" in text


def test_a_question_an_open_ended_word_sent_to_the_llm_is_no_miss(weather_server, llm_server, tmp_path):
    # 适合 sends a question to the LLM on purpose: answered with one lookup of one place and day, it is still
    # no plain lookup, and `misses` never proposes 适合 as a word to teach.
    env = _misses_env(weather_server, llm_server, tmp_path)
    lookup = ("get_weather", {"place": "北京", "date": "明天"})
    llm_server.then(tool_calls(lookup, prompt=400, completion=20), answer("适合。", prompt=500, completion=20))
    result = CliRunner().invoke(cli, ["北京明天适合爬山吗", "--today", "2026-11-29"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(CliRunner().invoke(cli, ["misses", "--json"], env=env, catch_exceptions=False).output)
    assert report["plain_lookups"] == 0 and report["words"] == []


def test_a_caller_may_name_another_model_of_the_table_and_no_model_outside_it(weather_server, llm_server):
    from hybrid_weather.agent.errors import ConfigurationError

    with make_router(weather_server, llm_server) as router:
        llm_server.then(answer("适合。", prompt=300, completion=10))
        named = router.ask("北京明天适合出游吗", today=TODAY, model="deepseek-chat")
        assert named.model == "deepseek-chat" and llm_server.requests[-1]["model"] == "deepseek-chat"
        assert named.cost_usd == router.models.cost("deepseek-chat", named.llm.usage)  # priced as that model
        with pytest.raises(ConfigurationError, match="not in the price table"):
            router.ask("北京明天适合出游吗", today=TODAY, model="no-such-model")
        assert router.ask("上海今天天气", today=TODAY, model="deepseek-chat").route == "rule"
        assert [row["model"] for row in ledger_rows(router)] == ["deepseek-chat", None]


def _router_with_table(weather_server, llm_server, home, table):
    home.mkdir(parents=True, exist_ok=True)
    (home / "models.json").write_text(json.dumps(table), "utf-8")
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url,
                        model="gpt-4o-mini", home=home)  # fmt: skip
    return HybridRouter(settings=settings, ledger="off", http_options=FAST_HTTP, llm_options=FAST_LLM)


def test_a_models_temperature_and_max_tokens_reach_the_model_and_a_request_may_set_its_own(
    weather_server, llm_server, tmp_path
):
    table = {"models": {"gpt-4o-mini": {"temperature": 0.2, "max_tokens": 300}}}
    with _router_with_table(weather_server, llm_server, tmp_path / "home", table) as router:
        llm_server.then(answer("适合。"), answer("适合。"))
        router.ask("北京明天适合出游吗", today=TODAY)
        sent = llm_server.requests[-1]
        assert (sent["temperature"], sent["max_tokens"]) == (0.2, 300)
        router.ask("北京明天适合出游吗", today=TODAY, sampling={"temperature": 0.9})
        sent = llm_server.requests[-1]
        assert (sent["temperature"], sent["max_tokens"]) == (0.9, 300)  # the request's own, the table's rest
        from hybrid_weather.agent.errors import ConfigurationError

        for wrong in ({"temperature": 2.5}, {"max_tokens": 0}, {"max_tokens": 1.5}, {"top_k": 3}):
            with pytest.raises(ConfigurationError, match="sampling"):
                router.ask("北京明天适合出游吗", today=TODAY, sampling=wrong)
        assert len(llm_server.requests) == 2


@pytest.mark.parametrize(
    "facts, named",
    [({"temperature": 3}, "gpt-4o-mini.temperature"), ({"max_tokens": -1}, "gpt-4o-mini.max_tokens"),
     ({"temperature": "hot"}, "gpt-4o-mini.temperature")],
)  # fmt: skip
def test_a_model_setting_out_of_bounds_is_refused_naming_the_model_and_field(
    weather_server, llm_server, tmp_path, facts, named
):
    from hybrid_weather.agent.errors import ConfigurationError

    table = {"models": {"gpt-4o-mini": facts}}
    with _router_with_table(weather_server, llm_server, tmp_path / "home", table) as router:
        assert router.ask("上海今天天气", today=TODAY).route == "rule"  # rule answers need no model
        with pytest.raises(ConfigurationError, match=named.replace(".", r"\.")):
            router.ask("北京明天适合出游吗", today=TODAY)
    assert llm_server.requests == []


def test_a_fallback_model_answers_when_the_primary_fails_each_on_its_own_endpoint_and_key(
    weather_server, tmp_path, monkeypatch
):
    from click.testing import CliRunner

    from fake_openai import FakeOpenAI

    primary, fallback = FakeOpenAI().start(), FakeOpenAI().start()
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(json.dumps({"models": {
        "deepseek-chat": {"base_url": fallback.base_url, "api_key_env": "DEEPSEEK_API_KEY"}}}), "utf-8")  # fmt: skip
    env = {"HYBRID_WEATHER_HOME": str(home), "HYBRID_WEATHER_MODEL": "gpt-4o-mini,deepseek-chat",
           "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": primary.base_url, "DEEPSEEK_API_KEY": "sk-deepseek-own-1",
           "HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url,
           "HYBRID_WEATHER_LEDGER": str(tmp_path / "l.db")}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        for step in ({"status": 500},) * 5:
            primary.then(step)
        fallback.then(answer("适合出游。", prompt=300, completion=12))
        with HybridRouter(llm_options=FAST_LLM) as router:
            got = router.ask("北京明天适合出游吗", today=TODAY)
            assert got.model == "deepseek-chat" and got.text == "适合出游。"
            assert [model for model, _ in got.fallbacks] == ["gpt-4o-mini"]
            assert got.cost_usd == router.models.cost("deepseek-chat", got.llm.usage)
            rows = ledger_rows(router)
        assert [row["model"] for row in rows] == ["deepseek-chat"]
        assert fallback.headers[-1]["authorization"] == "Bearer sk-deepseek-own-1"  # its own key, not OpenAI's
        assert len(primary.requests) >= 2  # retried before the fallback was asked
        # --explain shows the hop; with every model failing, the last error is the answer (exit 4).
        fallback.then(answer("适合出游。"))
        for step in ({"status": 500},) * 5:
            primary.then(step)
        shown = CliRunner().invoke(cli, ["北京明天适合出游吗", "--explain", "--today", TODAY.isoformat()])
        assert "fallback: gpt-4o-mini failed" in shown.output and "model deepseek-chat" in shown.output
        failed = CliRunner().invoke(cli, ["北京明天适合出游吗", "--today", TODAY.isoformat()])
        assert failed.exit_code == 4
    finally:
        primary.stop()
        fallback.stop()


def test_the_models_deadline_starts_once_its_client_is_built(weather_server, llm_server, monkeypatch):
    """The client's build (the `openai` import: seconds on a loaded machine, when connect_llm was not called)
    is not the model's time: an import that outlasts the deadline does not end the question unasked."""
    llm_server.then(answer("好。"))
    with make_router(weather_server, llm_server, deadline=0.5) as router:
        agent = router.agent
        build = agent._client_once

        def slow_build():
            if agent._client is None:
                time.sleep(0.6)  # longer than the whole deadline
            return build()

        monkeypatch.setattr(agent, "_client_once", slow_build)
        result = router.ask(QUESTION, today=TODAY)
    assert result.text == "好。" and len(llm_server.requests) == 1

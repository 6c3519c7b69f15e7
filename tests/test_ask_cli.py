"""`hybrid-weather QUERY`: answers, --json, --explain, and the exit codes of docs/contracts.md."""

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from hybrid_weather.router.cli import cli

from fake_weather import refused_url
from support import subprocess_env


def invoke(args, **env):
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def test_answers_from_the_server_named_in_the_environment(weather_server):
    weather_server.set_day(
        31.2304,
        121.4737,
        __import__("datetime").date(2026, 11, 30),
        weather_code=63,
        precipitation_probability_max=90,
        precipitation_sum=12.5,
    )
    result = invoke(["魔都明天会下雨吗", "--today", "2026-11-29"], HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
    assert result.exit_code == 0
    assert "上海明天可能下雨（中雨，降水概率90%，预计12.5毫米），记得带伞。" in result.output


def test_the_real_console_script_over_the_wire(weather_server):
    # The installed entry point, in a fresh process, exactly as a user runs it.
    env = subprocess_env(HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url, PATH="", NO_COLOR="1")
    result = subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", "上海今天天气", "--today", "2026-11-29"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("上海今天：现在多云，12°C；多云，8°C~15°C")


def test_json_and_explain(weather_server):
    result = invoke(
        ["上海今天天气", "--json", "--today", "2026-11-29"], HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url
    )
    payload = json.loads(result.output)
    assert payload["route"] == "rule" and payload["source"] == "open-meteo" and payload["stale"] is False
    result = invoke(
        ["上海今天天气", "--explain", "--no-emoji", "--today", "2026-11-29"],
        HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url,
    )
    assert "reason:   rule: 1 place(s), 1 day(s), weather" in result.output
    assert "cache:    hit · provider open-meteo" in result.output  # the first ask left it in the disk cache
    result = invoke(
        ["上海今天天气", "--explain", "--no-cache", "--today", "2026-11-29"],
        HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url,
    )
    assert "cache:    miss · provider open-meteo" in result.output


def test_weather_service_down_exits_3_with_a_clear_message():
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["上海今天天气"], env={"HYBRID_WEATHER_OPEN_METEO_URL": refused_url()})
    assert result.exit_code == 3
    assert time.monotonic() - started < 5.5
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Open-Meteo" in lines[0] and "--provider demo" in lines[0]


def test_llm_question_without_an_llm_exits_4():
    result = CliRunner().invoke(cli, ["北京明天适合出游吗"])
    assert result.exit_code == 4 and "OPENAI_API_KEY" in result.output


def test_clarify_is_an_answer():
    result = invoke(["明天会下雨吗"])
    assert result.exit_code == 0 and "哪个城市" in result.output


def test_usage_errors_exit_2():
    assert CliRunner().invoke(cli, ["上海今天天气", "--provider", "nope"]).exit_code == 2
    result = CliRunner().invoke(cli, ["上海今天天气"], env={"HYBRID_WEATHER_CACHE_TTL": "ten"})
    assert result.exit_code == 2 and "HYBRID_WEATHER_CACHE_TTL" in result.output
    result = CliRunner().invoke(cli, ["上海今天天气", "--provider", "amap"])
    assert result.exit_code == 2 and "AMAP_KEY" in result.output
    result = CliRunner().invoke(cli, ["上海今天天气"], env={"HYBRID_WEATHER_OPEN_METEO_URL": "ftp://nowhere"})
    assert result.exit_code == 2 and "URL" in result.output


def test_demo_provider_works_offline_and_says_so():
    result = invoke(["上海今天天气", "--provider", "demo", "--json"])
    payload = json.loads(result.output)
    assert payload["source"] == "demo" and payload["answer"].startswith("【演示数据】")


def test_no_emoji_and_no_color(weather_server):
    result = invoke(["上海今天天气", "--today", "2026-11-29"], HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
    assert "⛅" in result.output
    result = invoke(
        ["上海今天天气", "--today", "2026-11-29"], HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url, NO_COLOR="1"
    )
    assert "⛅" not in result.output


def test_every_command_has_help():
    for name, command in cli.commands.items():
        assert command.help, name
        assert CliRunner().invoke(cli, [name, "--help"]).exit_code == 0


def test_every_command_is_documented_in_the_readme():
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text("utf-8")
    for name in cli.commands:
        assert f"hybrid-weather {name}" in readme or (name == "ask" and 'hybrid-weather "' in readme), name


def test_public_api_is_exactly_this():
    import hybrid_weather.router as router

    assert sorted(router.__all__) == [
        "Answer",
        "ConfigurationError",
        "Decision",
        "HybridRouter",
        "HybridWeatherError",
        "InvalidQuestion",  # a question past MAX_QUESTION_CHARS (issue 36)
        "LLMUnavailable",
        "Session",
        "Settings",
        "TextPiece",  # ask(on_text=...): an answer's text as it is produced (issue 40)
        "ToolContext",  # the tool registry (issue 16)
        "ToolError",
        "WeatherUnavailable",
        "tool",
    ]
    for name in router.__all__:
        assert getattr(router, name).__doc__


@pytest.mark.parametrize(
    "package",
    [
        "hybrid_weather.router",
        "hybrid_weather.agent",
        "hybrid_weather.rules",
        "hybrid_weather.agent.weather",
        "hybrid_weather.agent.llm",
        "hybrid_weather.router.understand",
        "hybrid_weather.router.answer",
        "hybrid_weather.router.ledger",
    ],
)
def test_every_package_has_a_public_face(package):
    import importlib

    module = importlib.import_module(package)
    assert module.__doc__ and module.__all__ == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names {name}, which it does not define"


# -- a question is at most MAX_QUESTION_CHARS long, on every path (serve's 422 is the same limit) ------------


def test_a_question_past_the_limit_is_refused_before_routing_the_llm_or_the_ledger(tmp_path, llm_server):
    import asyncio
    import sqlite3

    from hybrid_weather.router import HybridRouter, InvalidQuestion, Settings
    from hybrid_weather.router.serve import app
    from hybrid_weather.rules import MAX_QUESTION_CHARS

    from support import FAST_LLM, TODAY

    assert app.MAX_QUERY_CHARS == MAX_QUESTION_CHARS == 2_000  # one limit, serve's 422 included
    ledger = tmp_path / "l.db"
    settings = Settings(provider="demo", openai_api_key="k", openai_base_url=llm_server.base_url)
    at_limit = "上海今天天气" + " " * (MAX_QUESTION_CHARS - 6)
    with HybridRouter(settings=settings, ledger=str(ledger), llm_options=FAST_LLM) as router:
        assert router.ask(at_limit, today=TODAY).route == "rule"
        for too_long in (at_limit + " ", "北京明天适合出游吗" * 1_000):
            with pytest.raises(InvalidQuestion, match="at most 2,000"):
                router.ask(too_long, today=TODAY)
            with pytest.raises(InvalidQuestion):
                asyncio.run(router.aask(too_long, today=TODAY))
    assert llm_server.requests == []  # the LLM never saw one
    with sqlite3.connect(ledger) as db:
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone() == (1,)  # the one at the limit


def test_the_cli_refuses_a_question_past_the_limit_in_one_line():
    too_long = "上海今天天气" + "。" * 2_000
    for how in ([too_long], []):
        result = subprocess.run([sys.executable, "-m", "hybrid_weather.router", *how, "--provider", "demo"],
                                input="" if how else too_long, capture_output=True, text=True,
                                env=subprocess_env(HYBRID_WEATHER_LEDGER="off"), timeout=60)  # fmt: skip
        assert result.returncode == 2 and result.stdout == "", result.stdout
        assert result.stderr.count("\n") == 1 and "at most 2,000" in result.stderr
    as_json = invoke([too_long, "--json", "--provider", "demo"], HYBRID_WEATHER_LEDGER="off")
    payload = json.loads(as_json.output)
    assert as_json.exit_code == 2 and payload["error"]["type"] == "InvalidQuestion"
    chat = CliRunner().invoke(cli, ["chat", "--provider", "demo", "--today", "2026-11-29"],
                              input=too_long + "\n上海明天天气\n", env={"HYBRID_WEATHER_LEDGER": "off"})  # fmt: skip
    assert chat.exit_code == 0 and "at most 2,000" in chat.output and "上海明天" in chat.output


def test_the_ledger_and_the_reports_cut_what_they_keep_and_print(tmp_path):
    from hybrid_weather.agent.llm import Usage
    from hybrid_weather.router.ledger import Ledger, LedgerEntry
    from hybrid_weather.rules import MAX_QUESTION_CHARS

    ledger = tmp_path / "l.db"
    store = Ledger(ledger)
    # Rows that came another way than ask(): a program's own entry, with a word and an address at the cut.
    address_at_the_cut = "上" * (MAX_QUESTION_CHARS - 5) + "zhang.san@example.com" + "天" * 9_000
    for query in (address_at_the_cut, "遛狗" * 6_000):
        store.record(LedgerEntry(started_at=time.time(), route="llm", query=query, model="m-" + "x" * 500,
                                 usage=Usage(100, 0, 30), cost_usd=0.001, plain_lookup=True,
                                 unknown_words=("遛" * 5_000,)))  # fmt: skip
    store.close()
    import sqlite3

    with sqlite3.connect(ledger) as db:
        stored = [row[0] for row in db.execute("SELECT query FROM requests ORDER BY id")]
    assert all(len(query) <= MAX_QUESTION_CHARS for query in stored)
    assert "zhang" not in stored[0] and "@" not in stored[0]
    env = {"HYBRID_WEATHER_LEDGER": str(ledger)}
    report = json.loads(invoke(["misses", "--json"], **env).output)
    texts = [w["word"] for w in report["words"]] + [e for w in report["words"] for e in w["examples"]]
    assert texts and all(len(text) <= MAX_QUESTION_CHARS for text in texts)
    for args in (["misses"], ["savings", "--by", "model"]):
        result = invoke(args, **env)
        assert result.exit_code == 0 and max(len(line) for line in result.output.splitlines()) <= 300, args

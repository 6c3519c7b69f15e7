"""`hybrid-weather QUERY`: answers, --json, --explain, and the exit codes of docs/contracts.md."""

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from hybrid_weather.router.cli import cli

from conftest import subprocess_env
from fake_weather import refused_url


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
        "LLMUnavailable",
        "Session",
        "Settings",
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

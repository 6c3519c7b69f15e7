"""`hybrid-weather route` as docs/contracts.md specifies it."""

import json
import subprocess
import sys

from click.testing import CliRunner

from hybrid_weather.router.cli import cli

KEYS = ["query", "route", "cities", "dates", "aspect", "reason", "reason_code"]


def invoke(args, stdin=None):
    return CliRunner().invoke(cli, args, input=stdin, catch_exceptions=False)


def test_json_lines_from_stdin_in_input_order():
    queries = ["上海今天天气", "北京明天适合出游吗", "明天会下雨吗", "北京和上海明天哪个冷"]
    result = invoke(["route", "--json", "--today", "2026-11-29"], "\n".join(queries) + "\n")
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [row["query"] for row in rows] == queries
    assert all(list(row) == KEYS for row in rows)
    assert rows[0] == {
        "query": "上海今天天气",
        "route": "rule",
        "cities": ["上海市"],
        "dates": ["2026-11-29"],
        "aspect": "weather",
        "reason": rows[0]["reason"],
        "reason_code": "lookup",
    }
    assert [row["route"] for row in rows] == ["rule", "llm", "clarify", "rule"]
    assert rows[3]["cities"] == ["北京市", "上海市"] and rows[3]["dates"] == ["2026-11-30"]


def test_queries_as_arguments_and_plain_output():
    result = invoke(["route", "--today", "2026-11-29", "魔都明天会下雨吗"])
    assert result.exit_code == 0
    assert result.output.startswith("rule\t上海市\t2026-11-30\train\t魔都明天会下雨吗\t# ")


def test_blank_and_hostile_lines_still_get_one_row_each():
    result = invoke(["route", "--json"], "\n<script>x</script>\n\x00\n")
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 3 and all(row["route"] in {"rule", "clarify", "llm"} for row in rows)


def test_bad_today_is_a_usage_error():
    result = CliRunner().invoke(cli, ["route", "--today", "tomorrow", "上海"])
    assert result.exit_code == 2
    assert "YYYY-MM-DD" in result.output


def test_route_does_not_import_openai_or_touch_the_network():
    code = (
        "import sys, socket\n"
        "def no_network(*a, **k): raise AssertionError('network used')\n"
        "socket.socket.connect = no_network\n"
        "from hybrid_weather.router.cli import cli\n"
        "try:\n"
        "    cli(['route', '--json', '上海今天天气', '北京明天适合出游吗'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "assert 'pypinyin' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2


def test_a_today_outside_the_supported_range_is_a_usage_error():
    for day in ("9999-12-31", "0001-01-01"):
        result = CliRunner().invoke(cli, ["route", "--today", day, "上海今天天气"])
        assert result.exit_code == 2 and "outside 1970-01-01 to 2099-12-31" in result.output

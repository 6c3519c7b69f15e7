"""The CLI keeps its word (issue 12): each point over the real console script's code path, in a fresh
process (`python -m hybrid_weather.router` runs entry.main, as the installed script does)."""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from fake_weather import refused_url
from support import console, subprocess_env

TODAY = ["--today", "2026-11-29"]


def one_json_object(stdout):
    """The whole of stdout is one JSON object (json.loads fails on anything after it)."""
    return json.loads(stdout)


# -- --json: one object, whatever happens -------------------------------------------------------------


def test_json_on_the_no_llm_path_is_one_object_with_the_weather_part():
    result = console("北京明天天气怎么样，适合出游吗", "--json", "--provider", "demo", *TODAY)
    assert result.returncode == 4
    payload = one_json_object(result.stdout)
    assert payload["error"]["type"] == "LLMUnavailable" and "OPENAI_API_KEY" in payload["error"]["message"]
    assert payload["partial"]["route"] == "rule" and "北京明天" in payload["partial"]["answer"]


def test_json_with_explain_carries_the_explanation_inside(weather_server):
    result = console("上海今天天气", "--json", "--explain", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
    payload = one_json_object(result.stdout)
    assert payload["explain"]["cache"] == "miss" and payload["explain"]["reason"].startswith("rule:")


def test_json_has_every_key_on_every_route_and_no_emoji(weather_server):
    keys = {"query", "route", "answer", "decision", "data", "source", "stale", "stale_age_s", "latency_ms",
            "cost_usd", "attribution", "request_id"}  # fmt: skip
    for question, route in (("上海今天天气", "rule"), ("明天会下雨吗", "clarify")):
        result = console(question, "--json", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
        payload = one_json_object(result.stdout)
        assert payload["route"] == route and keys <= set(payload), set(payload) ^ keys
    assert payload["attribution"] is None and payload["stale_age_s"] is None
    sunny = one_json_object(console("上海今天天气", "--json", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
                            .stdout)  # fmt: skip
    assert not any(0x2600 <= ord(c) <= 0x27BF or ord(c) >= 0x1F300 for c in sunny["answer"])


def test_json_errors_are_objects_too():
    result = console("上海今天天气", "--json", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=refused_url())
    assert result.returncode == 3
    payload = one_json_object(result.stdout)
    assert payload["error"]["type"] == "UpstreamConnectError" and payload["query"] == "上海今天天气"


@pytest.mark.parametrize(
    "args, stdin, env",
    [
        (["--json", "--provider", "demo"], "上海今天天气".encode("gbk"), {}),  # stdin that is not UTF-8
        (["上海今天天气", "--json", "--today", "nope"], "", {}),
        (["上海今天天气", "--json", "--today", "9999-12-31"], "", {}),
        ([b"\xc9\xcf".decode("utf-8", "surrogateescape"), "--json"], "", {}),  # an argument that is not UTF-8
        (["上海今天天气", "--json", "--bogus"], "", {}),
        (["ask", "--json"], "", {}),
        (["route", "--json", "--today", "nope"], "上海今天天气\n", {}),
        (["savings", "--json"], "", {"HYBRID_WEATHER_LEDGER": "off"}),
        (["savigns", "--json"], "", {}),
    ],
)
def test_json_is_one_object_for_a_usage_error_too(args, stdin, env):
    # Non-UTF-8 stdin and a bad --today printed nothing on stdout with --json: a script found no object.
    result = console(*args, stdin=stdin, **env)
    payload = one_json_object(result.stdout)
    assert result.returncode == 2 and result.stderr == "", result.stderr
    assert set(payload["error"]) == {"type", "message"} and payload["error"]["message"]
    if args[0] not in ("route", "savings", "savigns"):  # a question's object names it, null if none was read
        assert set(payload) == {"query", "error"}


# -- exit codes and one-line errors ---------------------------------------------------------------------


def _interruptible() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test run started in the background (`pytest &`,
    a script's job) ignores SIGINT, and so would every process it starts: Python then never raises
    KeyboardInterrupt, and these tests timed out or saw the question run on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_a_request_exits_130_quietly(llm_server):
    # The request a model takes a minute to answer: in flight however long the process took to start. (A
    # weather fetch's 5 s deadline passed in a loaded machine's start-up, and the fetch ended before the ^C.)
    llm_server.then({"sleep": 60})
    child = subprocess.Popen(
        [sys.executable, "-m", "hybrid_weather.router", "北京明天适合出游吗", "--provider", "demo"],
        env=subprocess_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.base_url,
                           HYBRID_WEATHER_MODEL="gpt-4o-mini"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not llm_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm_server.requests, "the question never reached the model"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "internal error" not in err and "Traceback" not in err and err.strip() == ""


def test_ctrl_c_at_the_chat_prompt_exits_130_and_ctrl_d_exits_0():
    child = subprocess.Popen(
        [sys.executable, "-m", "hybrid_weather.router", "chat", "--provider", "demo"],
        env=subprocess_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    # At the prompt once it is shown (a fixed pause was not long enough for a start-up under load).
    shown, deadline = b"", time.monotonic() + 60
    while "你> ".encode() not in shown and child.poll() is None and time.monotonic() < deadline:
        if select.select([child.stderr], [], [], 0.5)[0]:
            shown += os.read(child.stderr.fileno(), 4096)
    child.send_signal(signal.SIGINT)
    child.wait(30)  # stdin open until it has: closed at once, its end could be read first, as a Ctrl-D
    out, err = child.communicate(timeout=30)
    err = (shown + err).decode("utf-8", "replace")
    assert "你> " in err, err
    assert child.returncode == 130 and "Traceback" not in err and out == b""
    ended = console("chat", "--provider", "demo", stdin="")
    assert ended.returncode == 0 and ended.stdout == "" and ended.stderr.endswith("\n")


@pytest.mark.parametrize("args", [[], ["-h"], ["--help"], ["help"]])
def test_help_in_every_form_exits_0(args):
    result = console(*args)
    assert result.returncode == 0 and "Usage:" in result.stdout and "savings" in result.stdout


def test_usage_errors_are_one_line_with_exit_2():
    result = console("上海今天天气", "--provider", "nope")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("Error: ") and "nope" in result.stderr


def test_configuration_errors_exit_2(weather_server, tmp_path):
    result = console("savings", HYBRID_WEATHER_LEDGER="off")
    assert result.returncode == 2 and "HYBRID_WEATHER_LEDGER=off" in result.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", "utf-8")
    result = console("simulate", str(empty))
    assert result.returncode == 2 and "no queries" in result.stderr
    result = console("上海今天天气", "--provider", "amap", AMAP_KEY="wrong", HYBRID_WEATHER_AMAP_URL=weather_server.url)
    assert result.returncode == 2 and "AMAP_KEY" in result.stderr
    result = console("上海今天天气", HYBRID_WEATHER_OPEN_METEO_URL="ftp://nowhere")
    assert result.returncode == 2 and "HYBRID_WEATHER_OPEN_METEO_URL" in result.stderr


def test_the_offline_hint_only_when_no_connection_could_be_made(weather_server):
    refused = console("上海今天天气", HYBRID_WEATHER_OPEN_METEO_URL=refused_url())
    assert refused.returncode == 3 and "offline?" in refused.stderr
    weather_server.fail("/v1/forecast", "400")
    rejected = console("上海今天天气", HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
    assert rejected.returncode == 3 and "offline?" not in rejected.stderr and "HTTP 400" in rejected.stderr


def test_a_malformed_models_json_spares_rule_answers_and_names_itself_for_the_llm(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text('["not", "a table"]', "utf-8")
    rule = console("上海今天天气", "--provider", "demo", HYBRID_WEATHER_HOME=str(home))
    assert rule.returncode == 0 and "上海今天" in rule.stdout
    llm = console("北京明天适合出游吗", "--provider", "demo", HYBRID_WEATHER_HOME=str(home), OPENAI_API_KEY="sk-x")
    assert llm.returncode == 2 and "models.json" in llm.stderr and "internal error" not in llm.stderr


# -- input ----------------------------------------------------------------------------------------------


def test_the_question_from_stdin_or_from_unquoted_words():
    piped = console("--provider", "demo", *TODAY, stdin="上海今天天气\n")
    words = console("--provider", "demo", *TODAY, "上海", "今天", "天气")
    quoted = console("上海今天天气", "--provider", "demo", *TODAY)
    assert piped.returncode == words.returncode == quoted.returncode == 0
    assert piped.stdout == words.stdout == quoted.stdout and "上海今天" in quoted.stdout


# -- chat -----------------------------------------------------------------------------------------------


def test_chat_prompts_on_stderr_answers_on_stdout_and_json_per_turn():
    result = console("chat", "--provider", "demo", "--json", *TODAY, stdin="上海明天会下雨吗\n那北京呢？\n退出\n")
    assert result.returncode == 0
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["decision"]["cities"] for t in turns] == [["上海市"], ["北京市"]]
    assert "退出" in result.stderr and "你> " in result.stderr  # banner and prompts, kept off stdout


# -- simulate and savings -------------------------------------------------------------------------------


def test_simulate_reads_json_lines_and_a_free_model_saves_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text('{"models": {"my-llama": {"input": 0, "output": 0}}}', "utf-8")
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "上海今天天气"}\n{"query": "北京明天适合出游吗", "user": 7}\n{}\n', "utf-8")
    result = console("simulate", str(log), "--model", "my-llama", "--json", HYBRID_WEATHER_HOME=str(home))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 2 and report["by_route"]["rule"] == 1 and report["saved_pct"] == 0.0
    text = console("simulate", str(log), "--model", "my-llama", HYBRID_WEATHER_HOME=str(home))
    assert text.returncode == 0 and "(0.0%)" in text.stdout


def test_simulate_reads_utf8_or_the_encoding_it_is_told_and_refuses_what_it_cannot_decode(tmp_path):
    # A GBK log read as UTF-8 with its bad bytes replaced made every question unknown: "rule share 0.0 %,
    # saved 80 %", exit 0, where ask and route refuse the same bytes.
    questions = "上海今天天气\n北京明天会下雨吗\n北京明天适合出游吗\n"
    utf8, gbk, utf16 = tmp_path / "utf8.txt", tmp_path / "gbk.txt", tmp_path / "utf16.txt"
    utf8.write_text(questions, "utf-8")
    gbk.write_bytes(questions.encode("gbk"))
    utf16.write_bytes(questions.encode("utf-16"))
    expected = json.loads(console("simulate", str(utf8), "--json").stdout)
    assert expected["by_route"] == {"rule": 2, "clarify": 0, "llm": 1}
    for log, encoding in ((gbk, "gbk"), (gbk, "GB18030"), (utf16, "utf-16")):
        told = console("simulate", str(log), "--encoding", encoding, "--json")
        assert told.returncode == 0 and json.loads(told.stdout) == expected, told.stderr
    for refused in (console("simulate", str(gbk)), console("simulate", "-", stdin=questions.encode("gbk"))):
        line = refused.stderr.strip()
        assert refused.returncode == 2 and refused.stdout == "" and "Traceback" not in line, refused.stderr
        assert "line 1 of" in line and "is not utf-8 text" in line and "--encoding gbk" in line
    unknown = console("simulate", str(utf8), "--encoding", "klingon")
    assert unknown.returncode == 2 and "'klingon' is not an encoding" in unknown.stderr


def test_savings_bars_line_up_and_counts_read_well(tmp_path):
    ledger = str(tmp_path / "l.db")
    for day in ("2026-11-28", "2026-11-29"):
        console("上海今天天气", "--provider", "demo", "--today", day, HYBRID_WEATHER_LEDGER=ledger)
    result = console("savings", "--by", "route", "--include-demo", HYBRID_WEATHER_LEDGER=ledger)
    assert "2 requests" in result.stdout and "request(s)" not in result.stdout
    chart = result.stdout.split("\n\n")[-1].splitlines()[1:]
    assert len({line.index("$") for line in chart}) == 1  # the amounts start in one column


# -- the one-shot CLI's forecast cache on disk -------------------------------------------------------


def test_two_questions_in_a_row_make_one_upstream_request_and_no_cache_skips_it(weather_server, tmp_path):
    env = {"HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url, "HYBRID_WEATHER_HOME": str(tmp_path / "home")}
    assert console("上海今天天气", *TODAY, **env).returncode == 0
    second = console("魔都今天多少度", *TODAY, "--json", **env)
    assert weather_server.requests["/v1/forecast"] == 1 and json.loads(second.stdout)["route"] == "rule"
    assert console("上海今天天气", *TODAY, "--no-cache", **env).returncode == 0
    assert weather_server.requests["/v1/forecast"] == 2


def test_the_stale_fallback_works_at_a_terminal(weather_server, tmp_path):
    env = {"HYBRID_WEATHER_HOME": str(tmp_path / "home"), "HYBRID_WEATHER_CACHE_TTL": "1"}
    assert console("上海今天天气", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url, **env).returncode == 0
    time.sleep(1.2)  # past the TTL: the next ask goes upstream, which is down
    weather_server.stop()  # the same server, down: another address would be another origin, with copies of its own
    result = console("上海今天天气", *TODAY, "--json", HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url, **env)
    payload = json.loads(result.stdout)
    assert result.returncode == 0 and payload["stale"] is True and payload["stale_age_s"] >= 1


def test_an_unusable_cache_file_costs_nothing(weather_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "forecast-cache.db").write_bytes(b"not a database" * 100)
    result = console("上海今天天气", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url,
                     HYBRID_WEATHER_HOME=str(home))  # fmt: skip
    assert result.returncode == 0 and "上海今天" in result.stdout


# -- answers ---------------------------------------------------------------------------------------------

SHANGHAI = (31.2304, 121.4737)


def test_no_minus_zero_and_a_rain_question_on_a_snow_day_says_snow(weather_server):
    import datetime as dt

    tomorrow = dt.date(2026, 11, 30)
    weather_server.set_day(*SHANGHAI, tomorrow, weather_code=73, temperature_2m_max=-0.4, temperature_2m_min=-4.6,
                           precipitation_probability_max=80, precipitation_sum=3.1)  # fmt: skip
    env = {"HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url, "NO_COLOR": "1"}
    rain = console("上海明天会下雨吗", *TODAY, **env)
    assert rain.returncode == 0 and "可能下雪（中雪" in rain.stdout and "可能下雨" not in rain.stdout
    temperature = console("上海明天多少度", *TODAY, "--no-cache", **env)
    assert "-5°C~0°C" in temperature.stdout and "-0" not in temperature.stdout


def test_demo_data_is_physically_plausible():
    # The demo provider's own output passes the plausibility check Open-Meteo's does (it raises if not);
    # here, PM2.5 is part of PM10, so never more, over many places and days.
    code = """
import datetime as dt
import time
from hybrid_weather.agent.weather import DemoProvider
TODAY = dt.date(2026, 11, 29)
from hybrid_weather.rules import Reader
reader, demo = Reader(), DemoProvider()
for name in ["北京", "上海", "哈尔滨", "海口", "拉萨", "乌鲁木齐", "东京", "悉尼", "开罗", "莫斯科"]:
    place = reader.resolve_place(name).candidates[0]
    demo.forecast(place, today=TODAY, past_days=92, deadline=time.monotonic() + 5)
    for day in demo.air_quality(place, today=TODAY, past_days=92, deadline=time.monotonic() + 5).days:
        assert day.pm2_5 <= day.pm10 and 0 <= day.aqi <= 500, (name, day)
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env())
    assert result.stdout == "ok\n", result.stderr


def test_an_unexpected_error_is_one_line_unless_debug_asks_for_the_traceback():
    # The console script's own code path, with a fault planted where no typed error comes from.
    code = """
import sys
from hybrid_weather.router import HybridRouter
def broken(self, *args, **kwargs):
    raise RuntimeError("planted")
HybridRouter.ask = broken
sys.argv = ["hybrid-weather", *sys.argv[1:]]
from hybrid_weather.router.entry import main
main()
"""
    plain = subprocess.run([sys.executable, "-c", code, "上海今天天气"], capture_output=True, text=True,
                           env=subprocess_env())  # fmt: skip
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1 and "internal error" in plain.stderr
    for how in (["--debug", "上海今天天气"], ["上海今天天气"]):
        env = subprocess_env(HYBRID_WEATHER_DEBUG="1") if how == ["上海今天天气"] else subprocess_env()
        debug = subprocess.run([sys.executable, "-c", code, *how], capture_output=True, text=True, env=env)
        assert debug.returncode == 1 and "Traceback" in debug.stderr and "planted" in debug.stderr


def test_ledger_status_counts_the_rows_and_what_waits_in_the_spool(tmp_path):
    ledger = tmp_path / "l.db"
    assert console("上海今天天气", "--provider", "demo", HYBRID_WEATHER_LEDGER=str(ledger)).returncode == 0
    spool = tmp_path / "l.db.spool.jsonl"
    spool.write_text('{"id": "cut short\n', "utf-8")  # a torn line: it waits, it is never dropped
    result = console("ledger", "status", "--json", HYBRID_WEATHER_LEDGER=str(ledger))
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["rows"] == 1 and report["spooled"] == 1
    assert report["spool"] == str(spool) and report["unclaimed"] is None
    off = console("ledger", "status", HYBRID_WEATHER_LEDGER="off")
    assert off.returncode == 2 and "HYBRID_WEATHER_LEDGER=off" in off.stderr


def test_ledger_status_names_the_spool_an_earlier_version_shared_and_nothing_replays_it(tmp_path):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    shared = temporary / f"hybrid-weather-{os.getuid()}-ledger.spool.jsonl"
    shared.write_text('{"id": "01a23f9807087009567ee9", "route": "rule"}\n' * 2, "utf-8")
    ledger = tmp_path / "fresh" / "l.db"  # a folder not made yet: the case that replayed the shared file
    assert (
        console(
            "上海今天天气", "--provider", "demo", HYBRID_WEATHER_LEDGER=str(ledger), TMPDIR=str(temporary)
        ).returncode
        == 0
    )
    report = json.loads(
        console("ledger", "status", "--json", HYBRID_WEATHER_LEDGER=str(ledger), TMPDIR=str(temporary)).stdout
    )
    assert report["rows"] == 1 and report["unclaimed"] == {"rows": 2, "spool": str(shared)}
    text = console("ledger", "status", HYBRID_WEATHER_LEDGER=str(ledger), TMPDIR=str(temporary)).stdout
    assert "unclaimed: 2 rows in" in text and "delete the file" in text


def test_an_unknown_place_with_the_geocoder_offline_is_exit_3_with_the_offline_hint(weather_server):
    offline = console("雷克雅未克明天天气", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=refused_url())
    assert offline.returncode == 3 and offline.stdout == ""
    assert offline.stderr.count("\n") == 1 and "offline? try --provider demo" in offline.stderr
    as_json = console("雷克雅未克明天天气", "--json", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=refused_url())
    assert as_json.returncode == 3 and one_json_object(as_json.stdout)["error"]["type"] == "UpstreamConnectError"
    # The geocoder answers, with no results: the place does not exist, exit 0 and a clarify.
    unknown = console("雷克雅未克明天天气", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
    assert unknown.returncode == 0 and "没有找到“雷克雅未克”" in unknown.stdout and unknown.stderr == ""


# -- bytes that are not UTF-8: a one-line usage error, never an internal error nor an empty question -----


def console_bytes(*args, stdin=b"", **env):
    """console() with ARGS and STDIN as bytes, as a shell passes whatever a user typed or piped."""
    return subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], input=stdin, capture_output=True,
                          env=subprocess_env(HYBRID_WEATHER_LEDGER="off", **env), timeout=60)  # fmt: skip


NOT_UTF8 = [
    b"\xff\xfe",
    "北京".encode() + b"\xff" + "明天天气".encode(),
    "上海".encode("gbk"),
    b"\xc3\x28",
    b"\xed\xa0\x80",
]


@pytest.mark.parametrize("bad", NOT_UTF8)
@pytest.mark.parametrize(
    "where",
    ["question", "stdin", "stdin, strict", "ask stdin", "route argument", "route stdin", "option value"],
)
def test_bytes_that_are_not_utf8_are_a_one_line_usage_error(bad, where):
    strict = {"PYTHONIOENCODING": "utf-8:strict"} if "strict" in where else {}
    demo = [b"--provider", b"demo"]
    args, stdin = {
        "question": ([bad, *demo], b""),
        "stdin": (demo, bad + b"\n"),
        "stdin, strict": (demo, bad + b"\n"),
        "ask stdin": ([b"ask", *demo], bad),
        "route argument": ([b"route", bad], b""),
        "route stdin": ([b"route"], "北京天气\n".encode() + bad + b"\n"),
        "option value": ([b"--today", bad, "北京天气".encode()], b""),
    }[where]
    result = console_bytes(*args, stdin=stdin, **strict)
    assert result.returncode == 2, (result.stdout, result.stderr)
    stderr = result.stderr.decode()
    assert stderr.count("\n") == 1 and "is not UTF-8 text" in stderr and "internal error" not in stderr, stderr
    if where != "route stdin":
        assert result.stdout == b""  # nothing was asked: no answer to an empty question


def test_a_chat_line_that_is_not_utf8_is_said_and_the_conversation_goes_on():
    result = console_bytes("chat", "--provider", "demo", "--today", "2026-11-29",
                           stdin=b"\xff\xfe\n" + "北京明天天气\n".encode())  # fmt: skip
    assert result.returncode == 0 and "北京明天" in result.stdout.decode()
    assert result.stderr.decode().count("is not UTF-8 text") == 1


@pytest.mark.parametrize("today", ["2026-11-29", "2019-03-10", "2031-06-01"])
def test_the_demo_answers_on_the_day_given_with_today(today):
    result = console("北京明天会下雨吗", "--provider", "demo", "--today", today, "--json")
    payload = one_json_object(result.stdout)
    assert result.returncode == 0 and payload["route"] == "rule" and "暂无" not in payload["answer"], payload
    tomorrow = __import__("datetime").date.fromisoformat(today) + __import__("datetime").timedelta(days=1)
    assert [day["date"] for day in payload["data"]["places"][0]["days"]] == [tomorrow.isoformat()]


def test_open_meteo_answers_on_the_day_given_with_today(weather_server):
    # The fake Open-Meteo's clock says 2026-11-29; the question is asked on 2026-09-15.
    weather_server.set_day(39.9042, 116.4074, __import__("datetime").date(2026, 9, 16), weather_code=63,
                           precipitation_probability_max=90)  # fmt: skip
    result = console("北京明天会下雨吗", "--today", "2026-09-15", HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url)
    assert result.returncode == 0 and "可能下雨（中雨，降水概率90%" in result.stdout, result.stdout + result.stderr


# -- a mistyped command is not a paid question --------------------------------------------------------


@pytest.mark.parametrize(
    "args, meant",
    [(["savigns"], "savings"), (["Savings"], None), (["migrte"], "ledger migrate"), (["servee"], "serve"),
     (["status"], "ledger status"), (["status", "--json"], "ledger status"), (["savigns", "--days", "7"], "savings"),
     (["misess"], "misses"), (["simulat"], "simulate"), (["rout"], "route"), (["chta"], "chat"), (["ledgr"], "ledger"),
     (["asks"], "ask"), (["hlep"], "help"), (["verison"], "version"), (["teech", "list"], "teach list"),
     (["ledgr", "status"], "ledger status"), (["teech", "alias", "鹅厂", "深圳"], "teach alias"),
     (["overlya", "statsu"], "overlay status")],
)  # fmt: skip
def test_a_near_miss_of_a_command_says_which_one_and_asks_nothing(args, meant, tmp_path):
    ledger = tmp_path / "l.db"
    result = console(*args, "--provider", "demo", HYBRID_WEATHER_LEDGER=str(ledger)) if len(args) == 1 else console(
        *args, HYBRID_WEATHER_LEDGER=str(ledger))  # fmt: skip
    meant = meant or args[0].lower()
    said = result.stderr
    if "--json" in args:  # the one object, as every outcome of --json
        said, result.stdout = one_json_object(result.stdout)["error"]["message"] + "\n", ""
    assert result.returncode == 2 and result.stdout == "", (result.stdout, result.stderr)
    assert said.count("\n") == 1 and f"did you mean 'python -m hybrid_weather.router {meant}'" in (
        said.replace("hybrid-weather", "python -m hybrid_weather.router"))  # fmt: skip
    assert not ledger.exists()  # nothing was asked, so nothing was recorded


@pytest.mark.parametrize(
    "word", ["北京", "beijing", "shanghai", "Shanghai", "paris", "seoul", "tokyo", "rome", "xian", "sanya", "chengdu",
             "上海今天天气", "weather"],
)  # fmt: skip
def test_a_one_word_question_is_still_a_question(word):
    # Asked, not refused as a mistyped command: a place alone goes to the LLM (none configured here: exit 4,
    # docs/reading.md), 上海今天天气 is answered by the rules.
    result = console(word, "--provider", "demo", *TODAY, "--json")
    assert result.returncode in (0, 4) and "did you mean" not in result.stderr, result.stderr
    assert one_json_object(result.stdout)["query"] == word


@pytest.mark.parametrize(
    "words",
    [["what", "is", "the", "weather", "in", "beijing", "tomorrow"], ["rout", "北京明天天气"], ["teech", "北京"]],
)
def test_a_question_that_starts_with_a_word_close_to_a_command_is_still_a_question(words):
    # A near miss followed by words is a mistyped command only when its command has subcommands and the next
    # word is one of them (teech list): `what` is one letter from `chat`, and what follows is a question.
    result = console(*words, "--provider", "demo", *TODAY, "--json")
    assert result.returncode in (0, 4) and "did you mean" not in result.stderr, result.stderr
    assert one_json_object(result.stdout)["query"] == " ".join(words)


def test_version_prints_the_packages_version():
    from importlib.metadata import version

    result = console("version")
    assert result.returncode == 0 and f"version {version('hybrid-weather')} (rule path: " in result.stdout
    assert console("--version").stdout == result.stdout


def test_dash_dash_version_names_the_checkout_s_version():
    # pyproject.toml is where the version is named; an install (editable or not) reports it, and
    # `--version` answers before any question is read, whatever follows it.
    import re
    from pathlib import Path

    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8")
    named = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    for args in (["--version"], ["--version", "上海今天天气"]):
        result = console(*args)
        assert result.returncode == 0, result.stderr
        # The program's name is how it was started (the console script, or `python -m` here).
        assert result.stdout.count("\n") == 1 and f", version {named} (rule path: " in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("origin", "hint"),
    [
        (None, "pip install 'hybrid-weather[serve]'"),  # a wheel from an index records no origin
        ({"url": "file:///src/hw", "dir_info": {"editable": True}}, "pip install -e '/src/hw[serve]'"),
        ({"url": "file:///src/my%20hw", "dir_info": {}}, "pip install '/src/my hw[serve]'"),
        ({"url": "https://example.org/hw.whl", "archive_info": {}}, "pip install 'hybrid-weather[serve]'"),
    ],
)
def test_the_install_hint_names_the_checkout_the_package_came_from(origin, hint, tmp_path, monkeypatch):
    # An install's dist-info, found first on the path, as pip writes it (PEP 610's direct_url.json).
    info = tmp_path / "hybrid_weather-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hybrid-weather\nVersion: 9.9\n")
    (info / "INSTALLER").write_text("pip\n")
    if origin is not None:
        (info / "direct_url.json").write_text(json.dumps(origin))
    monkeypatch.syspath_prepend(str(tmp_path))
    from hybrid_weather.agent.errors import install_hint

    assert install_hint("serve") == hint

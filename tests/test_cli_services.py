"""The CLI when a service it is pointed at is not there (issue 36, item 13): a report against a PostgreSQL
that cannot be reached or holds no such database, a ledger URL whose scheme is a typo, a Redis that does
not answer. Each over the real console script, in a fresh process: one line, the documented exit code,
never a traceback."""

import json
import subprocess
import sys

import pytest

from fake_weather import free_port
from support import POSTGRES_URL, REDIS_URL, service_missing, subprocess_env

TODAY = ["--today", "2026-11-29"]


def console(*args, cwd=None, **env):
    return subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], capture_output=True, text=True,
                          env=subprocess_env(**env), timeout=60, cwd=cwd)  # fmt: skip


def one_line(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr and "internal error" not in stderr, stderr
    return lines[0]


def the_error(result, command):
    """The one error of RESULT, as one line: on stderr, or with --json as the one object on stdout."""
    if "--json" not in command:
        assert result.stdout == ""
        return one_line(result.stderr)
    assert result.stderr == "", result.stderr
    return "Error: " + json.loads(result.stdout)["error"]["message"]


@pytest.mark.parametrize("location", ["bogus://x", "postgresq://postgres@127.0.0.1/test", "sqlite:///tmp/l.db"])
@pytest.mark.parametrize("command", [["savings"], ["misses"], ["ledger", "status"], ["上海今天天气", *TODAY]])
def test_a_ledger_url_of_an_unknown_scheme_is_exit_2_naming_the_variable(tmp_path, location, command):
    result = console(*command, "--provider", "demo", cwd=tmp_path, HYBRID_WEATHER_LEDGER=location) if (
        command[0] == "上海今天天气"
    ) else console(*command, cwd=tmp_path, HYBRID_WEATHER_LEDGER=location)  # fmt: skip
    line = one_line(result.stderr)
    assert result.returncode == 2 and line.startswith("Error: HYBRID_WEATHER_LEDGER=") and "postgresql://" in line
    assert list(tmp_path.iterdir()) == []  # no folder named after the scheme (bogus:/x)


def test_the_library_refuses_an_unknown_scheme_without_making_a_folder(tmp_path, monkeypatch):
    from hybrid_weather.router import HybridRouter, Settings

    monkeypatch.chdir(tmp_path)
    with HybridRouter(settings=Settings(provider="demo"), ledger="bogus://x") as router:
        router.ask("上海今天天气")
        assert "bogus:// is not a ledger" in (router.ledger_problem or "")
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("command", [["savings"], ["savings", "--json"], ["misses"], ["misses", "--json"]])
def test_a_report_against_a_postgresql_that_refuses_is_one_line_exit_2(command):
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
    result = console(*command, HYBRID_WEATHER_LEDGER=url)
    line = the_error(result, command)
    assert result.returncode == 2
    assert line.startswith("Error: the ledger at postgresql://postgres@127.0.0.1:") and "HYBRID_WEATHER_LEDGER" in line


@pytest.fixture
def postgres():
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=2).close()
    except psycopg.Error as error:
        service_missing(f"no PostgreSQL at {POSTGRES_URL} ({error}); start one or set HYBRID_WEATHER_TEST_POSTGRES_URL")
    return POSTGRES_URL


@pytest.mark.parametrize("command", [["savings"], ["misses", "--json"]])
def test_a_report_against_a_database_that_is_not_there_is_one_line_exit_2(postgres, command):
    url = postgres.rsplit("/", 1)[0] + "/hybrid_weather_no_such_database"
    result = console(*command, HYBRID_WEATHER_LEDGER=url)
    line = the_error(result, command)
    assert result.returncode == 2 and "hybrid_weather_no_such_database" in line and "does not exist" in line


def test_a_redis_that_cannot_be_reached_gives_one_warning_and_the_answer(weather_server):
    _one_warning_and_the_answer(weather_server, f"redis://127.0.0.1:{free_port()}/0")


def test_a_redis_that_refuses_the_connections_set_up_gives_one_warning_too(weather_server, redis_prefix):
    # A server that answers but refuses the database named (or a password) replies with an error as it would
    # for one odd key; read as a miss of that key, it said nothing while every worker fetched for itself.
    server = REDIS_URL.rsplit("/", 1)[0]
    line = _one_warning_and_the_answer(weather_server, f"{server}/100000")
    assert "DB index is out of range" in line


def _one_warning_and_the_answer(weather_server, url):
    result = console("上海今天天气", *TODAY, HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url,
                     HYBRID_WEATHER_CACHE_URL=url, HYBRID_WEATHER_LEDGER="off")  # fmt: skip
    assert result.returncode == 0 and "上海" in result.stdout
    line = one_line(result.stderr)
    assert line.startswith(f"Warning: the shared cache at {url} is unreachable") and "fetches for itself" in line
    return line


@pytest.mark.parametrize("command", [["上海今天天气", "--provider", "demo", *TODAY], ["route", "上海今天天气"]])
def test_an_upstream_budget_that_cannot_be_read_is_exit_2_naming_the_variable(command):
    # It was read only when a shared cache was built for a remote provider: elsewhere a typo passed silently.
    result = console(*command, HYBRID_WEATHER_UPSTREAM_LIMIT="lots")
    line = one_line(result.stderr)
    assert result.returncode == 2 and result.stdout == ""
    assert line.startswith("Error: HYBRID_WEATHER_UPSTREAM_LIMIT='lots'") and "600/min" in line

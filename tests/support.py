"""What test modules share that is not a fixture (the fixtures are conftest.py's, which pytest loads and
nothing imports): the day the fake servers call today, fast retry options, the servers the tests use, and
helpers for the processes a test starts and the ledgers it reads. `from support import TODAY`."""

import datetime
import os
import subprocess
import sys

import pytest

#: The developer's own LLM endpoint, read before the autouse fixture below clears the environment, for the
#: one opt-in live test (tests never reach the internet unless HYBRID_WEATHER_LIVE_LLM=1 says so).
LIVE_LLM = {
    name: os.environ[name]
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HYBRID_WEATHER_MODEL")
    if os.environ.get(name)
}
LIVE_LLM_WANTED = os.environ.get("HYBRID_WEATHER_LIVE_LLM") == "1"


#: The day the fake servers call today.
TODAY = datetime.date(2026, 11, 29)

# Fast retries for tests: the behaviour is the same, the waits are milliseconds.
FAST_HTTP = {"backoff_base": 0.01, "backoff_cap": 0.05, "read_timeout": 1.0, "connect_timeout": 0.5}


# Fast LLM retries for tests.
FAST_LLM = {"backoff_base": 0.01, "backoff_cap": 0.05, "call_timeout": 2.0, "deadline": 10.0}


def service_missing(reason: str) -> None:
    """Skip a test whose server is not running, saying how to start one; under
    HYBRID_WEATHER_REQUIRE_SERVICES=1 (.ci/run sets it) fail instead, so CI never passes by skipping."""
    if os.environ.get("HYBRID_WEATHER_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


#: The Redis the tests use (database 15: apart from anything a developer keeps in 0).
REDIS_URL = os.environ.get("HYBRID_WEATHER_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


#: The PostgreSQL the tests use; each test makes a schema of its own in it (conftest.pg_url).
POSTGRES_URL = os.environ.get("HYBRID_WEATHER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def in_schema(url, schema):
    """URL with its tables in SCHEMA, its connections named after it (a test kills only its own)."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}&application_name={schema}"


def stored(url, sql="SELECT count(*), count(DISTINCT id) FROM requests"):
    import psycopg

    with psycopg.connect(url) as db:
        return db.execute(sql).fetchall()


def subprocess_env(**values: str) -> dict[str, str]:
    """The isolated environment of this test, with VALUES set: for every process a test starts."""
    return {**os.environ, **values}


def entries_of_every_kind(started_at: float):
    """Ledger entries of each kind of request: rule answers, which leave the LLM's columns empty, beside
    requests that fill one or more of those columns — and what each must store in them, by query."""
    from hybrid_weather.agent.llm import Usage
    from hybrid_weather.router.ledger import LedgerEntry

    llm_columns = ("model", "prompt_tokens", "cached_tokens", "completion_tokens", "llm_attempts", "session_id",
                   "llm_loops", "tool_calls", "tool_failures", "agreement", "unknown_words", "plain_lookup",
                   "invalid", "model_ms")  # fmt: skip

    def rule(query: str, **fields) -> LedgerEntry:
        values = {"places": ("上海市",), "provider": "demo", "cache_hit": True, "days": 1, **fields}
        return LedgerEntry(started_at=started_at, route="rule", query=query, **values)

    llm = LedgerEntry(
        started_at=started_at, route="llm", query="llm", model="m-1", usage=Usage(100, 20, 30), llm_attempts=1,
        llm_loops=2, tool_calls=1, tool_failures=0, plain_lookup=True, unknown_words=("遛狗",), cost_usd=0.001,
        latency_ms=2250.0, model_ms=113.5,
    )  # fmt: skip
    failed = LedgerEntry(started_at=started_at, route="llm", query="failed", outcome="LLMUnavailable", llm_attempts=3)
    filled_by_llm = {
        "model": "m-1", "prompt_tokens": 100, "cached_tokens": 20, "completion_tokens": 30, "llm_attempts": 1,
        "llm_loops": 2, "tool_calls": 1, "tool_failures": 0, "plain_lookup": 1, "unknown_words": '["遛狗"]',
        "model_ms": 113.5,
    }  # fmt: skip
    cases = [
        (rule("rule-1"), {}),
        (rule("session", session_id="s-1"), {"session_id": "s-1"}),
        (rule("rule-2"), {}),
        (rule("invalid", cache_hit=None, cost_usd=float("nan")), {"invalid": '["cost_usd"]'}),
        (llm, filled_by_llm),
        (failed, {"llm_attempts": 3}),
        (rule("rule-3"), {}),
    ]
    empty = dict.fromkeys(llm_columns)
    return [entry for entry, _ in cases], {entry.query: {**empty, **filled} for entry, filled in cases}


def midway(kept: float, broken: float) -> float:
    """The most seconds a test may see a bounded wait take: midway between KEPT, what it takes when the bound
    under test holds (a deadline, a timeout, "at once": 0), and BROKEN, what the test's own slow part would
    make it take if the bound did not hold. Half the gap is the margin a loaded machine gets for the work
    around the wait; a bound not kept always crosses it. Never a number picked to pass."""
    return kept + (broken - kept) / 2


def console(*args, stdin: str | bytes = "", timeout=60, **env):
    """`hybrid-weather ARGS` in a process of its own, STDIN its input (text as UTF-8, or bytes as given)."""
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", *args],
        input=stdin.encode("utf-8") if isinstance(stdin, str) else stdin,
        capture_output=True,
        env=subprocess_env(**env),
        timeout=timeout,
    )
    out, err = (stream.decode("utf-8", "backslashreplace") for stream in (done.stdout, done.stderr))
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)

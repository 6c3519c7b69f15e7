import os

import pytest

#: The developer's own LLM endpoint, read before the autouse fixture below clears the environment, for the
#: one opt-in live test (tests never reach the internet unless HYBRID_WEATHER_LIVE_LLM=1 says so).
LIVE_LLM = {
    name: os.environ[name]
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HYBRID_WEATHER_MODEL")
    if os.environ.get(name)
}
LIVE_LLM_WANTED = os.environ.get("HYBRID_WEATHER_LIVE_LLM") == "1"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point every test's data directory, and every home a default could be read from (HOME, XDG_*: where
    click.get_app_dir looks), at a fresh temporary folder; clear configuration. A test that starts a
    process gets this environment through subprocess_env(), so no test can write to a user's ledger."""
    monkeypatch.setenv("HYBRID_WEATHER_HOME", str(tmp_path / "home"))
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "user" / name.lower()))
    for name in (
        "HYBRID_WEATHER_PROVIDER",
        "HYBRID_WEATHER_OPEN_METEO_URL",
        "AMAP_KEY",
        "HYBRID_WEATHER_AMAP_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "HYBRID_WEATHER_MODEL",
        "HYBRID_WEATHER_LEDGER",
        "HYBRID_WEATHER_CACHE_TTL",
        "HYBRID_WEATHER_LEDGER_QUERIES",
        "HYBRID_WEATHER_LLM_SEES",
        "NO_COLOR",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


TODAY = __import__("datetime").date(2026, 11, 29)


@pytest.fixture
def weather_server():
    """A fake Open-Meteo/AMap server on 127.0.0.1 whose "today" is 2026-11-29."""
    from fake_weather import FakeWeather

    server = FakeWeather(TODAY).start()
    yield server
    server.stop()


# Fast retries for tests: the behaviour is the same, the waits are milliseconds.
FAST_HTTP = {"backoff_base": 0.01, "backoff_cap": 0.05, "read_timeout": 1.0, "connect_timeout": 0.5}


@pytest.fixture
def llm_server():
    """A scripted OpenAI-compatible server on 127.0.0.1."""
    from fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


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


@pytest.fixture
def redis_prefix():
    """A key prefix of this test's own on the test Redis, deleted afterwards; skips (or, under
    HYBRID_WEATHER_REQUIRE_SERVICES=1, fails) when no Redis answers."""
    import uuid

    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as error:
        service_missing(
            f"no Redis at {REDIS_URL} ({error}); start one (redis-server) or set HYBRID_WEATHER_TEST_REDIS_URL"
        )
    prefix = f"hw-test-{uuid.uuid4().hex[:12]}:"
    yield prefix
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()


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

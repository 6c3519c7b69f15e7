"""`hybrid-weather serve` (issue 14), in-process through Starlette's test client: the endpoints, the
OpenAI-compatible one with context, errors, keys, rate limits (shared through the real Redis), pass-through
and metrics. tests/test_serve_live.py drives the real server with the openai SDK."""

import json
import os
import uuid

import pytest
from starlette.testclient import TestClient

from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.serve import create_app

from fake_openai import answer, tool_calls
from serve_client import KEY, client_for, error_of
from support import TODAY, service_missing


@pytest.fixture
def service(tmp_path, llm_server):
    client, router = client_for(tmp_path, llm_server)
    with client:
        yield client
    router.close()


def test_ask_route_and_a_session_over_http(service):
    answer_ = service.post(
        "/v1/ask", json={"query": "上海明天天气", "today": TODAY.isoformat(), "session_id": "s1-conversation-test"}
    )
    assert answer_.status_code == 200
    body = answer_.json()
    assert body["route"] == "rule" and body["decision"]["cities"] == ["上海市"] and body["source"] == "demo"
    follow = service.post(
        "/v1/ask", json={"query": "那北京呢？", "today": TODAY.isoformat(), "session_id": "s1-conversation-test"}
    ).json()
    assert follow["route"] == "rule" and follow["decision"]["cities"] == ["北京市"]
    assert follow["decision"]["dates"] == body["decision"]["dates"]  # borrowed from the session
    # Alone, 那北京呢 continues no conversation about the weather: it is no lookup, and goes to the LLM (none
    # is configured here), never to the session's borrowed day.
    alone = service.post("/v1/ask", json={"query": "那北京呢？", "today": TODAY.isoformat()})
    assert alone.status_code == 503, alone.text
    decision = service.post("/v1/route", json={"query": "魔都明天会下雨吗", "today": TODAY.isoformat()}).json()
    assert decision == {"query": "魔都明天会下雨吗", "route": "rule", "cities": ["上海市"], "dates": ["2026-11-30"],
                        "aspect": "rain", "reason": decision["reason"], "reason_code": "lookup"}  # fmt: skip


def test_chat_completions_answer_rule_questions_without_a_model(service, llm_server):
    messages = [
        {"role": "system", "content": "你是天气助手"},
        {"role": "user", "content": "北京明天天气怎么样"},
        {"role": "assistant", "content": "北京明天晴。"},
        {"role": "user", "content": [{"type": "text", "text": "那上海呢？"}]},
    ]
    response = service.post("/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": messages,
                                                          "today": TODAY.isoformat()})  # fmt: skip
    assert response.status_code == 200 and response.headers["x-hybrid-weather-route"] == "rule"
    completion = response.json()
    assert completion["object"] == "chat.completion" and completion["model"] == "hybrid-weather-rules"
    assert completion["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert "上海明天" in completion["choices"][0]["message"]["content"]  # the date came from the context
    assert completion["choices"][0]["finish_reason"] == "stop" and llm_server.requests == []


def test_chat_completions_send_open_questions_through_the_tool_loop(service, llm_server):
    llm_server.then(tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
                    answer("明天北京多云，适合出游。", prompt=560, completion=30))  # fmt: skip
    question = {"messages": [{"role": "user", "content": "北京明天适合出游吗"}], "today": TODAY.isoformat()}
    response = service.post("/v1/chat/completions", json=question)
    assert response.status_code == 200 and response.headers["x-hybrid-weather-route"] == "llm"
    completion = response.json()
    assert completion["model"] == "gpt-4o-mini" and completion["choices"][0]["message"]["content"].startswith(
        "明天北京"
    )
    assert completion["usage"]["prompt_tokens"] == 980 and completion["usage"]["completion_tokens"] == 55
    assert len(llm_server.requests) == 2


def test_streaming_gives_chunks_then_done(service):
    with service.stream("POST", "/v1/chat/completions", json={"stream": True, "stream_options": {"include_usage": True},
                        "messages": [{"role": "user", "content": "上海今天天气"}]}) as response:  # fmt: skip
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert "上海今天" in text and chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["total_tokens"] == 0


def test_requests_with_their_own_tools_go_upstream_untouched_and_the_key_never_comes_back(tmp_path, llm_server):
    client, router = client_for(tmp_path, llm_server, pass_through=True)
    with client:
        _pass_through_untouched(client, llm_server)
    router.close()


def _pass_through_untouched(service, llm_server):
    llm_server.then({"echo_headers": True, "status": 400})  # an endpoint that quotes our headers back
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "上海今天天气"}],
        "tools": [{"type": "function", "function": {"name": "my_tool", "parameters": {"type": "object"}}}],
    }
    response = service.post("/v1/chat/completions", json=body)
    assert response.headers["x-hybrid-weather-route"] == "pass-through" and response.status_code == 400
    assert llm_server.requests[-1] == body  # as it came
    assert KEY not in response.text and "[redacted]" in response.text
    llm_server.then(answer("用你的工具", prompt=10, completion=2))
    passed = service.post("/v1/chat/completions", json=body).json()
    assert passed["choices"][0]["message"]["content"] == "用你的工具" and passed["usage"]["prompt_tokens"] == 10


@pytest.mark.parametrize(
    ("request_", "status", "code"),
    [
        ({"content": b"{not json"}, 400, "invalid_json"),
        ({"json": ["a list"]}, 422, "invalid_body"),
        ({"json": {}}, 422, "invalid_query"),
        ({"json": {"query": "上海", "today": "2026-13-01"}}, 422, "invalid_today"),
        ({"json": {"query": "上海", "session_id": "no spaces allowed"}}, 400, "invalid_session_id"),
        ({"json": {"query": "上海", "session_id": "1"}}, 400, "invalid_session_id"),
        ({"json": {"query": "天" * 2001}}, 422, "query_too_long"),
        ({"content": b'{"query": "' + b"x" * 70_000 + b'"}'}, 413, "body_too_large"),
    ],
)
def test_bad_requests_get_a_clear_error_never_a_trace(service, request_, status, code):
    error_of(service.post("/v1/ask", headers={"content-type": "application/json"}, **request_), status, code)


def test_unknown_paths_methods_and_report_windows(service):
    error_of(service.get("/v1/nothing"), 404, "not_found")
    error_of(service.get("/v1/ask"), 405, "method_not_allowed")
    error_of(service.get("/v1/savings?days=0"), 422, "invalid_days")
    error_of(service.post("/v1/chat/completions", json={"messages": []}), 422, "invalid_messages")


def test_a_weather_outage_is_a_503_with_the_reason(tmp_path, weather_server):
    weather_server.fail("/v1/forecast", *["500"] * 10)
    client, router = client_for(tmp_path, provider="open-meteo", open_meteo_url=weather_server.url)
    with client:
        error = error_of(client.post("/v1/ask", json={"query": "上海今天天气"}), 503, "weather_unavailable")
    assert "open-meteo" in error["message"].lower() or "weather" in error["message"].lower()
    router.close()


def test_api_keys_and_rate_limits(tmp_path):
    client, router = client_for(tmp_path, api_keys="k1,k2", rate_limit="2/s")
    with client:
        error_of(client.post("/v1/ask", json={"query": "上海今天天气"}), 401, "invalid_api_key")
        error_of(client.post("/v1/ask", json={"query": "上海"}, headers={"authorization": "Bearer nope"}), 401)
        ok = {"authorization": "Bearer k1"}
        assert client.post("/v1/route", json={"query": "上海"}, headers=ok).status_code == 200
        assert client.post("/v1/route", json={"query": "上海"}, headers=ok).status_code == 200
        limited = client.post("/v1/route", json={"query": "上海"}, headers=ok)
        error_of(limited, 429, "rate_limit_exceeded")
        assert int(limited.headers["retry-after"]) >= 1
        assert (
            client.post("/v1/route", json={"query": "上海"}, headers={"authorization": "Bearer k2"}).status_code == 200
        )
        assert client.get("/healthz").status_code == 200  # health needs no key
    router.close()


def test_a_file_of_hashed_keys(tmp_path):
    import hashlib

    keys = tmp_path / "keys"
    keys.write_text(f"# team A\n{hashlib.sha256(b'secret-a').hexdigest()}\n", "utf-8")
    client, router = client_for(tmp_path, api_keys_file=str(keys))
    with client:
        assert client.post("/v1/route", json={"query": "上海"}, headers={"authorization": "Bearer secret-a"}).is_success
        error_of(client.post("/v1/route", json={"query": "上海"}, headers={"authorization": "Bearer secret-b"}), 401)
    router.close()


def test_rate_limits_hold_across_workers_through_redis(tmp_path):
    import redis

    url = os.environ.get("HYBRID_WEATHER_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as error:
        service_missing(f"no Redis at {url} ({error}); start one (redis-server) or set HYBRID_WEATHER_TEST_REDIS_URL")
    prefix = f"hw-test-{uuid.uuid4().hex[:12]}:"
    settings = {"api_keys": "k", "rate_limit": "3/min", "cache_url": url, "cache_prefix": prefix}
    one, first = client_for(tmp_path / "a", **settings)
    two, second = client_for(tmp_path / "b", **settings)
    ok = {"authorization": "Bearer k"}
    with one, two:
        statuses = [c.post("/v1/route", json={"query": "上海"}, headers=ok).status_code for c in (one, two, one, two)]
    assert statuses == [200, 200, 200, 429]  # three a minute between them, not three each
    first.close()
    second.close()


def test_metrics_count_what_was_served(service):
    for query in ("上海今天天气", "北京明天天气", "上海今天天气"):
        assert service.post("/v1/ask", json={"query": query}).status_code == 200
    text = service.get("/metrics").text
    assert 'hybrid_weather_requests_total{endpoint="ask",outcome="ok",route="rule"} 3.0' in text
    assert "hybrid_weather_saved_usd_total" in text and "hybrid_weather_request_seconds_bucket" in text
    assert KEY not in text


def test_readyz_says_what_is_not_ready(tmp_path):
    client, router = client_for(tmp_path, ledger=None)
    router.parts.ledger  # noqa: B018 - built, so readiness can judge it
    with client:
        ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["ledger"]["ok"] is True
    router.close()
    folder = tmp_path / "a-folder"
    folder.mkdir()
    broken = HybridRouter(settings=Settings(provider="demo"), ledger=str(folder))
    with TestClient(create_app(broken)) as client:
        not_ready = client.get("/readyz")
    assert not_ready.status_code == 503 and not_ready.json()["checks"]["ledger"]["ok"] is False
    broken.close()


def test_a_session_goes_on_in_another_worker(tmp_path):
    # Two apps with one home: two worker processes of one host, a follow-up reaching the other one.
    one, first = client_for(tmp_path / "one")
    two, second = client_for(tmp_path / "two")
    today = TODAY.isoformat()
    with one, two:
        asked = one.post(
            "/v1/ask", json={"query": "上海后天会下雨吗", "today": today, "session_id": "two-workers-one-talk"}
        )
        follow = two.post(
            "/v1/ask", json={"query": "那北京呢？", "today": today, "session_id": "two-workers-one-talk"}
        ).json()
    assert follow["route"] == "rule" and follow["decision"]["cities"] == ["北京市"]
    assert follow["decision"]["dates"] == asked.json()["decision"]["dates"] and follow["decision"]["aspect"] == "rain"
    first.close()
    second.close()


def test_session_turns_are_stored_masked_and_expire(tmp_path):
    from hybrid_weather.router.serve.sessions import SqliteSessions

    store = SqliteSessions(tmp_path / "s.db", idle_s=0.2)
    store.add("-", "s", "我的电话13812345678，上海明天天气", "晴")
    assert store.turns("-", "s") == [("我的电话[phone]，上海明天天气", "晴")]
    assert b"13812345678" not in (tmp_path / "s.db").read_bytes() + (tmp_path / "s.db-wal").read_bytes()
    import time

    time.sleep(0.3)
    assert store.turns("-", "s") == []  # idle too long: a new conversation
    store.close()


def test_odd_but_harmless_fields_do_not_break_a_chat_request(service):
    odd = {
        "stream": True,
        "stream_options": ["not", "an", "object"],
        "messages": [{"role": "user", "content": "上海今天天气"}],
    }
    with service.stream("POST", "/v1/chat/completions", json=odd) as response:
        assert response.status_code == 200 and list(response.iter_lines())[-2] == "data: [DONE]"


def test_serve_runs_its_server_with_the_garbage_collector_on(monkeypatch, tmp_path):
    # The console script pauses the collector for one-shot commands (entry.py); `serve` runs a single worker
    # in that same process, and with the collector paused it kept every reference cycle it made (a
    # StreamingResponse leaves several a request: 25 MB a minute at 1,000 requests/s).
    import gc

    import uvicorn
    from click.testing import CliRunner

    from hybrid_weather.router.cli import cli

    collecting: list[bool] = []

    def run(server, sockets=None):
        collecting.append(gc.isenabled())
        server.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = CliRunner().invoke(cli, ["serve", "--port", "0"])
    finally:
        if was_enabled:
            gc.enable()
    assert result.exit_code == 0, result.output
    assert collecting == [True]


def test_v1_ask_is_the_cli_json_object_and_a_model_failure_keeps_the_weather_part(tmp_path, llm_server):
    import subprocess
    import sys

    from support import subprocess_env

    client, router = client_for(tmp_path, llm_server)
    day = TODAY.isoformat()
    with client:
        served = client.post("/v1/ask", json={"query": "魔都明天会下雨吗", "today": day}).json()
        # The script is spent: the model answers 500 to every retry.
        failed = client.post("/v1/ask", json={"query": "北京明天适合出游吗", "today": day})
    router.close()
    env = subprocess_env(HYBRID_WEATHER_PROVIDER="demo", HYBRID_WEATHER_HOME=str(tmp_path / "cli"))
    command = [sys.executable, "-m", "hybrid_weather.router", "魔都明天会下雨吗", "--json", "--today", day]
    cli = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    printed = json.loads(cli.stdout)
    # The --json object, and the session the service made for a request that named none.
    assert set(served) == set(printed) | {"session_id"} and served["decision"] == printed["decision"]
    assert served["answer"] == printed["answer"]  # no emoji: the same text a program reads from --json
    assert not any(0x1F300 <= ord(char) <= 0x1FAFF or 0x2600 <= ord(char) <= 0x27BF for char in served["answer"])
    assert failed.status_code == 503 and failed.json()["error"]["code"] == "llm_unavailable"
    partial = failed.json()["partial"]
    assert set(partial) == set(printed) and partial["route"] == "rule" and partial["decision"]["cities"] == ["北京市"]

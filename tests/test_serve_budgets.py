"""Daily LLM budgets per key (HYBRID_WEATHER_KEY_BUDGETS, router/serve/budgets.py): over budget, a key's
questions for the model get 429 while its weather lookups are answered; two serve processes count one
budget through the real Redis; tokens are counted too, in one process without Redis; bad settings are
refused at start. Under concurrency (issue 49): 40 requests at once across two processes spend no more
than the budget allows, pass-through included; a key's requests in flight are capped across the fleet; a
failed request gives its reservation back."""

import datetime as dt
import hashlib
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from live_server import post, serving

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.router.serve.budgets import Budgets

from fake_openai import answer
from serve_client import client_for, error_of
from support import REDIS_URL, TODAY, subprocess_env

openai = pytest.importorskip("openai")
#: One answer of the fake model: 500 prompt and 20 completion tokens of gpt-4o-mini, about $0.000087.
ONE_ANSWER = {"prompt": 500, "completion": 20}
ANSWER_USD = (500 * 0.15 + 20 * 0.60) / 1e6
QUESTION = [{"role": "user", "content": "北京明天适合出游吗"}]
#: A request the router does not answer: it brings its own tools (pass-through).
OWN_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def chat_at(url, key, tools=False):
    """POST one chat request to URL as KEY: (status, error code or None)."""
    body = {"model": "gpt-4o-mini", "messages": QUESTION, **({"tools": OWN_TOOLS} if tools else {})}
    headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
    request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["error"]["code"]


def all_at_once(calls):
    """Run CALLS (functions of no argument) on threads that start together; their results in order."""
    start = threading.Barrier(len(calls))

    def run(call):
        start.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def spent_in_redis(prefix, key, unit="usd"):
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    day = dt.datetime.now(dt.timezone.utc).date().isoformat()
    value = client.get(f"{prefix}budget:key:{hashlib.sha256(key.encode()).hexdigest()[:16]}:{unit}:{day}")
    client.close()
    return float(value or 0)


def test_two_hosts_share_a_keys_dollar_budget_through_redis(tmp_path, llm_server, redis_prefix):
    def host(name):  # a serve process with a home of its own, sharing only the Redis
        return serving(tmp_path / name, llm_server, HYBRID_WEATHER_HOME=str(tmp_path / f"home-{name}"),
                       HYBRID_WEATHER_API_KEYS="team-a,team-b", HYBRID_WEATHER_KEY_BUDGETS="team-a=0.0001usd",
                       HYBRID_WEATHER_CACHE_URL=REDIS_URL, HYBRID_WEATHER_CACHE_PREFIX=redis_prefix)  # fmt: skip

    question = [{"role": "user", "content": "北京明天适合出游吗"}]
    with host("a") as a, host("b") as b:
        team_a = [openai.OpenAI(base_url=f"{h.url}/v1", api_key="team-a", max_retries=0) for h in (a, b)]
        llm_server.then(*[answer("适合。", **ONE_ANSWER) for _ in range(4)])
        team_a[0].chat.completions.create(model="gpt-4o-mini", messages=question)  # $0.000087: under
        team_a[1].chat.completions.create(model="gpt-4o-mini", messages=question)  # host b counts a's too
        with pytest.raises(openai.RateLimitError) as over:
            team_a[0].chat.completions.create(model="gpt-4o-mini", messages=question)
        assert over.value.code == "key_budget_exceeded" and "$0.0001 a day" in over.value.message
        assert "budget" in over.value.message and "00:00 UTC" in over.value.message
        assert 0 < int(over.value.response.headers["retry-after"]) <= 86_401
        # Weather lookups keep flowing for the key over budget; another key is not touched by it.
        rule = team_a[1].chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "上海今天天气"}]
        )
        assert rule.model == "hybrid-weather-rules"
        team_b = openai.OpenAI(base_url=f"{b.url}/v1", api_key="team-b", max_retries=0)
        team_b.chat.completions.create(model="gpt-4o-mini", messages=question)
        with pytest.raises(urllib.error.HTTPError) as asked:
            post(f"{a.url}/v1/ask", {"query": "北京明天适合出游吗", "today": TODAY.isoformat()},
                 {"authorization": "Bearer team-a"})  # fmt: skip
        assert asked.value.code == 429
    assert len(llm_server.requests) == 3  # the refused ones never reached the model


def test_a_token_budget_counts_in_the_process_without_redis(tmp_path, llm_server):
    client, router = client_for(tmp_path, llm_server, key_budgets="500tokens")
    llm_server.then(answer("适合。", **ONE_ANSWER), answer("适合。", **ONE_ANSWER))
    streamed = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "北京明天适合出游吗"}]}
    with client:
        first = client.post("/v1/chat/completions", json=streamed)  # a streamed answer counts as any other
        assert first.status_code == 200 and "适合" in first.text  # 520 tokens: over from now on
        error = error_of(client.post("/v1/ask", json={"query": "上海明天适合跑步吗"}), 429, "key_budget_exceeded")
        assert "500 tokens a day" in error["message"] and "520 tokens today" in error["message"]
        # Streamed or not, over budget is a 429 before anything is sent, and lookups are still answered.
        error_of(client.post("/v1/chat/completions", json=streamed), 429, "key_budget_exceeded")
        assert client.post("/v1/ask", json={"query": "上海今天天气"}).status_code == 200
    router.close()
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("value", ["5", "five usd", "team=5eur", "0usd", "team-a=", "5usd,,"])
def test_a_budget_that_is_not_one_is_refused_naming_the_variable(value):
    with pytest.raises(ConfigurationError, match="HYBRID_WEATHER_KEY_BUDGETS"):
        Budgets.parse(value)
    command = [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30,
                            env=subprocess_env(HYBRID_WEATHER_KEY_BUDGETS=value))  # fmt: skip
    assert result.returncode == 2 and "HYBRID_WEATHER_KEY_BUDGETS" in result.stderr and "Traceback" not in result.stderr


def test_forty_requests_at_once_across_two_hosts_spend_what_the_budget_allows(tmp_path, llm_server, redis_prefix):
    # A budget of 4.5 answers: a key may end the day at most one answer over (the last one let through saw
    # it under), so 5 answers at the most, whichever host, route or pass-through each request takes.
    budget = 4.5 * ANSWER_USD
    llm_server.repeat_last = True
    llm_server.then({"sleep": 0.3, "then": answer("适合。", **ONE_ANSWER)})

    def host(name):
        return serving(tmp_path / name, llm_server, HYBRID_WEATHER_HOME=str(tmp_path / f"home-{name}"),
                       HYBRID_WEATHER_API_KEYS="team-a", HYBRID_WEATHER_KEY_BUDGETS=f"team-a={budget:.10f}usd",
                       HYBRID_WEATHER_PASS_THROUGH="1", HYBRID_WEATHER_CACHE_URL=REDIS_URL,
                       HYBRID_WEATHER_CACHE_PREFIX=redis_prefix)  # fmt: skip

    with host("a") as a, host("b") as b:
        calls = [lambda url=h.url, tools=n % 4 == 0: chat_at(url, "team-a", tools)
                 for n, h in enumerate([a, b] * 20)]  # fmt: skip
        results = all_at_once(calls)
        answered = [r for r in results if r[0] == 200]
        refused = [r for r in results if r != (200, None)]
        assert 1 <= len(answered) <= 5 and set(refused) == {(429, "key_budget_exceeded")}, results
        assert len(llm_server.requests) == len(answered)  # the refused ones never reached the model
        # What Redis counts, once every reservation is settled, is what the model was paid for.
        deadline = dt.datetime.now() + dt.timedelta(seconds=5)
        while (
            spent_in_redis(redis_prefix, "team-a") > len(answered) * ANSWER_USD + 1e-9 and dt.datetime.now() < deadline
        ):
            threading.Event().wait(0.05)
        assert spent_in_redis(redis_prefix, "team-a") == pytest.approx(len(answered) * ANSWER_USD)
        # Pass-through is checked like any request to the model: over budget, it is refused too.
        if len(answered) * ANSWER_USD >= budget:
            assert chat_at(b.url, "team-a", tools=True) == (429, "key_budget_exceeded")


def test_a_keys_requests_in_flight_are_capped_across_two_hosts(tmp_path, llm_server, redis_prefix):
    llm_server.repeat_last = True
    llm_server.then({"status": 401}, {"sleep": 1.0, "then": answer("适合。", **ONE_ANSWER)})

    def host(name):
        return serving(tmp_path / name, llm_server, HYBRID_WEATHER_HOME=str(tmp_path / f"home-{name}"),
                       HYBRID_WEATHER_API_KEYS="team-a,team-b", HYBRID_WEATHER_KEY_BUDGETS="100000tokens",
                       HYBRID_WEATHER_KEY_CONCURRENCY="2", HYBRID_WEATHER_PASS_THROUGH="1",
                       HYBRID_WEATHER_CACHE_URL=REDIS_URL, HYBRID_WEATHER_CACHE_PREFIX=redis_prefix)  # fmt: skip

    with host("a") as a, host("b") as b:
        # A request the model refused gives its reservation back: the budget is whole after it.
        assert chat_at(a.url, "team-a") == (503, "llm_unavailable")
        assert spent_in_redis(redis_prefix, "team-a", "tokens") == 0
        results = all_at_once([lambda url=h.url, n=n: chat_at(url, "team-a", tools=n % 3 == 0)
                               for n, h in enumerate([a, b] * 5)])  # fmt: skip
        assert sorted(results, key=str) == [(200, None)] * 2 + [(429, "key_concurrency_exceeded")] * 8, results
        # Another key has slots of its own; and the slots are free again once the answers are in.
        assert all_at_once([lambda: chat_at(a.url, "team-b"), lambda: chat_at(b.url, "team-b")]) == [(200, None)] * 2
        assert spent_in_redis(redis_prefix, "team-a", "tokens") == 1040  # two answers of 520 tokens: spent
        assert chat_at(b.url, "team-a") == (200, None)


def test_forty_requests_at_once_in_one_process_without_redis_spend_what_the_budget_allows(tmp_path, llm_server):
    # The same reservation, under the process's lock: one worker, its asyncio loop and its thread pool.
    llm_server.repeat_last = True
    llm_server.then({"sleep": 0.3, "then": answer("适合。", **ONE_ANSWER)})
    with serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS="team-a", HYBRID_WEATHER_PASS_THROUGH="1",
                 HYBRID_WEATHER_KEY_BUDGETS="2340tokens") as server:  # 4.5 answers of 520 tokens  # fmt: skip
        results = all_at_once([lambda n=n: chat_at(server.url, "team-a", tools=n % 4 == 0) for n in range(40)])
        answered = [r for r in results if r == (200, None)]
        assert 1 <= len(answered) <= 5 and len(answered) + results.count((429, "key_budget_exceeded")) == 40
        assert len(llm_server.requests) == len(answered)


def test_a_streamed_answer_whose_client_left_counts_what_its_model_spent(tmp_path, llm_server, redis_prefix):
    # The client reads one piece and hangs up; the model writes on to its end (its tokens are spent), and
    # the reservation settles at them — neither given back nor kept at the worst cost.
    llm_server.then({**answer("北京明天多云，适合出游。" * 4, **ONE_ANSWER), "token_gap": 0.05})
    with serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS="team-a", HYBRID_WEATHER_KEY_BUDGETS="100000tokens",
                 HYBRID_WEATHER_CACHE_URL=REDIS_URL, HYBRID_WEATHER_CACHE_PREFIX=redis_prefix) as server:  # fmt: skip
        body = {"model": "gpt-4o-mini", "messages": QUESTION, "stream": True}
        headers = {"content-type": "application/json", "authorization": "Bearer team-a"}
        request = urllib.request.Request(f"{server.url}/v1/chat/completions", json.dumps(body).encode(), headers)
        response = urllib.request.urlopen(request, timeout=10)
        assert response.readline().startswith(b"data: ")
        response.close()
        reserved = spent_in_redis(redis_prefix, "team-a", "tokens")
        assert reserved >= 8000  # the worst cost, while the model still writes
        deadline = time.monotonic() + 10
        while spent_in_redis(redis_prefix, "team-a", "tokens") != 520 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert spent_in_redis(redis_prefix, "team-a", "tokens") == 520


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_concurrency_cap_that_is_not_one_is_refused_naming_the_variable(value):
    with pytest.raises(ConfigurationError, match="HYBRID_WEATHER_KEY_CONCURRENCY"):
        Budgets.parse("5usd", concurrency=value)
    command = [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30,
                            env=subprocess_env(HYBRID_WEATHER_KEY_CONCURRENCY=value))  # fmt: skip
    assert result.returncode == 2 and "HYBRID_WEATHER_KEY_CONCURRENCY" in result.stderr
    assert "Traceback" not in result.stderr

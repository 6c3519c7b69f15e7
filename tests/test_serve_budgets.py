"""Daily LLM budgets per key (HYBRID_WEATHER_KEY_BUDGETS, router/serve/budgets.py): over budget, a key's
questions for the model get 429 while its weather lookups are answered; two serve processes count one
budget through the real Redis; tokens are counted too, in one process without Redis; bad settings are
refused at start."""

import subprocess
import sys
import urllib.error

import pytest
from live_server import post, serving
from test_serve import client_for, error_of

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.router.serve.budgets import Budgets

from conftest import REDIS_URL, TODAY, subprocess_env
from fake_openai import answer

openai = pytest.importorskip("openai")
#: One answer of the fake model: 500 prompt and 20 completion tokens of gpt-4o-mini, about $0.000087.
ONE_ANSWER = {"prompt": 500, "completion": 20}


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

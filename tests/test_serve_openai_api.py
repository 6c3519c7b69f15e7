"""The drop-in speaks today's OpenAI API (issue 52, items 2 and 3): GET /v1/models and POST /v1/responses,
driven by the stock `openai` SDK against a real `serve` process whose model is tests/fake_openai.py."""

import json
import sqlite3
from pathlib import Path

import pytest
from live_server import serving

import hybrid_weather.agent.llm

from fake_openai import answer, tool_calls

openai = pytest.importorskip("openai")

TEAM_KEY = "team-key-for-the-models-list"


def test_the_sdk_lists_and_retrieves_the_services_models_behind_its_keys(tmp_path, llm_server):
    (tmp_path / "home").mkdir()
    # A model of the user's own table (models.json in the home) is one a request may name, so it is listed.
    (tmp_path / "home" / "models.json").write_text(
        json.dumps({"models": {"my-local-qwen": {"input": 0.0, "output": 0.0, "as_of": "2026-12-01"}}}), "utf-8"
    )
    table = Path(hybrid_weather.agent.llm.__file__).parent / "data" / "models.json"
    shipped = json.loads(table.read_text("utf-8"))["models"]
    with serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS=TEAM_KEY, HYBRID_WEATHER_HOME=str(tmp_path / "home"),
                 HYBRID_WEATHER_MODEL="gpt-4o") as server:  # fmt: skip
        anonymous = openai.OpenAI(base_url=f"{server.url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            anonymous.models.list()
        with pytest.raises(openai.AuthenticationError):
            anonymous.models.retrieve("gpt-4o")
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=TEAM_KEY, max_retries=0)
        listed = list(client.models.list())
        ids = [model.id for model in listed]
        assert ids[0] == "gpt-4o"  # the service's default first
        assert set(ids) == {*shipped, "my-local-qwen", "hybrid-weather-rules"} and len(ids) == len(set(ids))
        assert all(model.object == "model" and model.owned_by == "hybrid-weather" for model in listed)
        mine = client.models.retrieve("my-local-qwen")
        assert (mine.id, mine.object, mine.created) == ("my-local-qwen", "model", 1796083200)  # 2026-12-01 UTC
        assert client.models.retrieve("openai/gpt-4o-mini").id == "openai/gpt-4o-mini"  # as a request may name it
        with pytest.raises(openai.NotFoundError) as unknown:
            client.models.retrieve("gpt-nonexistent")
        error = unknown.value.body
        assert error["code"] == "model_not_found" and error["type"] == "invalid_request_error"
        assert "gpt-nonexistent" in error["message"] and "Traceback" not in unknown.value.response.text
    assert llm_server.requests == []  # listing asks no model


def test_the_sdk_asks_the_responses_api_rule_answers_without_a_model_llm_answers_through_it(tmp_path, llm_server):
    with serving(tmp_path, llm_server) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        raw = client.responses.with_raw_response.create(model="gpt-4o-mini", input="上海今天天气")
        rule = raw.parse()
        assert raw.headers["x-hybrid-weather-route"] == "rule" and rule.id == "resp_" + raw.headers["x-request-id"]
        assert "上海今天" in rule.output_text and rule.status == "completed" and rule.model == "hybrid-weather-rules"
        assert rule.usage.total_tokens == 0 and rule.output[0].role == "assistant"
        # A follow-up names the response it follows: 那北京呢 borrows its day, as in a conversation.
        follow = client.responses.create(model="gpt-4o-mini", input="那北京呢？", previous_response_id=rule.id)
        assert "北京今天" in follow.output_text and follow.previous_response_id == rule.id
        verdict = client.post("/feedback", cast_to=object, body={"request_id": rule.id, "verdict": "wrong"})
        verdict.pop("pending", None)  # its row may be a batch away yet: then it is applied as the row lands
        assert verdict == {"request_id": rule.id.removeprefix("resp_"), "verdict": "wrong"}  # the id names its row
        assert llm_server.requests == []  # neither reached the model
        llm_server.then(
            tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
            answer("明天北京多云，适合出游。", prompt=560, completion=30),
        )
        llm = client.responses.create(
            model="gpt-4o-mini", instructions="回答要简短", temperature=0.2, max_output_tokens=300,
            input=[{"role": "user", "content": [{"type": "input_text", "text": "北京明天适合出游吗"}]}],
        )  # fmt: skip
        assert llm.output_text == "明天北京多云，适合出游。" and llm.model == "gpt-4o-mini"
        assert (llm.usage.input_tokens, llm.usage.output_tokens, llm.usage.total_tokens) == (980, 55, 1035)
        assert llm.instructions == "回答要简短" and llm.temperature == 0.2 and llm.max_output_tokens == 300
        sent = llm_server.requests[-1]
        assert (sent["temperature"], sent["max_tokens"]) == (0.2, 300)  # max_output_tokens is the model's cap
        with pytest.raises(openai.NotFoundError) as unknown:
            client.responses.create(model="gpt-4o-mini", input="那上海呢？", previous_response_id="resp_nothing-here")
        assert unknown.value.body["code"] == "previous_response_not_found"
        with pytest.raises(openai.UnprocessableEntityError):
            client.responses.create(model="gpt-4o-mini", input=[])
        with pytest.raises(openai.UnprocessableEntityError) as hot:
            client.responses.create(model="gpt-4o-mini", input="北京明天适合出游吗", temperature=9)
        assert hot.value.body["code"] == "invalid_temperature"
    ledger = sqlite3.connect(server.ledger)
    rows = ledger.execute("SELECT id, route, prompt_tokens FROM requests ORDER BY id").fetchall()
    assert [(route, tokens) for _, route, tokens in rows] == [("rule", None), ("rule", None), ("llm", 980)]
    assert rows[0][0] == rule.id.removeprefix("resp_") and rows[2][0] == llm.id.removeprefix("resp_")


def test_the_sdk_streams_responses_events_and_an_error_event_when_the_model_breaks_off(tmp_path, llm_server):
    with serving(tmp_path, llm_server) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        rule = list(client.responses.create(model="gpt-4o-mini", input="上海今天天气", stream=True))
        llm_server.then(answer("明天北京多云，适合出游。"))
        llm = list(client.responses.create(model="gpt-4o-mini", input="北京明天适合出游吗", stream=True))
        llm_server.then({**answer("明天上海有小雨，记得带伞。"), "cut_after": 3})  # two pieces, then the line drops
        broken = list(client.responses.create(model="gpt-4o-mini", input="上海明天适合跑步吗", stream=True))
    for events, text in ((rule, None), (llm, "明天北京多云，适合出游。")):
        kinds = [event.type for event in events]
        assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
        assert "response.output_text.delta" in kinds and "response.output_text.done" in kinds
        assert [event.sequence_number for event in events] == list(range(len(events)))
        said = "".join(event.delta for event in events if event.type == "response.output_text.delta")
        done = events[-1].response
        assert said == done.output_text and done.status == "completed" and (text is None or said == text)
        assert events[0].response.id == done.id and done.id.startswith("resp_")
    assert "上海今天" in rule[-1].response.output_text and rule[-1].response.usage.total_tokens == 0
    assert llm[-1].response.model == "gpt-4o-mini"
    kinds = [event.type for event in broken]
    assert kinds[0] == "response.created" and kinds[-2:] == ["error", "response.failed"]
    assert "".join(event.delta for event in broken if event.type == "response.output_text.delta") == "明天上海"
    assert broken[-2].code == "llm_unavailable" and broken[-1].response.status == "failed"


def test_responses_keep_the_keys_budgets_and_conversations_of_each_key(tmp_path, llm_server):
    keys = {"HYBRID_WEATHER_API_KEYS": "key-a,key-b", "HYBRID_WEATHER_KEY_BUDGETS": "5usd,key-b=1tokens"}
    with serving(tmp_path, llm_server, **keys) as server:
        a, b = (openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0) for key in ("key-a", "key-b"))
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="wrong", max_retries=0).responses.create(
                model="gpt-4o-mini", input="上海今天天气"
            )
        first = a.responses.create(model="gpt-4o-mini", input="北京明天天气")
        assert "上海明天" in a.responses.create(model="gpt-4o-mini", input="那上海呢？",
                                               previous_response_id=first.id).output_text  # fmt: skip
        with pytest.raises(openai.NotFoundError):  # another key's response is no conversation of b's
            b.responses.create(model="gpt-4o-mini", input="那上海呢？", previous_response_id=first.id)
        assert "上海今天" in b.responses.create(model="gpt-4o-mini", input="上海今天天气").output_text
        llm_server.then(answer("适合，多云。", prompt=50, completion=5))
        assert b.responses.create(model="gpt-4o-mini", input="北京明天适合出游吗").output_text == "适合，多云。"
        with pytest.raises(openai.RateLimitError) as over:  # b's day of tokens is spent: no more model answers
            b.responses.create(model="gpt-4o-mini", input="北京明天适合出游吗")
        assert over.value.body["code"] == "key_budget_exceeded"
        assert "上海今天" in b.responses.create(model="gpt-4o-mini", input="上海今天天气").output_text  # rules still
        with pytest.raises(openai.PermissionDeniedError) as own_tools:
            a.responses.create(model="gpt-4o-mini", input="上海今天天气",
                               tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}}])  # fmt: skip
        assert own_tools.value.body["code"] == "pass_through_off"
    assert len(llm_server.requests) == 1


def test_a_responses_request_with_its_own_tools_passes_through_when_the_operator_allows(tmp_path, llm_server):
    upstream = {"id": "resp_upstream1", "object": "response", "created_at": 1.0, "status": "completed",
                "model": "gpt-4o-mini", "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1",
                                                    "name": "lookup", "arguments": "{}", "status": "completed"}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": 70, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 9,
                          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 79}}  # fmt: skip
    llm_server.then({"reply": upstream})
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    with serving(tmp_path, llm_server, HYBRID_WEATHER_PASS_THROUGH="1") as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        raw = client.responses.with_raw_response.create(model="gpt-4o-mini", input="上海今天天气", tools=tools)
        reply = raw.parse()
    assert raw.headers["x-hybrid-weather-route"] == "pass-through" and reply.output[0].name == "lookup"
    assert llm_server.requests[-1]["tools"] == tools and llm_server.requests[-1]["input"] == "上海今天天气"
    rows = sqlite3.connect(server.ledger).execute("SELECT route, prompt_tokens, completion_tokens FROM requests")
    assert rows.fetchall() == [("llm", 70, 9)]

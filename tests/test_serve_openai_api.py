"""The drop-in speaks today's OpenAI API (issue 52, items 2 and 3): GET /v1/models and POST /v1/responses,
driven by the stock `openai` SDK against a real `serve` process whose model is tests/fake_openai.py."""

import json
from pathlib import Path

import pytest
from live_server import serving

import hybrid_weather.agent.llm

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

"""The service in-process, through Starlette's test client: a router with the demo provider (and a scripted
model, given one), and the error body every failure of the service has."""

from starlette.testclient import TestClient

from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.serve import create_app

from support import FAST_HTTP, FAST_LLM

KEY = "sk-test-upstream-0123456789"


def client_for(tmp_path, llm_server=None, **settings):
    values = {"provider": "demo"}
    if llm_server is not None:
        values |= {"openai_api_key": KEY, "openai_base_url": llm_server.base_url, "model": "gpt-4o-mini"}
    router = HybridRouter(settings=Settings(**(values | settings)), ledger=str(tmp_path / "ledger.db"),
                          llm_options=FAST_LLM, http_options=FAST_HTTP)  # fmt: skip
    return TestClient(create_app(router)), router


def error_of(response, status, code=None):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message", "code"}
    if code:
        assert body["error"]["code"] == code
    assert "Traceback" not in response.text
    return body["error"]

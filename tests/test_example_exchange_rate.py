"""examples/exchange_rate.py against a local server that speaks Frankfurter's /latest, with faults."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from hybrid_weather.router import HybridRouter, Settings

from fake_openai import answer, tool_calls
from support import FAST_HTTP, FAST_LLM, TODAY

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "exchange_rate.py"


class FakeRates:
    """GET /latest?base=USD&symbols=CNY → {"amount", "base", "date", "rates": {"CNY": 7.12}}; each request
    takes the next scripted fault ("500", "slow", "malformed", "not_rates", "404") first."""

    def __init__(self) -> None:
        self.rates = {("USD", "CNY"): 7.12, ("EUR", "CNY"): 7.71}
        self.faults: deque[str] = deque()
        self.requests = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                fake.requests += 1
                fault = fake.faults.popleft() if fake.faults else None
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if fault == "slow":
                    time.sleep(3)
                pair = (query.get("base"), query.get("symbols"))
                if fault in ("500", "404") or url.path != "/v1/latest" or (fault is None and pair not in fake.rates):
                    self._send(int(fault) if fault else 404, {"message": "not found"})
                elif fault == "malformed":
                    self._send(200, None, raw=b'{"rates": {"CNY": 7.1')
                elif fault == "not_rates":
                    self._send(200, {"rates": {"CNY": "lots"}})
                else:
                    self._send(200, {"amount": 1.0, "base": pair[0], "date": "2026-11-27",
                                     "rates": {pair[1]: fake.rates[pair]}})  # fmt: skip

            def _send(self, status, payload, raw=None):
                body = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def rates():
    fake = FakeRates()
    yield fake
    fake.server.shutdown()


@pytest.fixture
def example(rates, monkeypatch):
    spec = importlib.util.spec_from_file_location("exchange_rate_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RATES_URL", rates.url)
    monkeypatch.setattr(module, "TIMEOUT_S", 0.5)  # the "slow" fault answers after 3 s
    return module


def ask(weather_server, llm_server, example, *calls):
    """One question whose model calls exchange_rate with each of CALLS' arguments in turn; the tool
    results the model was sent."""
    for arguments in calls:
        llm_server.then(tool_calls(("exchange_rate", arguments)))
    llm_server.then(answer("好的。"))
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key="sk-x", openai_base_url=llm_server.base_url,
                        model="gpt-4o-mini")  # fmt: skip
    with HybridRouter(settings=settings, ledger="off", http_options=FAST_HTTP, llm_options=FAST_LLM,
                      tools=[example.exchange_rate]) as router:  # fmt: skip
        router.ask("美元兑人民币汇率多少", today=TODAY)
    return [json.loads(m["content"]) for m in llm_server.requests[-1]["messages"] if m["role"] == "tool"]


def test_the_model_gets_the_rate_and_a_second_ask_is_served_from_the_cache(weather_server, llm_server, rates, example):
    first, second = ask(weather_server, llm_server, example, {"base": "usd"}, {"base": "USD", "quote": "CNY"})
    assert first["rate"] == 7.12 and first["base"] == "USD" and first["quote"] == "CNY"
    assert second == first and rates.requests == 1  # cached


@pytest.mark.parametrize("fault", ["500", "slow", "malformed", "not_rates"])
def test_a_failing_service_gives_the_last_good_rate_marked_stale(weather_server, llm_server, rates, example, fault):
    (fresh,) = ask(weather_server, llm_server, example, {"base": "EUR"})
    example.FRESH_S = 0  # the cached rate is due for a refresh
    rates.faults.append(fault)
    (stale,) = ask(weather_server, llm_server, example, {"base": "EUR"})
    assert stale["rate"] == fresh["rate"] == 7.71 and stale["stale"] is True and "暂时无法访问" in stale["note"]


def test_a_failing_service_with_nothing_cached_is_an_error_the_model_reads(weather_server, llm_server, rates, example):
    rates.faults.append("500")
    (result,) = ask(weather_server, llm_server, example, {"base": "USD"})
    assert "汇率服务暂时无法访问" in result["error"]


def test_a_currency_the_service_does_not_know_and_a_code_that_is_not_one(weather_server, llm_server, rates, example):
    unknown, bad = ask(weather_server, llm_server, example, {"base": "XYZ"}, {"base": "美元"})
    assert "不认识的货币代码" in unknown["error"]
    assert "三个英文字母" in bad["error"] and rates.requests == 1

"""The LLM's travel_time tool (agent/llm/travel.py) against a local server that speaks AMap's documented
route-planning responses (driving, transit), with its faults; without AMAP_KEY the tool is absent and the
system prompt tells the model it has no travel times."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from hybrid_weather.router import HybridRouter, Settings

from fake_openai import answer, tool_calls
from fake_weather import free_port
from support import FAST_HTTP, FAST_LLM, TODAY

DRIVING = {"status": "1", "info": "OK", "infocode": "10000", "count": "1",
           "route": {"origin": "116.4,39.9", "destination": "117.2,39.1", "taxi_cost": "350",
                     "paths": [{"distance": "137512", "duration": "6420", "strategy": "速度最快", "tolls": "45",
                                "steps": []}]}}  # fmt: skip
TRANSIT = {"status": "1", "info": "OK", "infocode": "10000", "count": "1",
           "route": {"origin": "116.4,39.9", "destination": "117.2,39.1", "distance": "120000", "taxi_cost": "350",
                     "transits": [{"cost": "54.5", "duration": "3900", "nightflag": "0", "walking_distance": "850",
                                   "distance": "121300", "missed": "0", "segments": []}]}}  # fmt: skip


class FakeAMapRoutes:
    """Answers /v3/direction/driving and /v3/direction/transit/integrated; FAULT makes the next answers
    one of: "refused" (status 0, infocode 10003), "malformed", "500", "no-route"."""

    def __init__(self):
        self.fault, self.requests = None, []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlparse(self.path)
                fake.requests.append((url.path, {k: v[0] for k, v in parse_qs(url.query).items()}))
                status, body = 200, DRIVING if url.path == "/v3/direction/driving" else TRANSIT
                if fake.fault == "refused":
                    body = {"status": "0", "info": "DAILY_QUERY_OVER_LIMIT", "infocode": "10003"}
                elif fake.fault == "malformed":
                    body = {"route": "not an object"}
                elif fake.fault == "no-route":
                    body = {"status": "1", "info": "OK", "infocode": "10000", "route": {"paths": []}}
                elif fake.fault == "500":
                    status, body = 500, {"error": "upstream"}
                raw = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def amap():
    server = FakeAMapRoutes()
    yield server
    server.stop()


def _router(weather_server, llm_server, amap_url=None):
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key="sk-test", model="gpt-4o-mini",
                        openai_base_url=llm_server.base_url, amap_url=amap_url,
                        amap_key="amap-test-key" if amap_url else None)  # fmt: skip
    return HybridRouter(settings=settings, ledger="off", http_options=FAST_HTTP, llm_options=FAST_LLM)


def _tool_results(request):
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize(("mode", "minutes", "km"), [("driving", 107, 137.5), ("transit", 65, 121.3)])
def test_the_model_gets_amaps_duration_and_distance(weather_server, llm_server, amap, mode, minutes, km):
    llm_server.then(tool_calls(("travel_time", {"from_place": "北京", "to_place": "天津", "mode": mode})),
                    answer("大约需要一个多小时。"))  # fmt: skip
    with _router(weather_server, llm_server, amap.url) as router:
        got = router.ask("从北京到天津要多久", today=TODAY)
    (result,) = _tool_results(llm_server.requests[-1])
    assert (result["duration_minutes"], result["distance_km"], result["mode"]) == (minutes, km, mode)
    assert result["from"] == "北京市" and result["to"] == "天津市" and got.llm.tool_failures == 0
    path, params = amap.requests[-1]
    assert (
        path.endswith("/driving" if mode == "driving" else "/transit/integrated") and params["key"] == "amap-test-key"
    )
    assert params["origin"].startswith("116.") and params["destination"].startswith("117.")
    assert "travel_time" in {t["function"]["name"] for t in llm_server.requests[0]["tools"]}


@pytest.mark.parametrize(("fault", "said"), [("refused", "10003"), ("malformed", "envelope"),
                                             ("500", "unavailable"), ("no-route", "no driving route")])  # fmt: skip
def test_a_fault_of_amaps_is_a_message_the_model_reads(weather_server, llm_server, amap, fault, said):
    amap.fault = fault
    llm_server.then(tool_calls(("travel_time", {"from_place": "北京", "to_place": "天津"})), answer("查不到。"))
    with _router(weather_server, llm_server, amap.url) as router:
        got = router.ask("从北京到天津要多久", today=TODAY)
    (result,) = _tool_results(llm_server.requests[-1])
    assert said in json.dumps(result, ensure_ascii=False) and got.llm.tool_failures == 1
    assert "amap-test-key" not in json.dumps(llm_server.requests[-1], ensure_ascii=False)


def test_without_a_key_there_is_no_travel_tool_and_the_model_is_told(weather_server, llm_server):
    llm_server.then(answer("无法查询出行时间。"))
    with _router(weather_server, llm_server) as router:
        router.ask("从北京到天津要多久", today=TODAY)
    sent = llm_server.requests[-1]
    assert "travel_time" not in {t["function"]["name"] for t in sent["tools"]}
    assert "没有出行时间" in sent["messages"][0]["content"]

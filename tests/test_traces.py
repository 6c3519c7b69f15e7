"""OpenTelemetry traces (issue 40, item 6): a span per request with its routing, model calls and tool calls
as children, carrying the route, model, tokens, cost and the ledger row's id; configured by OTEL_*.

Each case runs in a process of its own: OpenTelemetry's tracer provider is set once a process."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from fake_openai import answer, tool_calls
from support import subprocess_env

# A program with its own provider and the SDK's in-memory exporter; prints what was exported.
PROGRAM = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from hybrid_weather.router import HybridRouter, LLMUnavailable, Settings

settings = Settings(provider="demo", openai_api_key="sk-test", openai_base_url=sys.argv[1], model="gpt-4o-mini")
ids = []
options = {"backoff_base": 0.01, "max_attempts": 1}
with HybridRouter(settings=settings, ledger=sys.argv[2], llm_options=options) as router:
    ids.append(router.ask("上海明天天气").request_id)
    ids.append(router.ask("北京明天适合出游吗").request_id)
    try:
        router.ask("杭州明天适合爬山吗")
    except LLMUnavailable:
        ids.append(None)
spans = [
    {"name": s.name, "id": s.context.span_id, "trace": s.context.trace_id,
     "parent": s.parent.span_id if s.parent else None, "start": s.start_time, "end": s.end_time,
     "status": s.status.status_code.name, "attributes": dict(s.attributes)}
    for s in exporter.get_finished_spans()
]
print(json.dumps({"ids": ids, "spans": spans}, ensure_ascii=False))
"""


def test_each_request_is_a_trace_of_its_routing_model_calls_and_tool_calls(llm_server, tmp_path):
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
        answer("适合。", prompt=560, completion=30),
        {"status": 500, "body": {"error": {"message": "down", "type": "server_error"}}},
    )
    ledger = tmp_path / "ledger.db"
    done = subprocess.run([sys.executable, "-c", PROGRAM, llm_server.base_url, str(ledger)], capture_output=True,
                          text=True, env=subprocess_env(), timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    rule_id, llm_id, failed = said["ids"]
    requests = [s for s in said["spans"] if s["name"] == "hybrid_weather.ask"]
    assert [r["attributes"]["hybrid_weather.route"] for r in requests] == ["rule", "llm", "llm"]
    rule, llm, broken = requests
    assert rule["attributes"]["hybrid_weather.request_id"] == rule_id and failed is None
    assert llm["attributes"]["hybrid_weather.request_id"] == llm_id
    # A failed request's span names its ledger row too.
    with sqlite3.connect(ledger) as db:
        (failed_row,) = db.execute("SELECT id FROM requests WHERE outcome != 'ok'").fetchall()
    assert broken["attributes"]["hybrid_weather.request_id"] == failed_row[0]
    assert llm["attributes"]["gen_ai.request.model"] == "gpt-4o-mini"
    assert (llm["attributes"]["gen_ai.usage.input_tokens"], llm["attributes"]["gen_ai.usage.output_tokens"]) == (
        980,
        55,
    )
    assert llm["attributes"]["hybrid_weather.cost_usd"] > 0 and broken["status"] == "ERROR"
    children = [s for s in said["spans"] if s["parent"] == llm["id"]]
    assert sorted(s["name"] for s in children) == [
        "chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool get_weather", "hybrid_weather.route",
    ]  # fmt: skip
    for child in children:
        assert child["trace"] == llm["trace"] and llm["start"] <= child["start"] <= child["end"] <= llm["end"]
    (tool,) = [s for s in children if s["name"].startswith("execute_tool")]
    assert tool["attributes"]["gen_ai.tool.name"] == "get_weather" and tool["attributes"]["hybrid_weather.tool.ok"]
    chats = sorted((s for s in children if s["name"].startswith("chat")), key=lambda s: s["start"])
    assert chats[0]["end"] <= tool["start"] <= tool["end"] <= chats[1]["start"]  # model, its tool, model again
    assert [s["name"] for s in said["spans"] if s["parent"] == rule["id"]] == ["hybrid_weather.route"]


def test_otel_traces_exporter_console_prints_spans_to_stderr_and_leaves_stdout_the_answer():
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", "--provider", "demo", "--json", "上海明天天气"],
        capture_output=True, text=True, timeout=60,
        env=subprocess_env(OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="weather-test"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    request_id = json.loads(done.stdout)["request_id"]
    assert '"name": "hybrid_weather.ask"' in done.stderr and '"service.name": "weather-test"' in done.stderr
    assert request_id in done.stderr


def test_an_exporter_that_is_not_one_is_one_clear_error():
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", "--provider", "demo", "上海明天天气"],
        capture_output=True, text=True, timeout=60, env=subprocess_env(OTEL_TRACES_EXPORTER="jaegerr"),
    )  # fmt: skip
    assert done.returncode == 2 and "OTEL_TRACES_EXPORTER" in done.stderr and "Traceback" not in done.stderr
    off = subprocess.run(
        [sys.executable, "-m", "hybrid_weather.router", "--provider", "demo", "上海明天天气"],
        capture_output=True, text=True, timeout=60, env=subprocess_env(OTEL_TRACES_EXPORTER="console",
                                                                       OTEL_SDK_DISABLED="true"),
    )  # fmt: skip
    assert off.returncode == 0 and "hybrid_weather.ask" not in off.stderr

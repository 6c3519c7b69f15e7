"""The monitoring files in docs/monitoring/ hold for the metrics that exist: Prometheus's own promtool
checks the alert rules and runs their unit tests (alerts.test.yml), checks every expression of the Grafana
dashboard, and every metric either file names is one that a served router exports — after rule answers,
a model's answer with a tool call and a failure."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fake_openai import answer, tool_calls
from serve_client import client_for
from support import service_missing

MONITORING = Path(__file__).parents[1] / "docs" / "monitoring"
ALERTS = MONITORING / "alerts.yml"
DASHBOARD = json.loads((MONITORING / "grafana-dashboard.json").read_text("utf-8"))
#: Grafana's own variables, as Prometheus would see them once Grafana has put a value in.
GRAFANA_VARIABLES = {"$__rate_interval": "2m", "$__range": "1h", "$__interval": "1m"}


@pytest.fixture(scope="module")
def promtool():
    found = shutil.which("promtool")
    if found is None:
        service_missing("no promtool to check the alert rules with: apt-get install prometheus")
    return found


def _dashboard_expressions():
    expressions = [target["expr"] for panel in DASHBOARD["panels"] for target in panel.get("targets", [])]
    for name, value in GRAFANA_VARIABLES.items():
        expressions = [expression.replace(name, value) for expression in expressions]
    return expressions


def _alert_expressions():
    rules = yaml.safe_load(ALERTS.read_text("utf-8"))
    return {rule["alert"]: rule["expr"] for group in rules["groups"] for rule in group["rules"]}


def test_promtool_accepts_the_alert_rules_and_their_unit_tests_pass(promtool):
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", "alerts.test.yml"], cwd=MONITORING, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
    # The seeds' three figures (tool success, LLM failures, rule share) and spend each have an alert.
    assert {"HybridWeatherToolSuccessLow", "HybridWeatherLLMFailing", "HybridWeatherRuleShareFalling",
            "HybridWeatherSpendHigh"} <= set(_alert_expressions())  # fmt: skip


def test_every_dashboard_expression_is_promql_that_promtool_accepts(promtool, tmp_path):
    expressions = _dashboard_expressions()
    assert len(expressions) >= 10
    # promtool checks an expression inside a rule file: each one becomes a recording rule.
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:panel_{i}", "expr": expression}
                                                         for i, expression in enumerate(expressions)]}]}  # fmt: skip
    file = tmp_path / "dashboard-rules.yml"
    file.write_text(yaml.safe_dump(rules, allow_unicode=True), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "rules", str(file)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert DASHBOARD["uid"] and len({panel["id"] for panel in DASHBOARD["panels"]}) == len(DASHBOARD["panels"])


def test_every_metric_the_files_name_is_one_the_service_exports(tmp_path, llm_server):
    client, router = client_for(tmp_path, llm_server)
    with client:
        for query in ("上海今天天气", "北京明天天气"):
            assert client.post("/v1/ask", json={"query": query}).status_code == 200
        llm_server.then(tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
                        answer("明天北京多云，适合出游。", prompt=560, completion=30))  # fmt: skip
        assert client.post("/v1/ask", json={"query": "北京明天适合出游吗"}).status_code == 200
        # The script is spent: the model answers 500 to every retry.
        assert client.post("/v1/ask", json={"query": "帮我写一首关于秋天的诗"}).status_code == 503
        exported = client.get("/metrics").text
    router.close()
    samples = set(re.findall(r"^([a-z_]+)(?:\{|\s)", exported, re.M))
    # A labelled counter nothing has counted yet (a dropped cache copy) has its TYPE line and no sample.
    for name, kind in re.findall(r"^# TYPE (\w+) (\w+)$", exported, re.M):
        counter = {name, name.removesuffix("_total") + "_total"}
        samples |= counter if kind == "counter" else {f"{name}_bucket", f"{name}_count", f"{name}_sum"}
    assert 'hybrid_weather_tool_calls_total{outcome="ok",tool="get_weather"} 1.0' in exported
    assert 'outcome="LLMUnavailable"' in exported
    named = set()
    for expression in [*_dashboard_expressions(), *_alert_expressions().values()]:
        named |= set(re.findall(r"\b(hybrid_weather_[a-z_]+)\b", expression))
    assert named and sorted(named - samples) == []
    # Every label an expression selects on is one the metric carries.
    for selector in re.findall(r"(hybrid_weather_[a-z_]+)\{([^}]*)\}", " ".join(_alert_expressions().values())):
        metric, matchers = selector
        labels = set(re.findall(r"(\w+)\s*[=!~]", matchers))
        carried = {label for line in exported.splitlines() if line.startswith(metric + "{")
                   for label in re.findall(r"(\w+)=\"", line)}  # fmt: skip
        assert labels <= carried | {"instance", "job"}, (metric, labels, carried)

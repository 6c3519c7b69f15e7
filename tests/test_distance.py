"""The distance aspect (issue 16): 北京到上海多远 answered without a model or a weather service."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from hybrid_weather.router import HybridRouter, Settings

from fake_weather import refused_url
from support import TODAY, console


def _haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    # Written out here, apart from the product's, so the test checks the figure and not the code.
    r = 6371.0
    dlat, dlon = math.radians(lat2 - lat1), math.radians(lon2 - lon1)
    h = math.sin(dlat / 2) ** 2 + math.cos(math.radians(lat1)) * math.cos(math.radians(lat2)) * math.sin(dlon / 2) ** 2
    return 2 * r * math.asin(math.sqrt(h))


@pytest.mark.parametrize(
    "question",
    ["北京到上海多远", "广州离深圳多少公里", "从成都到重庆有多远", "乌鲁木齐和哈尔滨之间的直线距离",
     "香港到台北相距几公里", "伦敦距离巴黎多少千米", "拉萨离西宁远吗",
     # In Latin letters (these went to the LLM over km and distance):
     "北京到上海多少km", "beijing to shanghai distance", "distance from guangzhou to shenzhen", "成都重庆距离几km",
     "how far is beijing from shanghai"],
)  # fmt: skip
def test_distance_is_the_great_circle_between_the_gazetteers_coordinates(question):
    with HybridRouter(settings=Settings(provider="demo", ledger="off")) as router:
        answer = router.ask(question, today=TODAY)
    assert answer.route == "rule" and answer.decision.aspect == "distance" and answer.decision.dates == []
    first, second = answer.decision.places
    expected = _haversine_km(first.latitude, first.longitude, second.latitude, second.longitude)
    assert answer.data["distance_km"] == pytest.approx(expected, rel=0.01)
    shown = float(answer.text.split("约")[1].split("公里")[0].replace(",", ""))
    assert shown == pytest.approx(expected, rel=0.01)
    assert "直线距离" in answer.text and "不是公路或铁路里程" in answer.text  # no pretending to know the road
    assert answer.source is None and answer.cost_usd == 0.0  # no weather service, no model


@pytest.mark.parametrize(
    "question, route",
    [("北京到上海开车要多久", "llm"), ("从广州到深圳坐高铁还是飞机", "llm"), ("上海到杭州怎么走", "llm"),
     ("北京到上海多远，明天哪里更冷", "llm"), ("广州离深圳", "llm"), ("多远", "llm"), ("深圳有多远", "llm"),
     ("北京到纳尼亚多远", "clarify")],
)  # fmt: skip
def test_what_goes_beyond_the_distance_is_not_answered_by_the_rules(question, route):
    with HybridRouter(settings=Settings(provider="demo", ledger="off")) as router:
        assert router.route(question, today=TODAY).route == route


def test_the_cli_answers_a_distance_with_no_llm_and_no_weather_service(tmp_path):
    # The weather service refuses connections and no LLM is configured: the distance needs neither.
    result = console("北京到上海多远", "--json", "--today", TODAY.isoformat(),
                     HYBRID_WEATHER_OPEN_METEO_URL=refused_url(), HYBRID_WEATHER_HOME=str(tmp_path))  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["route"] == "rule" and payload["decision"]["aspect"] == "distance"
    assert 1000 < payload["data"]["distance_km"] < 1100 and payload["source"] is None
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        row = db.execute("SELECT route, aspect, places, provider, baseline_cost_usd FROM requests").fetchone()
    assert row[:4] == ("rule", "distance", '["北京市", "上海市"]', None)
    assert row[4] > 0  # a saving, like any rule answer

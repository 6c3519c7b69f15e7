"""Sunrise, sunset and UV without a model (issue 16): from Open-Meteo's daily sunrise, sunset and
uv_index_max, asked in a request of their own, in the place's own time zone."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from hybrid_weather.agent.errors import MalformedResponse, NotCovered, WeatherUnavailable
from hybrid_weather.agent.weather import DemoProvider
from hybrid_weather.router import HybridRouter, Settings

from support import FAST_HTTP, TODAY
from weather_router import ask, make_router

SHANGHAI = (31.2304, 121.4737)
TOKYO_TZ = "Asia/Tokyo"
TOMORROW = TODAY + dt.timedelta(days=1)


@pytest.fixture
def router(weather_server):
    with make_router(weather_server.url) as built:
        yield built


def sun_requests(weather_server):
    return [p for p in weather_server.params["/v1/forecast"] if p.get("daily") == "sunrise,sunset,uv_index_max"]


def test_sunrise_and_sunset_come_from_their_own_request_in_the_places_time_zone(router, weather_server):
    weather_server.set_day(*SHANGHAI, TOMORROW, sunrise="06:37", sunset="16:52")
    answer = ask(router, "上海明天几点日出")
    assert answer.route == "rule" and answer.decision.aspect == "sun"
    assert answer.text == "上海明天日出06:37，日落16:52。"
    (params,) = sun_requests(weather_server)
    assert params["timezone"] == "Asia/Shanghai" and "current" not in params  # ten variables at most a request
    assert answer.data["places"][0]["days"] == [
        {"date": TOMORROW.isoformat(), "sunrise": "06:37", "sunset": "16:52", "uv_index_max": 3.4}
    ]
    # Cached like the forecast, and apart from it: another sun question asks nothing; a weather one does.
    assert ask(router, "上海明天几点天黑").text == answer.text and len(sun_requests(weather_server)) == 1
    ask(router, "上海明天天气")
    assert len(weather_server.params["/v1/forecast"]) == 2


def test_abroad_the_times_are_said_to_be_local(router, weather_server):
    answer = ask(router, "东京后天日落时间")
    (params,) = sun_requests(weather_server)
    assert params["timezone"] == TOKYO_TZ and answer.text.endswith("（当地时间）。")


@pytest.mark.parametrize(
    "uv, said",
    [(1.2, "紫外线指数最高1（低），不需要特别防晒"), (4.6, "紫外线指数最高5（中等），外出注意防晒"),
     (7.4, "（高）"), (8.6, "紫外线指数最高9（很高），尽量避开正午阳光"), (11.2, "（极高）")],
)  # fmt: skip
def test_uv_is_said_with_whos_category_and_what_to_do(router, weather_server, uv, said):
    weather_server.set_day(*SHANGHAI, TOMORROW, uv_index_max=uv)
    answer = ask(router, "上海明天紫外线强吗")
    assert answer.decision.aspect == "uv" and said in answer.text


def test_polar_night_has_no_sunrise(router, weather_server):
    weather_server.set_day(*SHANGHAI, TOMORROW, sunrise=None, sunset=None)
    assert "极昼、极夜" in ask(router, "上海明天日出时间").text


@pytest.mark.parametrize("field, value", [("sunrise", "soon"), ("uv_index_max", 1e9), ("uv_index_max", -3)])
def test_a_broken_value_is_an_upstream_fault_not_an_answer(router, weather_server, field, value):
    weather_server.set_day(*SHANGHAI, TOMORROW, **{field: value})
    with pytest.raises(MalformedResponse):
        ask(router, "上海明天日出时间" if field == "sunrise" else "上海明天紫外线")


def test_amap_has_none_and_says_which_provider_has(weather_server):
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        with pytest.raises(NotCovered, match="open-meteo"):
            ask(router, "上海明天几点日出")
        assert isinstance(NotCovered("x"), WeatherUnavailable)


@pytest.mark.parametrize(
    "question, route",
    [("明天紫外线强吗", "clarify"), ("北京明天几点下雨", "llm"), ("北京明天看日出适合吗", "llm"),
     ("北京和上海哪个日出早", "llm"), ("上海明天几点日出，天气怎么样", "llm"), ("为什么冬天天黑得早", "llm"),
     ("广州今天紫外线强不强", "rule"), ("哈尔滨后天几点天亮", "rule")],
)  # fmt: skip
def test_routes_around_the_sun(question, route):
    with HybridRouter(settings=Settings(provider="demo", ledger="off")) as router:
        assert router.route(question, today=TODAY).route == route


@pytest.mark.parametrize(
    "city, day, sunrise, sunset",
    # Published times (timeanddate.com) at the solstices: the demo's geometry is within a few minutes.
    [("上海", dt.date(2026, 6, 21), "04:50", "19:01"), ("上海", dt.date(2026, 12, 21), "06:50", "16:55"),
     ("北京", dt.date(2026, 6, 21), "04:46", "19:46"), ("伦敦", dt.date(2026, 12, 21), "08:04", "15:53")],
)  # fmt: skip
def test_the_demo_providers_sun_follows_the_real_sky(city, day, sunrise, sunset):
    with HybridRouter(settings=Settings(provider="demo", ledger="off"), http_options=FAST_HTTP) as router:
        place = router.parts.parser.reader.gazetteer.lookup(city).candidates[0]
    got = DemoProvider().sun(place, today=day, past_days=0, deadline=time.monotonic() + 5).day(day)

    def minutes(clock: str) -> int:
        return int(clock[:2]) * 60 + int(clock[3:])

    assert abs(minutes(got.sunrise) - minutes(sunrise)) <= 8 and abs(minutes(got.sunset) - minutes(sunset)) <= 8

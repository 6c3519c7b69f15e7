"""The rule route over the wire: a fake Open-Meteo/AMap server on 127.0.0.1, with faults injected."""

import asyncio
import datetime as dt
import threading
import time

import pytest

from hybrid_weather.agent.errors import (
    CircuitOpen,
    ConfigurationError,
    MalformedResponse,
    UpstreamConnectError,
    UpstreamHTTPError,
    UpstreamRejected,
    UpstreamTimeout,
    WeatherUnavailable,
)
from hybrid_weather.agent.weather import fixed
from hybrid_weather.router import HybridRouter

from fake_weather import refused_url
from support import TODAY, midway
from weather_router import ask, make_router

SHANGHAI = (31.2304, 121.4737)
BEIJING = (39.9042, 116.4074)
TOMORROW = TODAY + dt.timedelta(days=1)


@pytest.fixture
def router(weather_server):
    with make_router(weather_server.url) as router:
        yield router


# -- the right place, date and numbers ---------------------------------------------------------------


def test_rain_question_answers_from_the_documented_api(router, weather_server):
    weather_server.set_day(
        *SHANGHAI, TOMORROW, weather_code=61, precipitation_probability_max=70, precipitation_sum=5.2
    )
    answer = ask(router, "魔都明天会下雨吗")
    assert answer.text == "上海明天可能下雨（小雨，降水概率70%，预计5.2毫米），记得带伞。"
    assert answer.route == "rule" and answer.source == "open-meteo" and not answer.stale
    (params,) = weather_server.params["/v1/forecast"]
    assert (float(params["latitude"]), float(params["longitude"])) == pytest.approx(SHANGHAI, abs=1e-3)
    assert params["timezone"] == "Asia/Shanghai" and params["wind_speed_unit"] == "ms"
    assert len(params["daily"].split(",")) + len(params["current"].split(",")) <= 10
    day = answer.data["places"][0]["days"][0]
    assert day["date"] == "2026-11-30" and day["precip_probability"] == 70


def test_no_rain(router, weather_server):
    weather_server.set_day(*SHANGHAI, TOMORROW, weather_code=0, precipitation_probability_max=5)
    assert ask(router, "上海明天会下雨吗").text == "上海明天不会下雨（晴，降水概率5%）。"


def test_a_kept_answer_text_follows_the_forecast_and_the_asking(weather_server):
    # Rule answer texts are kept per decision and fetched forecast: a new forecast is a new text, and the
    # same forecast asked with or without emoji, or about another day, is not the kept text.
    with make_router(weather_server.url, cache_ttl=0) as router:  # every ask fetches anew
        for code, probability, said in ((61, 70, "可能下雨"), (0, 5, "不会下雨"), (61, 80, "可能下雨")):
            weather_server.set_day(*SHANGHAI, TOMORROW, weather_code=code, precipitation_probability_max=probability)
            for _ in range(2):
                text = ask(router, "上海明天会下雨吗").text
                assert said in text and f"{probability}%" in text, text
    with make_router(weather_server.url) as router:  # one cached forecast
        plain, with_emoji = ask(router, "上海明天天气").text, router.ask("上海明天天气", today=TODAY).text
        assert with_emoji != plain and with_emoji.endswith(plain[plain.index("：") :])
        assert ask(router, "上海明天天气").text == plain and "明天" in plain
        assert "后天" in ask(router, "上海后天天气").text


def test_every_aspect_is_rendered(router, weather_server):
    weather_server.set_day(
        *BEIJING,
        TOMORROW,
        weather_code=73,
        temperature_2m_max=-1.4,
        temperature_2m_min=-8.6,
        wind_speed_10m_max=11.2,
        relative_humidity_2m_mean=35,
        precipitation_probability_max=80,
    )
    weather_server.set_air(*BEIJING, TODAY, us_aqi=160, pm2_5=95.0, pm10=130.0)
    assert (
        ask(router, "北京明天天气").text
        == "北京明天：中雪，-9°C~-1°C，降水概率80%，风力6级（最大风速11.2 m/s），湿度35%。"
    )
    assert ask(router, "北京明天多少度").text == "北京明天气温-9°C~-1°C。"
    assert ask(router, "北京今天多少度").text == "北京今天气温8°C~15°C，现在12°C。"
    assert ask(router, "北京明天会下雪吗").text == "北京明天可能下雪（中雪，-9°C~-1°C）。"
    assert ask(router, "北京明天风大吗").text == "北京明天风很大，风力6级（最大风速11.2 m/s）。"
    assert ask(router, "北京明天湿度").text == "北京明天平均湿度35%。"
    assert ask(router, "北京今天湿度").text == "北京现在湿度55%，全天平均60%。"
    assert (
        ask(router, "北京今天空气质量").text == "北京今天空气质量中度污染（AQI 160，PM2.5 95 µg/m³，PM10 130 µg/m³）。"
    )


def test_a_range_gives_one_line_per_day(router, weather_server):
    answer = ask(router, "上海未来三天天气")
    lines = answer.text.splitlines()
    assert lines[0] == "上海："
    assert [line.split("：")[0].strip() for line in lines[1:]] == [
        "今天 11月29日（周日）",
        "明天 11月30日（周一）",
        "后天 12月1日（周二）",
    ]


def test_comparison_says_which_first(router, weather_server):
    weather_server.set_day(*BEIJING, TOMORROW, temperature_2m_max=3.0, temperature_2m_min=-5.0)
    weather_server.set_day(*SHANGHAI, TOMORROW, temperature_2m_max=14.0, temperature_2m_min=8.0)
    answer = ask(router, "北京和上海明天哪个冷")
    assert answer.text.splitlines() == [
        "明天北京比上海冷12.0°C（日均气温：北京-1.0°C，上海11.0°C）。",  # the difference, in numbers
        "北京明天气温-5°C~3°C。",
        "上海明天气温8°C~14°C。",
    ]
    assert weather_server.requests["/v1/forecast"] == 2  # one request per place


def test_questions_about_one_place_share_one_fetch(router, weather_server):
    for text in ("上海今天天气", "魔都明天会下雨吗", "上海后天多少度", "上海昨天天气", "申城明天风大吗"):
        ask(router, text)
    assert weather_server.requests["/v1/forecast"] == 1
    assert ask(router, "上海今天天气").cache_hit is True


def test_json_output_and_attribution(router, weather_server):
    payload = ask(router, "上海今天天气").to_json("上海今天天气")
    assert list(payload)[:9] == [
        "query",
        "route",
        "answer",
        "decision",
        "data",
        "source",
        "stale",
        "latency_ms",
        "cost_usd",
    ]
    assert payload["attribution"] == "Weather data by Open-Meteo.com (CC BY 4.0)"
    assert payload["cost_usd"] == 0.0 and payload["decision"]["cities"] == ["上海市"]


def test_geocoding_finds_a_place_the_gazetteer_lacks(router, weather_server):
    # 落霞坪 is in neither the gazetteer nor the towns table, so only the provider's geocoder can find it.
    weather_server.geocoding["落霞坪"] = [
        {
            "id": 1,
            "name": "落霞坪",
            "latitude": 30.95,
            "longitude": 118.0,
            "feature_code": "PPL",
            "country_code": "CN",
            "timezone": "Asia/Shanghai",
            "population": 900,
        },
        {
            "id": 2,
            "name": "落霞坪",
            "latitude": 31.1167,
            "longitude": 120.8486,
            "feature_code": "PPLA4",
            "country_code": "CN",
            "timezone": "Asia/Shanghai",
            "population": 20000,
        },
    ]
    answer = ask(router, "落霞坪明天天气")
    assert answer.route == "rule" and answer.decision.cities == ["落霞坪"]
    assert float(weather_server.params["/v1/forecast"][0]["latitude"]) == pytest.approx(31.1167)  # re-ranked
    assert "geocoding (open-meteo)" in answer.decision.reason
    assert ask(router, "纳尼亚明天天气").route == "clarify"
    assert weather_server.requests["/v1/search"] == 2
    ask(router, "纳尼亚明天天气")
    assert weather_server.requests["/v1/search"] == 2  # "not found" is cached too


def test_a_geocoder_that_cannot_be_reached_is_not_a_place_that_does_not_exist(weather_server):
    # Whether 雷克雅未克 exists is unknown until the geocoder answers: a refused connection or a timeout is the
    # weather service being unavailable (raised, exit 3 in the CLI), not "no such place" (a clarify).
    # A refused connection fails in milliseconds; the 3 s deadline is room for a loaded machine (four test
    # workers on two cores), on which 1 s ran out first and made it a timeout.
    with make_router(refused_url(), deadline=3.0) as router, pytest.raises(UpstreamConnectError):
        ask(router, "雷克雅未克明天天气")
    weather_server.fail("/v1/search", *["slow:3"] * 8)
    with make_router(weather_server.url, deadline=1.0, read_timeout=0.3) as router:
        with pytest.raises(UpstreamTimeout):
            ask(router, "雷克雅未克明天天气")
        with pytest.raises(UpstreamTimeout):
            asyncio.run(router.aask("雷克雅未克明天天气", today=TODAY))
    # A geocoder that answers with no results: the place is unknown, and the answer says so.
    weather_server.faults["/v1/search"].clear()
    with make_router(weather_server.url) as router:
        answer = ask(router, "雷克雅未克明天天气")
    assert answer.route == "clarify" and "没有找到“雷克雅未克”" in answer.text


# -- faults ------------------------------------------------------------------------------------------


def test_503_twice_then_200_still_answers(router, weather_server):
    weather_server.fail("/v1/forecast", "503", "503")
    assert ask(router, "上海今天天气").route == "rule"
    assert weather_server.requests["/v1/forecast"] == 3


def test_429_and_500_are_retried_and_400_is_not(router, weather_server):
    weather_server.fail("/v1/forecast", "429", "500")
    assert ask(router, "上海今天天气").route == "rule"
    assert weather_server.requests["/v1/forecast"] == 3
    weather_server.fail("/v1/forecast", "400")
    with pytest.raises(UpstreamHTTPError, match="HTTP 400: Cannot initialize"):
        ask(router, "北京今天天气")
    assert weather_server.requests["/v1/forecast"] == 4


def test_server_down_fails_within_the_deadline():
    # Refused at once, each retry too: the error, not the deadline, ends the ask. (A deadline of 1 s was spent
    # by a loaded machine's reading of the question before the first request could be sent.)
    with make_router(refused_url(), deadline=5.0) as router:
        started = time.monotonic()
        with pytest.raises(UpstreamConnectError, match="Open-Meteo"):
            ask(router, "上海今天天气")
        assert time.monotonic() - started < 5.0


def test_slow_server_is_cut_off_by_the_deadline(weather_server):
    weather_server.fail("/v1/forecast", "slow:5", "slow:5", "slow:5")
    with make_router(weather_server.url, deadline=0.6, read_timeout=5.0) as router:
        started = time.monotonic()
        with pytest.raises(UpstreamTimeout):
            ask(router, "上海今天天气")
        assert time.monotonic() - started < midway(0.6, 5.0)  # the deadline, not the first slow answer


def test_the_deadline_counts_from_the_call_not_from_the_end_of_routing(weather_server, monkeypatch):
    # A first ask that loads the gazetteer (or a slow reading of any kind) spends the caller's time too.
    weather_server.fail("/v1/forecast", "slow:9", "slow:9", "slow:9")
    with make_router(weather_server.url, deadline=2.0, read_timeout=10.0) as router:
        parser = router.parts.parser

        class SlowParser:  # the parser's class is compiled (setup.py): its methods cannot be patched
            def __getattr__(self, name):
                return getattr(parser, name)

            def parse(self, *args, **kwargs):
                time.sleep(2.0)
                return parser.parse(*args, **kwargs)

        monkeypatch.setitem(router.parts.__dict__, "parser", SlowParser())  # where lazy_part keeps it
        started = time.monotonic()
        with pytest.raises(UpstreamTimeout):
            ask(router, "上海今天天气")
        # 2 s reading, inside the 2 s deadline; 2 s reading + 2 s asking, were the deadline set after it.
        assert time.monotonic() - started < midway(2.0, 2.0 + 2.0)


@pytest.mark.parametrize(
    "fault,error", [("malformed", MalformedResponse), ("short", MalformedResponse), ("truncated", UpstreamConnectError)]
)
def test_broken_bodies_are_errors_not_crashes(weather_server, fault, error):
    weather_server.fail("/v1/forecast", *[fault] * 3)
    with make_router(weather_server.url) as router, pytest.raises(error):
        ask(router, "上海今天天气")


def test_partial_body_missing_a_documented_array(weather_server, monkeypatch):
    original = weather_server.forecast

    def without_precipitation(query):
        body = original(query)
        del body["daily"]["precipitation_sum"]
        return body

    monkeypatch.setattr(weather_server, "forecast", without_precipitation)
    # The handler looks the route up per request, so patch the bound method it uses.
    with make_router(weather_server.url) as router:
        weather_server._server.RequestHandlerClass = weather_server._handler_class()
        with pytest.raises(MalformedResponse, match="precipitation_sum"):
            ask(router, "上海今天天气")


def test_stale_answer_when_the_server_dies_after_one_success(weather_server):
    with make_router(weather_server.url, cache_ttl=0) as router:
        first = ask(router, "上海今天天气")
        assert not first.stale
        weather_server.stop()
        answer = ask(router, "上海明天会下雨吗")  # a different question, same place: served from the stale store
        assert answer.stale and answer.stale_age_s is not None
        assert "数据更新于" in answer.text
        assert answer.to_json("q")["stale"] is True and "stale_age_s" in answer.to_json("q")


def test_circuit_breaker_opens_then_probes(weather_server):
    with make_router(weather_server.url) as router:
        weather_server.fail("/v1/forecast", *["503"] * 9)
        for city in ("上海", "北京", "广州"):
            with pytest.raises(UpstreamHTTPError):
                ask(router, f"{city}今天天气")
        sent = weather_server.requests["/v1/forecast"]
        assert sent == 9
        with pytest.raises(CircuitOpen, match="--provider demo"):
            ask(router, "深圳今天天气")
        assert weather_server.requests["/v1/forecast"] == sent  # failing fast, the server is left alone
        breaker = router.weather.provider.http.breaker
        breaker.cool_down = 0.0  # the cool-down is over: one probe goes out and closes the circuit
        assert ask(router, "深圳今天天气").route == "rule"
        assert breaker.state == "closed"


def test_single_flight_200_threads_one_upstream_request(weather_server):
    weather_server.delay = 0.3
    with make_router(weather_server.url) as router:
        router.route("上海今天天气")  # build the parser first, so every thread reaches the fetch together
        barrier = threading.Barrier(200)
        answers, errors = [], []

        def one():
            barrier.wait()
            try:
                answers.append(ask(router, "上海今天天气"))
            except Exception as error:
                errors.append(error)

        threads = [threading.Thread(target=one) for _ in range(200)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == [] and len(answers) == 200
    assert weather_server.requests["/v1/forecast"] == 1


def test_single_flight_200_asyncio_tasks_one_upstream_request(weather_server):
    weather_server.delay = 0.3
    with make_router(weather_server.url) as router:

        async def main():
            return await asyncio.gather(*(router.aask("魔都明天会下雨吗", today=TODAY) for _ in range(200)))

        answers = asyncio.run(main())
    assert len(answers) == 200 and all(a.route == "rule" for a in answers)
    assert weather_server.requests["/v1/forecast"] == 1


def test_aask_fetches_places_concurrently(weather_server):
    weather_server.delay = 0.4
    with make_router(weather_server.url) as router:
        answer = asyncio.run(router.aask("北京上海广州明天哪个热", today=TODAY))
        assert answer.route == "rule"
    assert weather_server.max_in_flight == 3  # three fetches in progress at once


# -- AMap and demo -----------------------------------------------------------------------------------


def test_amap_answers_by_adcode(weather_server):
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        answer = ask(router, "上海明天会下雨吗")
        assert answer.text == "上海明天可能下雨（小雨），记得带伞。"
        assert answer.source == "amap"
        assert weather_server.params["/v3/weather/weatherInfo"][0]["city"] == "310000"
        assert ask(router, "上海后天风大吗").text == "上海后天风有点大，东风风力4级。"
        assert ask(router, "上海今天多少度").text == "上海今天气温7°C~14°C，现在11°C。"


def test_amap_horizon_is_three_days(weather_server):
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        answer = ask(router, "上海5天后天气")
        assert answer.route == "clarify" and "4天" in answer.text
        assert weather_server.requests["/v3/weather/weatherInfo"] == 0


@pytest.mark.parametrize("code,message", [("10003", "daily quota"), ("10004", "too often")])
def test_amap_error_codes_are_clear(weather_server, code, message):
    weather_server.amap_error = code
    with (
        make_router(weather_server.url, provider="amap", amap_key="good-key") as router,
        pytest.raises(UpstreamRejected, match=message),
    ):
        ask(router, "上海今天天气")


def test_amap_bad_key_is_a_configuration_error(weather_server):
    with (
        make_router(weather_server.url, provider="amap", amap_key="wrong") as router,
        pytest.raises(ConfigurationError, match=r"10001.*AMAP_KEY"),
    ):
        ask(router, "上海今天天气")


def test_amap_abroad_and_air_are_not_covered(weather_server):
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        with pytest.raises(WeatherUnavailable, match="China only"):
            ask(router, "东京今天天气")
        with pytest.raises(WeatherUnavailable, match="air-quality"):
            ask(router, "上海今天空气质量")


def test_demo_provider_is_labelled_and_deterministic():
    with HybridRouter(provider="demo") as router:
        first, second = router.ask("上海今天天气"), router.ask("上海今天天气")
    assert first.text.startswith("【演示数据】") and first.source == "demo"
    assert first.text == second.text


def test_trend_questions_compare_with_today(router, weather_server):
    weather_server.set_day(*BEIJING, TODAY, temperature_2m_max=10.0, temperature_2m_min=2.0)
    weather_server.set_day(*BEIJING, TOMORROW, temperature_2m_max=3.0, temperature_2m_min=-6.0)
    answer = ask(router, "北京明天会降温吗")
    assert answer.text.splitlines()[0] == "北京明天比今天冷7.5°C（日均气温：今天6.0°C，明天-1.5°C）。"


# -- parts of the day: answered from the provider's hours ----------------------------------------------


def test_tonight_is_answered_from_the_evening_hours(router, weather_server):
    # A dry day with a wet evening: the daily summary would say no rain; the evening hours say rain.
    weather_server.set_day(*BEIJING, TODAY, weather_code=1, precipitation_probability_max=80)
    weather_server.set_hours(*BEIJING, TODAY, range(18), weather_code=1, precipitation_probability=0)
    weather_server.set_hours(
        *BEIJING, TODAY, range(18, 24), weather_code=61, precipitation_probability=70, temperature_2m=3.0
    )
    answer = ask(router, "北京今晚会下雨吗")
    assert answer.route == "rule" and answer.decision.hours == (18, 24)
    assert answer.text == "北京今天18时至24时可能下雨（小雨，降水概率70%），记得带伞。"
    (params,) = weather_server.params["/v1/forecast"]
    assert "hourly" in params and "daily" not in params  # one request, the hours only
    hours = answer.data["places"][0]["hours"]
    assert [h["time"][11:13] for h in hours] == [f"{h:02d}" for h in range(18, 24)]


def test_a_clock_time_is_answered_from_its_hour(router, weather_server):
    # Rain at 15 h only: 下午3点 is that hour; 下午5点 and 早上7点 are dry; 3点到5点 holds the wet hour.
    weather_server.set_hours(*BEIJING, TOMORROW, range(24), weather_code=1, precipitation_probability=0)
    weather_server.set_hours(*BEIJING, TOMORROW, [15], weather_code=61, precipitation_probability=80)
    answer = ask(router, "北京明天下午三点会下雨吗")
    assert answer.decision.hours == (15, 16)
    assert answer.text == "北京明天15时可能下雨（小雨，降水概率80%），记得带伞。"
    assert [h["time"][11:13] for h in answer.data["places"][0]["hours"]] == ["15"]
    assert ask(router, "北京明天下午5点会下雨吗").text.startswith("北京明天17时不会下雨")
    assert ask(router, "明早7点北京下雨吗").decision.hours == (7, 8)
    assert ask(router, "北京明天3点到5点会下雨吗").text.startswith("北京明天15时至17时可能下雨")


def test_morning_temperature_comes_from_the_morning_hours(router, weather_server):
    weather_server.set_hours(*SHANGHAI, TOMORROW, range(6, 9), temperature_2m=4.0)
    weather_server.set_hours(*SHANGHAI, TOMORROW, range(9, 24), temperature_2m=15.0)
    answer = ask(router, "上海明天早上多少度")
    assert answer.text == "上海明天6时至9时气温4°C。"  # one temperature in those hours: said once


def test_a_provider_without_hours_answers_for_the_day_and_says_so(weather_server):
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        answer = ask(router, "上海今晚会下雨吗")
    assert answer.route == "rule"
    assert answer.text.endswith("（高德天气 (AMap)没有逐小时预报，以上是全天的预报）")
    assert "18时" not in answer.text


def test_temperature_spread_of_one_place_and_difference_between_places(router, weather_server):
    weather_server.set_day(*BEIJING, TOMORROW, temperature_2m_max=3.0, temperature_2m_min=-5.0)
    weather_server.set_day(*SHANGHAI, TOMORROW, temperature_2m_max=14.0, temperature_2m_min=8.0)
    assert ask(router, "北京明天温差多大").text.splitlines()[0] == "北京明天温差8°C（-5°C~3°C）。"
    assert ask(router, "北京比上海明天冷多少").text.splitlines()[0] == (
        "明天北京比上海冷12.0°C（日均气温：北京-1.0°C，上海11.0°C）。"
    )


def test_rain_comparison_says_by_how_much(router, weather_server):
    weather_server.set_day(*BEIJING, TOMORROW, precipitation_probability_max=20)
    weather_server.set_day(*SHANGHAI, TOMORROW, weather_code=61, precipitation_probability_max=80)
    first = ask(router, "北京和上海明天哪里更可能下雨").text.splitlines()[0]
    assert first == "明天上海更可能下雨，降水概率高60个百分点（降水概率：北京20%，上海80%）。"


def test_an_answers_data_is_its_own(router, weather_server):
    # Days of a cached forecast are converted once and copied into each answer: a caller that edits its
    # answer's data must not change the next caller's.
    first = router.ask("上海今天天气", today=TODAY)
    expected = {"days": [dict(d) for d in first.data["places"][0]["days"]],
                "current": dict(first.data["places"][0]["current"])}  # fmt: skip
    first.data["places"][0]["days"][0]["temp_max"] = 99.0
    first.data["places"][0]["current"]["condition"] = "edited"
    second = router.ask("上海今天天气", today=TODAY)
    assert second.data["places"][0]["days"] == expected["days"]
    assert second.data["places"][0]["current"] == expected["current"]


@pytest.mark.parametrize("provider", ["open-meteo", "demo"])
def test_every_shape_survives_the_caches_json_round_trip(weather_server, provider):
    """The disk and Redis caches keep fetches as to_jsonable's JSON and rebuild them with from_jsonable:
    each kind, as a provider really returns it (None fields, nested places and days), comes back equal."""
    import json

    from hybrid_weather.agent.weather.shapes import SHAPE_OF_KIND, from_jsonable, to_jsonable

    with make_router(weather_server.url, provider=provider) as router:
        fetch = router.parts.weather.provider
        place = router.route("上海今天天气", today=TODAY).places[0]
        deadline = time.monotonic() + 5
        fetched = {
            "forecast": fetch.forecast(place, today=TODAY, past_days=1, deadline=deadline),
            "air": fetch.air_quality(place, today=TODAY, past_days=1, deadline=deadline),
            "hourly": fetch.hourly(place, today=TODAY, past_days=1, deadline=deadline),
            "sun": fetch.sun(place, today=TODAY, past_days=1, deadline=deadline),
        }
    assert set(fetched) == set(SHAPE_OF_KIND)
    for kind, value in fetched.items():
        stored = json.loads(json.dumps(to_jsonable(value), ensure_ascii=False))
        assert isinstance(stored, dict) and isinstance(stored["place"], dict), kind
        assert from_jsonable(SHAPE_OF_KIND[kind], stored) == value, kind


def test_a_yes_no_question_about_a_temperature_is_answered_yes_or_no_as_the_figures_show(weather_server):
    # 会超过30度吗 got the day's range and no yes or no. The answer says yes or no from the high (above) or
    # the low (below) it shows, compared as shown, rounded to a degree: for highs and lows around each asked
    # figure, on each side, the yes or no agrees with the figures in the same sentence.
    with make_router(weather_server.url, cache_ttl=0) as router:
        for low, high in [(-8.6, -1.4), (-0.4, 7.6), (2.5, 29.5), (21.2, 30.0), (24.9, 30.4)]:
            weather_server.set_day(*BEIJING, TOMORROW, temperature_2m_min=low, temperature_2m_max=high)
            shown_low, shown_high = float(fixed(low, 0)), float(fixed(high, 0))
            for asked in [-5, 0, 8, 25, 30]:
                degrees = f"{asked}°C"
                figure = f"零下{-asked}" if asked < 0 else str(asked)
                expected = {
                    f"北京明天会超过{figure}度吗": f"，{'会' if shown_high > asked else '不会'}超过{degrees}。",
                    f"北京明天最高能到{figure}度吗": f"，{'会' if shown_high >= asked else '不会'}到{degrees}。",
                    f"北京明天会低于{figure}度吗": f"，{'会' if shown_low < asked else '不会'}低于{degrees}。",
                    f"北京明天{figure}度以下吗": f"，{'会' if shown_low <= asked else '不会'}到{degrees}以下。",
                }
                for query, ending in expected.items():
                    text = ask(router, query).text
                    assert text.endswith(ending), (query, low, high, text)
                    assert f"{fixed(low, 0)}°C~{fixed(high, 0)}°C" in text, text
        assert ask(router, "北京明天冷吗").text.endswith("°C。")  # no figure asked: the range alone


# -- the question's day is the one day: providers, demo data and horizon count from it, not the clock ----

FAR_DAYS = [dt.date(2019, 3, 10), TODAY, dt.date(2031, 6, 1)]  # past, the fake's today, future: never the clock's


@pytest.mark.parametrize("today", FAR_DAYS)
@pytest.mark.parametrize(
    "aspect_question", ["北京明天会下雨吗", "北京明天空气质量", "北京明天几点日出", "北京明晚冷吗"]
)
def test_the_demo_answers_about_the_questions_day(today, aspect_question):
    tomorrow = (today + dt.timedelta(days=1)).isoformat()
    with make_router(None, provider="demo") as router:
        answers = [router.ask(aspect_question, today=today, emoji=False),
                   asyncio.run(router.aask(aspect_question, today=today, emoji=False))]  # fmt: skip
    for answer in answers:
        assert answer.route == "rule" and "暂无" not in answer.text, answer.text
        data = answer.data["places"][0]
        days = [day["date"] for day in data["days"] or []] + [hour["time"][:10] for hour in data["hours"] or []]
        assert days and set(days) == {tomorrow}, days


def test_open_meteo_is_asked_for_the_questions_days(weather_server):
    # The fake's own today is 2026-11-29 (Open-Meteo's clock); asked on 2026-09-15, the question's 明天 is
    # 09-16, which the upstream keeps: it is asked for by date, not counted from the upstream's today.
    asked_on = dt.date(2026, 9, 15)
    weather_server.set_day(*BEIJING, asked_on + dt.timedelta(days=1), weather_code=63, precipitation_probability_max=90)
    with make_router(weather_server.url) as router:
        answer = router.ask("北京明天会下雨吗", today=asked_on, emoji=False)
        assert "可能下雨（中雨，降水概率90%" in answer.text, answer.text
        (params,) = weather_server.params["/v1/forecast"]
        assert (params["start_date"], params["end_date"]) == ("2026-09-14", "2026-09-30")
        assert "past_days" not in params and "forecast_days" not in params
        # 今天 on that day: the day's forecast, without the upstream's "now" (which is 11-29's).
        today = router.ask("北京今天天气", today=asked_on, emoji=False)
        assert "现在" not in today.text and today.data["places"][0]["days"][0]["date"] == "2026-09-15"
        air = router.ask("北京明天空气质量", today=asked_on, emoji=False)
        assert air.data["places"][0]["days"][0]["date"] == "2026-09-16"
        # A day the upstream does not keep is its refusal, never another day's forecast.
        with pytest.raises(UpstreamHTTPError, match="out of allowed range"):
            router.ask("北京明天会下雨吗", today=dt.date(2031, 6, 1))
        # The horizon counts from the question's day too: 16 days on from 09-15 is outside it.
        assert router.route("北京10月2日天气", today=asked_on).route == "clarify"
        assert router.route("北京9月30日天气", today=asked_on).route == "rule"


def test_a_cached_forecast_is_kept_per_questions_day(weather_server):
    with make_router(weather_server.url) as router:
        router.ask("北京明天天气", today=TODAY)
        router.ask("北京明天天气", today=TODAY - dt.timedelta(days=30))
        router.ask("北京明天天气", today=TODAY)
    starts = [params["start_date"] for params in weather_server.params["/v1/forecast"]]
    assert starts == ["2026-11-28", "2026-10-29"]

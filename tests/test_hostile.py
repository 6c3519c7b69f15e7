"""Hostile weather servers, over the wire: every reply ends within the deadline as a typed error, never a
crash or a hang, and nothing implausible is printed as a fact (issue 11)."""

import resource
import time

import pytest

from hybrid_weather.agent.errors import MalformedResponse, UpstreamRejected, UpstreamTimeout, WeatherUnavailable
from hybrid_weather.router import HybridRouter, Settings

import fake_weather
from conftest import FAST_HTTP, TODAY

DEADLINE = 2.0


def make_router(url, **http):
    return HybridRouter(settings=Settings(open_meteo_url=url), ledger="off", cache_ttl=0, deadline=DEADLINE,
                        http_options={**FAST_HTTP, **http})  # fmt: skip


def ask(router, text="上海今天天气"):
    return router.ask(text, today=TODAY, emoji=False)


def test_a_dripping_body_is_cut_at_the_deadline(weather_server):
    # One byte every 0.3 s: every read succeeds within its timeout, the body would take minutes.
    weather_server.fail("/v1/forecast", "drip:0.3", "drip:0.3", "drip:0.3")
    with make_router(weather_server.url, read_timeout=1.0) as router:
        started = time.monotonic()
        with pytest.raises(UpstreamTimeout):
            ask(router)
        assert time.monotonic() - started < DEADLINE + 1


def test_a_gzip_bomb_is_refused_past_the_size_cap(weather_server):
    fake_weather._gzip_bomb()  # made before the request: compressing 1 GiB takes the server a while
    weather_server.fail("/v1/forecast", "gzip-bomb")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with make_router(weather_server.url) as router, pytest.raises(MalformedResponse, match="more than 2048 kB"):
        ask(router)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 200


def test_json_nested_100000_deep_is_malformed_not_a_recursion_error(weather_server):
    weather_server.fail("/v1/forecast", "deep")
    with make_router(weather_server.url) as router, pytest.raises(MalformedResponse, match="nested"):
        ask(router)


def test_a_redirect_elsewhere_is_refused_and_blames_the_upstream(weather_server):
    weather_server.fail("/v1/forecast", "redirect")
    with make_router(weather_server.url) as router, pytest.raises(UpstreamRejected) as caught:
        ask(router)
    assert "redirected to another host (https://elsewhere.invalid)" in str(caught.value)
    assert weather_server.url not in str(caught.value)


@pytest.mark.parametrize(
    "body,match",
    [
        ('{"results": 5}', "results as int"),
        ('{"results": "x"}', "results as str"),
        ("[1, 2, 3]", "not an object"),
    ],
)
def test_geocoding_replies_of_the_wrong_type(weather_server, body, match):
    weather_server.fail("/v1/search", f"json:{body}")
    with make_router(weather_server.url) as router:
        answer = ask(router, "纳尼亚明天天气")  # the geocoder's fault leaves the clarify standing
    assert answer.route == "clarify"


def test_implausible_values_are_an_upstream_error_not_a_fact(weather_server):
    weather_server.set_day(31.2304, 121.4737, TODAY, temperature_2m_max=float("1" + "0" * 308))
    with make_router(weather_server.url) as router, pytest.raises(MalformedResponse, match="implausible temp_max"):
        ask(router)


def test_an_absurd_air_quality_index_is_not_good_air(weather_server):
    weather_server.set_air(31.2304, 121.4737, TODAY, us_aqi=-1e300)
    with make_router(weather_server.url) as router, pytest.raises(WeatherUnavailable, match="implausible aqi"):
        ask(router, "上海今天空气质量")

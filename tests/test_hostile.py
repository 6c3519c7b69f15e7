"""Hostile weather servers, over the wire: every reply ends within the deadline as a typed error, never a
crash or a hang, and nothing implausible is printed as a fact (issue 11)."""

import asyncio
import gc
import logging
import os
import resource
import sqlite3
import time

import pytest
from click.testing import CliRunner
from corpus import distinct_cities

from hybrid_weather.agent.errors import MalformedResponse, UpstreamRejected, UpstreamTimeout, WeatherUnavailable
from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.cli import cli
from hybrid_weather.router.parts import DEFAULT_DEADLINE

import fake_weather
from support import FAST_HTTP, TODAY

DEADLINE = 2.0


#: The deadline of the tests that are not about one: long enough that a loaded machine's reading of the
#: question never spends it before the request (the request's body, its type, its values are the point).
AMPLE = 30.0


def make_router(url, deadline=AMPLE, **http):
    return HybridRouter(settings=Settings(open_meteo_url=url), ledger="off", cache_ttl=0, deadline=deadline,
                        http_options={**FAST_HTTP, **http})  # fmt: skip


def ask(router, text="上海今天天气"):
    return router.ask(text, today=TODAY, emoji=False)


def test_a_dripping_body_is_cut_at_the_deadline(weather_server):
    # One byte every 0.3 s: every read succeeds within its timeout, the body would take minutes.
    weather_server.fail("/v1/forecast", "drip:0.3", "drip:0.3", "drip:0.3")
    with make_router(weather_server.url, deadline=DEADLINE, read_timeout=1.0) as router:
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


# -- asyncio callers: one giving up never fails the others; a burst is not capped by a tiny pool ------


def test_a_cancelled_aask_does_not_fail_the_others_waiting_on_its_fetch(weather_server, tmp_path, caplog):
    weather_server.delay = 0.6
    router = HybridRouter(settings=Settings(open_meteo_url=weather_server.url), ledger=str(tmp_path / "l.db"),
                          deadline=DEADLINE, http_options=FAST_HTTP)  # fmt: skip

    async def main():
        impatient = asyncio.create_task(asyncio.wait_for(router.aask("上海今天天气", today=TODAY), 0.1))
        patient = asyncio.create_task(router.aask("上海今天天气", today=TODAY))
        with pytest.raises(asyncio.TimeoutError):
            await impatient
        later = asyncio.create_task(router.aask("魔都今天天气", today=TODAY))  # joins the fetch still in flight
        return await patient, await later

    caplog.set_level(logging.DEBUG)
    with router:
        patient, later = asyncio.run(main())
    assert patient.route == later.route == "rule" and not patient.stale
    assert weather_server.requests["/v1/forecast"] == 1
    assert "InvalidStateError" not in caplog.text
    with sqlite3.connect(tmp_path / "l.db") as db:
        outcomes = sorted(row[0] for row in db.execute("SELECT outcome FROM requests"))
    assert outcomes == ["Cancelled", "ok", "ok"]  # the one that gave up has its row too


def test_a_fetch_that_fails_after_its_asker_gave_up_is_not_an_unretrieved_exception(weather_server, caplog):
    # The fetch goes on for the others when an asker is cancelled; its failure, with no one left to take it,
    # was logged by asyncio as "Future exception was never retrieved" (shield drops its callback).
    weather_server.delay = 0.5
    weather_server.fail("/v1/forecast", *["503"] * 10)
    router = HybridRouter(settings=Settings(open_meteo_url=weather_server.url), ledger="off", deadline=DEADLINE,
                          http_options={**FAST_HTTP, "read_timeout": 5.0})  # fmt: skip

    async def main():
        asking = asyncio.create_task(router.aask("上海今天天气", today=TODAY))
        while weather_server.requests["/v1/forecast"] == 0:  # its fetch is under way
            await asyncio.sleep(0.01)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        ended = time.monotonic() + 30
        while router.weather._inflight and time.monotonic() < ended:  # until the fetch has failed
            await asyncio.sleep(0.05)
        assert not router.weather._inflight and weather_server.requests["/v1/forecast"] > 0
        gc.collect()  # an unretrieved exception is logged when its future is collected
        await asyncio.sleep(0)

    caplog.set_level(logging.ERROR, logger="asyncio")
    with router:
        asyncio.run(main())
    gc.collect()
    assert "never retrieved" not in caplog.text, caplog.text


def test_a_burst_of_aask_is_not_capped_by_the_default_executor(weather_server):
    # Each place's two asks must overlap for them to share a fetch (cache_ttl=0 keeps no copy): the upstream
    # takes 1.5 s, ample for a loaded machine to start all 120 asks (0.5 s was not, once, under CI's load).
    weather_server.delay = 1.5
    with HybridRouter(settings=Settings(open_meteo_url=weather_server.url), ledger="off", cache_ttl=0, deadline=6.0,
                      http_options={**FAST_HTTP, "read_timeout": 4.0}) as router:  # fmt: skip
        cities = distinct_cities(router, 60, TODAY)

        async def main():
            asks = [router.aask(f"{name}今天天气", today=TODAY) for name in cities * 2]
            return await asyncio.gather(*asks, return_exceptions=True)

        results = asyncio.run(main())
        state = router.weather.provider.http.breaker.state
    failed = [r for r in results if isinstance(r, BaseException)]
    assert failed == [] and state == "closed"
    assert weather_server.requests["/v1/forecast"] == len(cities)  # one upstream request per place
    # More at once than the event loop's default executor has threads (min(32, cpu + 4)).
    assert weather_server.max_in_flight > min(32, (os.cpu_count() or 1) + 4)


def test_asks_that_waited_out_their_deadline_in_the_local_queue_do_not_open_the_breaker(weather_server):
    weather_server.delay = 0.4
    with make_router(weather_server.url, deadline=DEADLINE) as router:
        router.weather.io_threads = 1  # a queue, on purpose: one fetch at a time
        names = ["北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "武汉", "西安", "重庆"]

        async def main():
            return await asyncio.gather(*(router.aask(f"{n}今天天气", today=TODAY) for n in names),
                                        return_exceptions=True)  # fmt: skip

        results = asyncio.run(main())
        state = router.weather.provider.http.breaker.state
    assert all(isinstance(r, UpstreamTimeout) or not isinstance(r, BaseException) for r in results)
    assert weather_server.requests["/v1/forecast"] <= DEADLINE / 0.4 + 1  # the rest were never sent
    assert state == "closed"


@pytest.mark.parametrize("fault", ["drip:0.3", "gzip-bomb", "deep", "redirect", "malformed", "json:[1, 2]"])
def test_the_cli_ends_a_hostile_weather_reply_with_exit_3_and_a_row(weather_server, tmp_path, fault):
    if fault == "gzip-bomb":
        fake_weather._gzip_bomb()
    weather_server.fail("/v1/forecast", *[fault] * 3)
    env = {"HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url, "HYBRID_WEATHER_LEDGER": str(tmp_path / "l.db")}
    # The reading's first load (jieba's dictionary: a second or more on a loaded machine) is done before the
    # clock starts: the bound is the deadline under test plus a second for the ledger and the exit.
    assert CliRunner().invoke(cli, ["route", "上海今天天气", "--today", "2026-11-29"]).exit_code == 0
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["上海今天天气", "--today", "2026-11-29"], env=env)
    took = time.monotonic() - started
    assert result.exit_code == 3, (result.exit_code, result.output)
    assert took < DEFAULT_DEADLINE + 1 and "Traceback" not in result.output
    with sqlite3.connect(tmp_path / "l.db") as db:
        ((outcome,),) = db.execute("SELECT outcome FROM requests").fetchall()
    assert outcome in ("UpstreamTimeout", "MalformedResponse", "UpstreamRejected")

"""A fleet sharing one forecast cache in Redis (issue 13, part 1), against the real Redis server this
machine runs (HYBRID_WEATHER_TEST_REDIS_URL, default redis://127.0.0.1:6379/15), each test under its own
key prefix, cleaned up after. No mocks: the workers are real processes."""

import json
import logging
import signal
import subprocess
import sys
import time

import pytest

from hybrid_weather.router import HybridRouter, Settings

from support import FAST_HTTP, REDIS_URL, TODAY, midway, subprocess_env

# Each worker reads a question before it asks (the lazy tables loaded), so that an ask's seconds are its
# fetch's and its waits', and prints its routes (or errors) and the slowest ask's seconds.
_WORKER = """
import datetime as dt, json, sys, threading, time
from hybrid_weather.router import HybridRouter, Settings
weather_url, cache_url, prefix, threads, deadline = sys.argv[1:6]
settings = Settings(open_meteo_url=weather_url, cache_url=cache_url, cache_prefix=prefix)
results, seconds = [], [0.0]
with HybridRouter(settings=settings, ledger="off", deadline=float(deadline)) as router:
    router.route("上海今天天气", today=dt.date(2026, 11, 29))
    def one():
        started = time.monotonic()
        try:
            results.append(router.ask("上海今天天气", today=dt.date(2026, 11, 29)).route)
        except Exception as error:
            results.append(type(error).__name__)
        seconds.append(time.monotonic() - started)
    workers = [threading.Thread(target=one) for _ in range(int(threads))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
print(json.dumps({"routes": results, "slowest_s": max(seconds)}), flush=True)
"""


def worker(weather_url, prefix, threads=50, deadline=5.0):
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, weather_url, REDIS_URL, prefix, str(threads), str(deadline)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )


def test_four_processes_of_fifty_threads_make_one_upstream_request(weather_server, redis_prefix):
    weather_server.delay = 1.0  # slow enough that every worker asks while the first fetch is under way
    workers = [worker(weather_server.url, redis_prefix) for _ in range(4)]
    results = []
    for process in workers:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        results.extend(json.loads(out)["routes"])
    assert len(results) == 200 and set(results) == {"rule"}
    assert weather_server.requests["/v1/forecast"] == 1


def test_a_worker_that_takes_the_lock_just_after_the_holder_stored_its_copy_does_not_fetch_again(
    weather_server, redis_prefix
):
    # The gap the four-process test fell into under load: a worker looks (no copy), the holder stores its copy
    # and lets go, and the worker then takes the free lock. Made certain here, not left to the scheduler.
    settings = Settings(open_meteo_url=weather_server.url, cache_url=REDIS_URL, cache_prefix=redis_prefix)
    with (
        HybridRouter(settings=settings, ledger="off", http_options=FAST_HTTP) as holder,
        HybridRouter(settings=settings, ledger="off", http_options=FAST_HTTP) as late,
    ):
        shared = late.weather.shared
        take = shared.acquire

        def after_the_holder_let_go(key, hold_s):
            holder.ask("上海今天天气", today=TODAY)  # fetched, stored, lock released: all before this take
            return take(key, hold_s)

        shared.acquire = after_the_holder_let_go
        assert late.ask("上海今天天气", today=TODAY).route == "rule"
    assert weather_server.requests["/v1/forecast"] == 1


def test_a_lock_holder_killed_mid_fetch_blocks_the_others_no_longer_than_its_deadline(weather_server, redis_prefix):
    weather_server.fail("/v1/forecast", "slow:30")  # the first request never finishes in time
    holder_deadline = 2.0
    holder = worker(weather_server.url, redis_prefix, threads=1, deadline=holder_deadline)
    deadline = time.monotonic() + 20
    while weather_server.requests["/v1/forecast"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    # The successor would wait its whole deadline (30 s) on a lock that never freed: only the dead holder's
    # lock expiring, within the holder's deadline, lets it through sooner. Its ask is timed from inside it
    # (not its start-up), and bound midway between the two.
    successor = worker(weather_server.url, redis_prefix, threads=1, deadline=30.0)
    out, err = successor.communicate(timeout=90)
    result = json.loads(out)
    assert result["routes"] == ["rule"], err
    assert weather_server.requests["/v1/forecast"] == 2 and result["slowest_s"] < midway(holder_deadline, 30.0)


def test_any_worker_serves_the_fleets_last_good_copy_when_the_provider_fails(weather_server, redis_prefix):
    settings = Settings(open_meteo_url=weather_server.url, cache_url=REDIS_URL, cache_prefix=redis_prefix)
    with HybridRouter(settings=settings, ledger="off", cache_ttl=1, http_options=FAST_HTTP) as first:
        fetched = first.ask("上海今天天气", today=TODAY)
        assert not fetched.stale and not fetched.cache_hit
    with HybridRouter(settings=settings, ledger="off", cache_ttl=1, http_options=FAST_HTTP) as second:
        assert second.ask("上海今天天气", today=TODAY).cache_hit  # the fleet's copy: a hit, not a fetch
    assert weather_server.requests["/v1/forecast"] == 1
    time.sleep(1.2)  # past the TTL: the next ask goes upstream, which now fails
    weather_server.fail("/v1/forecast", "500", "500", "500")
    with HybridRouter(settings=settings, ledger="off", cache_ttl=1, http_options=FAST_HTTP) as other:
        answer = other.ask("上海今天天气", today=TODAY)  # a fresh process-like router: its own memory is empty
    assert answer.stale and answer.route == "rule"


def test_an_unreachable_redis_costs_no_answer_and_warns_once(weather_server, caplog):
    from fake_weather import refused_url

    dead = refused_url().replace("http://", "redis://") + "/0"
    settings = Settings(open_meteo_url=weather_server.url, cache_url=dead)
    caplog.set_level(logging.WARNING, logger="hybrid_weather")
    with HybridRouter(settings=settings, ledger="off", cache_ttl=600) as router:
        for place in ("上海", "北京", "广州", "深圳", "杭州") * 4:
            assert router.ask(f"{place}今天天气", today=TODAY).route == "rule"
    warnings = [r for r in caplog.records if "shared cache" in r.getMessage()]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()
    assert weather_server.requests["/v1/forecast"] == 5  # the in-process cache still works


def test_the_upstream_budget_holds_fleet_wide(weather_server, redis_prefix, tmp_path):
    import sqlite3

    from corpus import distinct_cities

    from hybrid_weather.agent.errors import BudgetExhausted

    settings = Settings(open_meteo_url=weather_server.url, cache_url=REDIS_URL, cache_prefix=redis_prefix,
                        upstream_limit="10/min")  # fmt: skip
    ledger = tmp_path / "l.db"
    # The windows are the clock's minutes (SharedCache.spend): a run that crossed into the next one would
    # rightly have a second budget of 10, so it starts in a minute with time enough left to finish in.
    if (left := 60 - time.time() % 60) < 5:
        time.sleep(left)
    # Two routers, as two workers would be: the budget is the fleet's, not each one's.
    with HybridRouter(settings=settings, ledger=str(ledger)) as one, HybridRouter(settings=settings,
                                                                                  ledger="off") as two:  # fmt: skip
        cities = distinct_cities(one, 100, TODAY)
        answered, refused = 0, []
        for i, city in enumerate(cities * 2):
            try:
                (one if i % 2 else two).ask(f"{city}今天天气", today=TODAY)
                answered += 1
            except BudgetExhausted as error:
                refused.append(error)
    assert weather_server.requests["/v1/forecast"] == 10
    assert answered >= 10 and answered + len(refused) == 200
    assert all("upstream budget exhausted" in str(e) and "retry in" in str(e) for e in refused)
    assert all(0 < e.retry_after_s <= 60 for e in refused)
    with sqlite3.connect(ledger) as db:
        counted = db.execute("SELECT count(*) FROM requests WHERE outcome = 'BudgetExhausted'").fetchone()[0]
    assert counted > 0  # refusals are rows in the ledger, as every failure is


def test_a_budget_that_is_not_one_is_a_configuration_error(redis_prefix):
    from hybrid_weather.agent.errors import ConfigurationError

    settings = Settings(cache_url=REDIS_URL, cache_prefix=redis_prefix, upstream_limit="lots")
    with HybridRouter(settings=settings, ledger="off") as router, pytest.raises(ConfigurationError, match="600/min"):
        router.ask("上海今天天气", today=TODAY)

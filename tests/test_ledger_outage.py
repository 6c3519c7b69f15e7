"""The PostgreSQL ledger through outages a server does not announce (issue 36, items 6 and 7), against the
real server through a relay (tests/relay.py) that can refuse, or go silent — take every byte and answer
none, closing nothing, as a hung host or a network that drops packets does. Rows are counted in the
database: nothing may be lost or stored twice."""

import time

import pytest
from relay import relay_to, through

from hybrid_weather.router.ledger import Ledger, LedgerEntry

from support import stored

PLACES = ("上海", "北京", "广州", "深圳", "成都")
DAYS = ("今天", "明天", "后天")


def rule(i):
    return LedgerEntry(started_at=time.time(), route="rule", query=f"上海{i}", places=("上海市",))


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


@pytest.mark.parametrize("outage", ["refuse", "silence"])
def test_rows_spooled_in_an_outage_are_written_back_by_close_once_the_database_is_back(pg_url, tmp_path, outage):
    relay = relay_to(pg_url)
    ledger = Ledger(through(relay, pg_url), spool=tmp_path / "spool.jsonl")
    try:
        for i in range(5):
            ledger.record(rule(i))
        ledger.flush()
        assert stored(pg_url) == [(5, 5)]
        getattr(relay, outage)()
        for i in range(5, 25):
            ledger.record(rule(i))
        # The writer gives the silent server up by its own deadline, and spools what it held.
        assert wait_for(lambda: ledger.spool.count() == 20, 10), ledger.spool.count()
        relay.resume()
        ledger.close()  # a clean shutdown, with no row after the database came back
    finally:
        relay.close()
    assert stored(pg_url) == [(25, 25)] and ledger.spool.count() == 0


def test_a_database_that_goes_silent_does_not_stall_the_service_and_loses_no_row(pg_url):
    """About 10 s by design: the silence must outlast every wait it tests (the writer's 2.5 s deadline and
    one more connection attempt), and the rows it spooled are then written back."""
    from starlette.testclient import TestClient

    from hybrid_weather.router import HybridRouter, Settings
    from hybrid_weather.router.serve import create_app

    relay = relay_to(pg_url)
    # A small queue, so the silence fills it within a few hundred asks, as 1,000 requests/s fill 10,000.
    router = HybridRouter(settings=Settings(provider="demo"), ledger=through(relay, pg_url), ledger_queue=100)
    asked = 0

    def ask(client):
        nonlocal asked
        started = time.monotonic()
        question = f"{PLACES[asked % len(PLACES)]}{DAYS[asked % len(DAYS)]}天气"
        response = client.post("/v1/ask", json={"query": question, "today": "2026-11-29"})
        took = time.monotonic() - started
        asked += 1
        assert response.status_code == 200, response.text
        return took

    try:
        with TestClient(create_app(router)) as client:
            for _ in range(20):
                ask(client)
            assert client.get("/readyz").status_code == 200
            relay.silence()
            silent_since, slowest = time.monotonic(), 0.0
            # Past the writer's deadline (2.5 s) and one more try to connect (2 s): every way it can wait.
            while time.monotonic() - silent_since < 6 and asked < 5_000:
                slowest = max(slowest, ask(client))
            # One ask waits for the stuck writer (store.STUCK_AFTER, 1 s); the others overflow at once.
            assert slowest < 1.5, f"an ask took {slowest:.1f} s while the database was silent"
            for _ in range(2):  # the second while the first check still waits on the silent server
                started = time.monotonic()
                ready = client.get("/readyz")
                assert time.monotonic() - started < 1.0 and ready.status_code == 503
                assert ready.json()["checks"]["ledger"]["ok"] is False
            spooled = router.ledger.spool.count()
            assert spooled > 0
            relay.resume()
            # The writer reaches the server again and writes back everything that waited: no row lost.
            assert wait_for(lambda: stored(pg_url)[0][0] == asked, 20), (stored(pg_url), asked, spooled)
            assert wait_for(lambda: client.get("/readyz").status_code == 200, 5)
        router.close()
    finally:
        relay.close()
    assert stored(pg_url) == [(asked, asked)] and router.ledger.spool.count() == 0

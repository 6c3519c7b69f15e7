"""Benchmark the warm rule path: ask() with the forecast cached, from 1 and from 8 threads.

    python tests/bench/bench_ask.py [--seconds S]

The forecast comes once from a local Open-Meteo-shaped server (tests/fake_weather.py); every ask after
that is answered from the cache, so the figures are the router's own cost: route(), cache look-up and
rendering. Prints p50/p99 µs per ask() and asks/s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_weather import FakeWeather

QUERIES = [
    "上海今天天气",
    "魔都明天会下雨吗",
    "北京和上海明天哪个冷",
    "北京明天多少度",
    "上海未来三天天气",
    "帝都后天风大吗",
    "广州今天湿度",
    "深圳明天会下雨吗",
    "杭州今天天气怎么样",
    "成都明天冷不冷",
]


def run(router, seconds: float, threads: int, today: dt.date) -> tuple[list[int], int, float]:
    samples: list[list[int]] = [[] for _ in range(threads)]
    stop = time.perf_counter() + seconds
    barrier = threading.Barrier(threads)

    def worker(mine: list[int]) -> None:
        clock = time.perf_counter_ns
        barrier.wait()
        i = 0
        while time.perf_counter() < stop:
            query = QUERIES[i % len(QUERIES)]
            before = clock()
            router.ask(query, today=today)
            mine.append(clock() - before)
            i += 1

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(samples[i],)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - started
    merged = sorted(s for part in samples for s in part)
    return merged, len(merged), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per run (default 3)")
    args = parser.parse_args()

    from hybrid_weather.router import HybridRouter, Settings

    today = dt.date(2026, 11, 29)
    server = FakeWeather(today).start()
    try:
        router = HybridRouter(
            provider="open-meteo", settings=Settings(open_meteo_url=server.url), cache_ttl=3600, ledger="off"
        )  # the ledger's own cost is measured by bench_ledger.py
        for query in QUERIES:
            router.ask(query, today=today)  # fills the cache: one upstream request per place
        upstream = server.requests["/v1/forecast"]
        python = sys.version.split()[0]
        print(f"warm rule-path ask(), forecast cached ({upstream} upstream requests in all), Python {python}")
        for threads in (1, 8):
            merged, count, elapsed = run(router, args.seconds, threads, today)
            p50 = merged[len(merged) // 2] / 1000
            p99 = merged[min(len(merged) - 1, int(len(merged) * 0.99))] / 1000
            print(f"  {threads} thread(s): {count / elapsed:,.0f} asks/s, p50 {p50:.1f} µs, p99 {p99:.1f} µs")
        assert server.requests["/v1/forecast"] == upstream, "a cached ask went upstream"
        router.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()

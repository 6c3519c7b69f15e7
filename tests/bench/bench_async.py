"""Benchmark aask() under a burst: N concurrent asks over distinct places against a slow upstream.

    python tests/bench/bench_async.py [--asks 500] [--places 250] [--delay 0.2] [--figures-json]

A local Open-Meteo-shaped server (tests/fake_weather.py) answers every request after DELAY seconds; it
runs in its own process, so its Python work does not share the client's interpreter lock.
Every ask is a rule question about one of PLACES prefecture-level cities (each asked twice when
asks = 2 × places), all started at once on one event loop. Prints how many were answered, how long
the burst took, the upstream requests per place, the most requests the server saw at once, and the
errors by type. The target (issue 11): 500 over 250 places at 200 ms, all answered in ≤ 3 s, with at
most one upstream request per place. With --figures-json, the last line is the headline figure as JSON,
for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # corpus.py, fake_weather.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.bench

from corpus import distinct_cities

from tests.bench import FIGURES_FLAG, print_figures

from fake_weather import FakeWeather


def serve(today: dt.date, delay: float, pipe) -> None:
    """The upstream, in a child process: sends its URL, then its counts when asked."""
    server = FakeWeather(today).start()
    server.delay = delay
    pipe.send(server.url)
    pipe.recv()
    pipe.send((server.requests["/v1/forecast"], server.max_in_flight))
    server.stop()


async def burst(router, questions: list[str], today: dt.date) -> tuple[list[object], float]:
    started = time.perf_counter()
    results = await asyncio.gather(
        *(router.aask(q, today=today, emoji=False) for q in questions), return_exceptions=True
    )
    return results, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=500)
    parser.add_argument("--places", type=int, default=250)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the upstream takes per request")
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figure as a JSON line")
    args = parser.parse_args()

    from hybrid_weather.router import HybridRouter, Settings

    today = dt.date(2026, 11, 29)
    pipe, child_end = multiprocessing.Pipe()
    upstream = multiprocessing.Process(target=serve, args=(today, args.delay, child_end), daemon=True)
    upstream.start()
    url = pipe.recv()
    try:
        with HybridRouter(settings=Settings(open_meteo_url=url), ledger="off") as router:
            places = distinct_cities(router, args.places, today)
            questions = [f"{places[i % len(places)]}今天天气" for i in range(args.asks)]
            results, took = asyncio.run(burst(router, questions, today))
            breaker = router.weather.provider.http.breaker.state
    finally:
        pipe.send("stats")
        requests, most_at_once = pipe.recv()
        upstream.join(5)
    errors = collections.Counter(type(r).__name__ for r in results if isinstance(r, BaseException))
    answered = len(results) - sum(errors.values())
    per_place = requests / len(places)
    print(f"asks: {args.asks} over {len(places)} places, upstream {args.delay * 1000:.0f} ms per request")
    print(f"answered: {answered}/{args.asks} in {took:.2f} s")
    print(f"upstream requests: {requests} ({per_place:.2f} per place), at most {most_at_once} at once")
    print(f"errors: {dict(errors) or 'none'}; breaker after the burst: {breaker}")
    if args.figures_json:
        what = f"{args.asks} concurrent `aask` over {len(places)} places, {args.delay * 1000:.0f} ms upstream"
        print_figures(
            [
                (
                    f"{what}: time to answer all; upstream requests per place (targets ≤ 3 s, all answered; ≤ 1)",
                    f"{took:.2f} s ({answered}/{args.asks} answered); {per_place:.2f}",
                )
            ]
        )


if __name__ == "__main__":
    main()

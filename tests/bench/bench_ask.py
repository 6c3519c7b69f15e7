"""Benchmark the warm rule path: ask() with the forecast cached, from 1 and from 8 threads, with the file
ledger, and in several processes.

    python tests/bench/bench_ask.py [--seconds S] [--processes N] [--ledger-turns T] [--figures-json]

The forecast comes once from a local Open-Meteo-shaped server (tests/fake_weather.py); every ask after
that is answered from the cache, so the figures are the router's own cost: route(), cache look-up and
rendering. Prints p50/p99 µs per ask() and asks/s (ledger off, then with a file ledger and its share of
the ledger-off rate, the median of T short turns of each side by side: target >= 0.9), and how asks/s
scale from 1 to N processes next to how a pure-CPU loop scales in the same run (target >= 0.9 x N where
N cores are free; this machine is shared; --processes 0 leaves it out). With --figures-json, the last line
is the headline figure as JSON, for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fake_weather.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.bench

from tests.bench import FIGURES_FLAG, print_figures

from fake_weather import FakeWeather

#: The day every benchmark of the warm rule path asks on (the fake server's forecast starts there).
TODAY = dt.date(2026, 11, 29)
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


def rates_in_turns(routers: dict, seconds: float, turns: int, today: dt.date) -> dict[str, list[float]]:
    """Asks/s of each of ROUTERS (warmed first), one thread, in TURNS turns of SECONDS each, side by side: this
    machine's speed drifts within a run, and rates of phases run one after the other measured the drift too.
    Every other turn runs them in the reverse order, so neither always follows the other."""
    for router in routers.values():
        for query in QUERIES:
            router.ask(query, today=today)
    rates: dict[str, list[float]] = {name: [] for name in routers}
    for turn in range(turns):
        for name, router in list(routers.items())[:: -1 if turn % 2 else 1]:
            _, count, elapsed = run(router, seconds, 1, today)
            rates[name].append(count / elapsed)
            if router.parts.ledger is not None:
                router.parts.ledger.flush()  # its backlog is written before the next turn, not during it
    return rates


def _asks_in_process(url: str, seconds: float, start: float) -> int:
    """Asks one fresh process answers in SECONDS (warm, ledger off), from the shared START moment."""
    from hybrid_weather.router import HybridRouter, Settings

    today = TODAY
    router = HybridRouter(provider="open-meteo", settings=Settings(open_meteo_url=url), cache_ttl=3600, ledger="off")
    for query in QUERIES:
        router.ask(query, today=today)
    time.sleep(max(0.0, start - time.time()))
    return len(run(router, seconds, 1, today)[0])


def _spins_in_process(seconds: float, start: float) -> int:
    """Iterations of a pure-CPU loop in SECONDS: what the machine's cores give this run."""
    time.sleep(max(0.0, start - time.time()))
    stop, count = time.perf_counter() + seconds, 0
    while time.perf_counter() < stop:
        count += sum(range(100))
    return count


def scaling(work, args: tuple, processes: int) -> tuple[float, float]:
    """(total of 1 process, total of PROCESSES processes at once) of WORK(*ARGS, start)."""
    context = multiprocessing.get_context("spawn")
    totals = []
    for n in (1, processes):
        with context.Pool(n) as pool:
            start = time.time() + 3  # every process warm before the clock starts
            totals.append(sum(pool.starmap(work, [(*args, start)] * n)))
    return totals[0], totals[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per run (default 3)")
    parser.add_argument(
        "--processes", type=int, default=2, help="processes for the scaling run (default 2; 0 leaves it out)"
    )
    parser.add_argument(
        "--ledger-turns", type=int, default=15, help="turns of the ledger's ratio, SECONDS in all for each (default 15)"
    )
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figure as a JSON line")
    args = parser.parse_args()
    figures = []

    from hybrid_weather.router import HybridRouter, Settings

    today = TODAY
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
            met = count / elapsed >= 20_000 and p50 <= 50
            target = (
                f" (target >= 20,000 asks/s and p50 <= 50 µs: {'met' if met else 'MISSED'})" if threads == 1 else ""
            )
            print(f"  {threads} thread(s): {count / elapsed:,.0f} asks/s, p50 {p50:.1f} µs, p99 {p99:.1f} µs{target}")
            if threads == 1:
                figures.append(
                    (
                        "warm `ask()`, 1 thread, ledger off: p50; asks/s (targets ≤ 50 µs; ≥ 20,000)",
                        f"{p50:.1f} µs; {count / elapsed:,.0f} asks/s",
                    )
                )
        assert server.requests["/v1/forecast"] == upstream, "a cached ask went upstream"
        router.close()

        # Without and with the file ledger in short turns side by side: this machine's speed drifts within a run,
        # and a ratio of two phases run one after the other measured the drift as well. Each turn's ratio is
        # its own pair's; their median and quartiles are printed (the spread is the machine's).
        with tempfile.TemporaryDirectory() as folder:
            routers = {
                name: HybridRouter(provider="open-meteo", settings=Settings(open_meteo_url=server.url),
                                   cache_ttl=3600, ledger=ledger)
                for name, ledger in (("off", "off"), ("file", str(Path(folder) / "ledger.db")))
            }  # fmt: skip
            rates = rates_in_turns(routers, args.seconds / args.ledger_turns, args.ledger_turns, today)
            for measured in routers.values():
                measured.close()
        ratios = [file / off for file, off in zip(rates["file"], rates["off"], strict=True)]
        low, middle, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        print(f"  1 thread, file ledger: {statistics.median(rates['file']):,.0f} asks/s = {middle:.2f}x of "
              f"{statistics.median(rates['off']):,.0f} without it (median of {len(ratios)} turns of "
              f"{args.seconds / args.ledger_turns:g} s, quartiles {low:.2f}-{high:.2f}x; target >= 0.9x)")  # fmt: skip

        if args.processes:
            print_scaling(server.url, args.seconds, args.processes)
    finally:
        server.stop()
    if args.figures_json:
        print_figures(figures)


def print_scaling(url: str, seconds: float, processes: int) -> None:
    """How asks/s scale from 1 to PROCESSES processes, beside a pure-CPU loop's scaling in the same run: the
    loop says how many cores this shared machine gave the run, so the asks' scaling is read against it."""
    asks_1, asks_n = scaling(_asks_in_process, (url, seconds), processes)
    spins_1, spins_n = scaling(_spins_in_process, (seconds,), processes)
    n = processes
    print(f"  {n} processes: {asks_n / asks_1:.2f}x the asks of one ({asks_n / seconds:,.0f} asks/s in all); "
          f"a pure-CPU loop in the same run: {spins_n / spins_1:.2f}x (target >= {0.9 * n:.1f}x where {n} cores "
          "are free)")  # fmt: skip


if __name__ == "__main__":
    main()

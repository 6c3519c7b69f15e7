"""Measure whether a long-lived router's memory stays bounded, and print what was measured.

    python tests/bench/bench_memory.py [--questions 3000000] [--every 500000] [--seed 1] [--top 0]

One router (demo provider, no I/O) routes that many distinct questions, each made at random from the
kinds a service meets all day: known places with dates and aspects, sound-alike and Latin spellings of
them, and garbage (random Han characters of the whole CJK block, random Latin letters and digits). Every
EVERY questions it prints the resident set size (VmRSS); the figure is the growth between the first
checkpoint past one million questions and the last: a bounded router keeps it within a few MB. With
--top N it also traces allocations (tracemalloc, several times slower) and prints the N source lines that
grew most between those two checkpoints: where an unbounded cache lives.

With --figures-json, the last line is the headline figures as JSON, for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.bench

from tests.bench import FIGURES_FLAG, print_figures

TODAY = dt.date(2026, 11, 29)
_DAYS = ["今天", "明天", "后天", "周六", "下周一", "3号", "十二月五日", "大后天", "这周末", ""]
_ASPECTS = ["天气", "会下雨吗", "冷不冷", "气温", "风大吗", "空气质量", "紫外线", "要带伞吗", ""]
_LATIN = "abcdefghijklmnopqrstuvwxyz"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status: this benchmark reads Linux's /proc")


def questions(seed: int, places: list[str], latin_places: list[str]) -> Iterator[str]:
    """Distinct questions, endlessly: a counter in a share of them keeps even the common shapes distinct."""
    pick = random.Random(seed)
    n = 0
    while True:
        n += 1
        kind = n % 6
        if kind == 0:
            yield f"{pick.choice(places)}{pick.choice(_DAYS)}{pick.choice(_ASPECTS)}"
        elif kind == 1:
            yield f"{pick.choice(places)}{pick.choice(places)}{pick.choice(_DAYS)}哪个冷{n}"
        elif kind == 2:  # a Latin spelling with a typo in it
            word = list(pick.choice(latin_places))
            word[pick.randrange(len(word))] = pick.choice(_LATIN)
            yield f"{''.join(word)} {pick.choice(_DAYS)}{pick.choice(_ASPECTS)}"
        elif kind == 3:  # Han characters from the whole block: every character's readings and sounds
            han = "".join(chr(pick.randrange(0x4E00, 0x9FFF)) for _ in range(pick.randint(2, 8)))
            yield f"{han}{pick.choice(_DAYS)}{pick.choice(_ASPECTS)}"
        elif kind == 4:
            yield "".join(pick.choice(_LATIN) for _ in range(pick.randint(3, 14))) + f" weather {n}"
        else:
            yield f"{pick.choice(places)}{chr(pick.randrange(0x4E00, 0x9FFF))}{pick.randint(1, 31)}号天气"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=3_000_000)
    parser.add_argument("--every", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--top", type=int, default=0, help="trace allocations and print the N lines that grew most")
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figures as JSON")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo")
    gazetteer = router.parts.parser.reader.gazetteer
    places = sorted(gazetteer._by_word)  # every Han word that names a place
    latin_places = sorted(key for key in gazetteer._latin if len(key) > 2)  # their pinyin and English keys
    if args.top:
        tracemalloc.start()
    checkpoints: list[tuple[int, float]] = []
    snapshots: dict[int, tracemalloc.Snapshot] = {}
    started = time.perf_counter()
    for n, question in enumerate(questions(args.seed, places, latin_places), start=1):
        router.route(question, today=TODAY)
        if n % args.every == 0:
            checkpoints.append((n, rss_mb()))
            if args.top:
                snapshots[n] = tracemalloc.take_snapshot()
            print(f"{n:>10,} questions  RSS {checkpoints[-1][1]:8.1f} MB  {time.perf_counter() - started:7.0f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
        if n >= args.questions:
            break
    router.close()
    past_million = [c for c in checkpoints if c[0] >= 1_000_000] or checkpoints
    (first_n, first_mb), (last_n, last_mb) = past_million[0], checkpoints[-1]
    growth = last_mb - first_mb
    print(f"RSS after {first_n:,} questions: {first_mb:.1f} MB; after {last_n:,}: {last_mb:.1f} MB "
          f"(growth {growth:+.1f} MB)")  # fmt: skip
    if args.top and first_n in snapshots and last_n in snapshots:
        for stat in snapshots[last_n].compare_to(snapshots[first_n], "lineno")[: args.top]:
            print(f"  {stat}")
    if args.figures_json:
        print_figures([(f"RSS growth, {first_n:,} → {last_n:,} distinct questions", f"{growth:+.1f} MB")])


if __name__ == "__main__":
    main()

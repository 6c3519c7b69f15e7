"""Time route() of two checkouts, or two installs, in turns: what a change did to the router's warm path.

    git worktree add /tmp/before <rev>
    python tests/bench/bench_route_turns.py /tmp/before [AFTER, default: this checkout] [--rounds N]
    python tests/bench/bench_route_turns.py /tmp/pure/bin/python /tmp/compiled/bin/python

Each side runs in a process of its own, and both are warmed on the dev set. A checkout's code is imported
as hybrid_weather through a folder of links to its router, agent and rules folders, ahead of any installed
copy, so it runs as Python; an install's interpreter imports its own hybrid_weather, compiled (setup.py) or
not, which the report says.
Then the dev set is routed one round at a time on days not asked on before, the two processes taking
turns (and who goes first alternating): this machine's speed drifts within a run, and two versions timed
one after the other measured the drift as well. Prints p50 and p99 of each and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_route import percentiles

# One checkout's side, timing as bench_route.py does: warm on the dev set, then a round of route() per day
# offset read from stdin, its timings (ns, one per question) written back as a JSON line.
_WORKER = """
import datetime as dt, json, sys
sys.path.insert(0, sys.argv[1])
from bench_route import TODAY, dev_set_queries, rule_path, time_each
from hybrid_weather.router import HybridRouter
import hybrid_weather.router as package
queries, router = dev_set_queries(), HybridRouter(ledger="off")
for query in queries:
    router.route(query, today=TODAY)
print(package.__file__, rule_path(), flush=True)
for line in sys.stdin:
    samples, _ = time_each(lambda q, day: router.route(q, today=day), queries, [TODAY + dt.timedelta(days=int(line))])
    print(json.dumps(samples), flush=True)
"""


def start(side: Path, links: Path) -> tuple[subprocess.Popen[str], str]:
    """A worker process routing with SIDE's code: a checkout's, its package made of links under LINKS, or an
    install's, SIDE its Python; and what it imported."""
    links.mkdir(parents=True)
    python, env = str(side), {**os.environ, "HYBRID_WEATHER_LEDGER": "off"}
    if side.is_dir():
        python, env["PYTHONPATH"] = sys.executable, str(links)
        for part in ("router", "agent", "rules"):
            (links / "hybrid_weather").mkdir(exist_ok=True)
            (links / "hybrid_weather" / part).symlink_to(side / part, target_is_directory=True)
    bench = str(Path(__file__).resolve().parent)
    worker = subprocess.Popen([python, "-c", _WORKER, bench], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env, cwd=links)  # fmt: skip
    assert worker.stdin is not None and worker.stdout is not None
    imported = worker.stdout.readline().strip()
    if side.is_dir() and not imported.startswith(str(links)):
        sys.exit(f"{side}: the worker imported {imported or 'nothing'}, not the checkout's code")
    if not imported:
        sys.exit(f"{side}: the worker could not import hybrid_weather")
    return worker, imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout of the code before the change, or an install's python")
    parser.add_argument("after", type=Path, nargs="?", default=Path(__file__).resolve().parents[2],
                        help="a checkout of the code after it (default: this one), or an install's python")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=20, help="rounds of the dev set for each (default 20)")
    args = parser.parse_args()
    for side in (args.before, args.after):
        if side.is_dir() and not (side / "router" / "facade.py").is_file():
            sys.exit(f"{side} is not a checkout of hybrid-weather (no router/facade.py)")
        if not side.is_dir() and not os.access(side, os.X_OK):
            sys.exit(f"{side} is neither a checkout of hybrid-weather nor a Python to run")
    samples: dict[str, list[int]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as folder:
        started = {name: start(side.resolve() if side.is_dir() else side, Path(folder) / name)
                   for name, side in (("before", args.before), ("after", args.after))}  # fmt: skip
        workers = {name: worker for name, (worker, _) in started.items()}
        try:
            for round_ in range(args.rounds):
                order = list(workers.items()) if round_ % 2 == 0 else list(workers.items())[::-1]
                for name, worker in order:
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write(f"{round_ + 1}\n")
                    worker.stdin.flush()
                    samples[name] += json.loads(worker.stdout.readline())
        finally:
            for worker in workers.values():
                if worker.stdin is not None:
                    worker.stdin.close()
                worker.wait()
    (before_p50, before_p99), (after_p50, after_p99) = percentiles(samples["before"]), percentiles(samples["after"])
    count = len(samples["after"]) // args.rounds
    print(f"route() of a question not decided before, {count} dev-set questions x {args.rounds} rounds in turns, "
          f"Python {sys.version.split()[0]}")  # fmt: skip
    print(f"  before ({started['before'][1]}): p50 {before_p50:.1f} µs, p99 {before_p99:.1f} µs")
    print(f"  after  ({started['after'][1]}): p50 {after_p50:.1f} µs, p99 {after_p99:.1f} µs")
    print(f"  after / before: p50 {after_p50 / before_p50:.2f}x, p99 {after_p99 / before_p99:.2f}x")


if __name__ == "__main__":
    main()

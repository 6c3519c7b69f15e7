"""What the file ledger costs a served request: `hybrid-weather serve` with the ledger off and with it, in turns.

    python tests/bench/bench_serve_ledger.py [--connections 32] [--seconds 5] [--turns 8] [--figures-json]

bench_ask.py measures the file ledger's share of the ledger-off rate for ask() in a tight loop in one
thread (target >= 0.9x); a service asks between socket reads. This starts two services of one worker each
(demo provider, so no network), one with HYBRID_WEATHER_LEDGER=off and one with a file ledger, warms both,
then drives POST /v1/ask with rule questions at each in turn with wrk (Debian's package) on the same
machine, and prints each turn's rate and p99 and the file ledger's share of the ledger-off rate (the
median of the turns, and their range). One worker each, so the second core is left to wrk and to the
ledger writer's SQLite work (target: the share >= 0.9x). With --figures-json, the last line is the headline
figure as JSON, for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_serve.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.bench

from bench_serve import QUESTIONS, _port, _wait, _wrk, service_env

from tests.bench import FIGURES_FLAG, print_figures

KINDS = ("off", "file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=5, help="seconds of each turn (default 5)")
    parser.add_argument("--turns", type=int, default=8, help="turns of each service (default 8)")
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figure as a JSON line")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install wrk")
    bodies = [{"query": question} for question in QUESTIONS]
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="hybrid-weather-bench-") as tmp:
        folder = Path(tmp)
        services, urls = {}, {}
        try:
            for kind in KINDS:
                port = _port()
                env = service_env(folder / kind, "off" if kind == "off" else str(folder / "ledger.db"))
                services[kind] = subprocess.Popen(
                    [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", str(port), "--workers", "1"],
                    env=env,
                )
                urls[kind] = f"http://127.0.0.1:{port}/v1/ask"
            for kind in KINDS:
                _wait(urls[kind], services[kind])
                _wrk(urls[kind], bodies, args.connections, 2, folder)  # warm: every forecast cached
            for turn in range(args.turns):
                for kind in KINDS if turn % 2 == 0 else KINDS[::-1]:  # each goes first in turn
                    runs[kind].append(_wrk(urls[kind], bodies, args.connections, args.seconds, folder))
        finally:
            for process in services.values():
                process.terminate()
                process.wait(timeout=30)
    print(
        f"POST /v1/ask, rule questions: one worker each, {args.connections} connections, {args.turns} turns of "
        f"{args.seconds} s, wrk -t2 on the same machine ({os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})"
    )
    for kind in KINDS:
        rates = ", ".join(f"{run['rps']:,.0f}" for run in runs[kind])
        p99 = statistics.median(run["p99"] for run in runs[kind])
        failed = sum(run["non2xx"] for run in runs[kind])
        failures = f"; {failed:.0f} non-2xx" if failed else ""
        print(f"  ledger {kind:4}  req/s {rates}; p99 {p99:.1f} ms (median){failures}")
    shares = sorted(f["rps"] / o["rps"] for f, o in zip(runs["file"], runs["off"], strict=True))
    share = statistics.median(shares)
    print(f"  file ledger, share of ledger off: {share:.2f}x ({shares[0]:.2f}-{shares[-1]:.2f}x)")
    if args.figures_json:
        print_figures(
            [
                (
                    f"file ledger served over HTTP, share of the ledger-off rate, median of {args.turns} turns "
                    "(target ≥ 0.9×)",
                    f"{share:.2f}× ({shares[0]:.2f}–{shares[-1]:.2f}×)",
                )
            ]
        )


if __name__ == "__main__":
    main()

"""Run the benchmarks and print their headline figures as one Markdown table.

    python -m tests.bench [--only NAME ...] [--quick] [--timeout SECONDS] [--against REF [--rounds N]]

Each benchmark runs in a process of its own (so one that fails or hangs costs its own row, not the
others'), with the short settings below, and gives its figures on its last line (--figures-json). The
table holds only what was measured in this run, with the command that measured it, the date, the installed
hybrid-weather's version and the machine; a benchmark that failed or could not run has a row saying why.
The default settings take a few minutes (the first savings run also loads 10 million rows into PostgreSQL,
kept for the next); --quick shortens every run to seconds, for checking that the benchmarks still run: its
figures are too short to quote. --against REF measures two regular installs instead of this one, A (the commit
REF) and B (the working tree), alternating them run by run for --rounds rounds, and prints each figure's
B/A ratio with its range over the rounds, beside the ratio of CPU instructions callgrind counts for the same
work (tests/bench/ab.py says how). Progress goes to stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.bench import FIGURES_FLAG, ab

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: The table stays readable in the README: a benchmark gives one to three headline figures, not its report.
MAX_ROWS = 16
COLUMNS = ("figure", "value", "command", "date", "version", "machine")


@dataclass(frozen=True)
class Benchmark:
    script: str
    arguments: tuple[str, ...]  # the runner's settings: short enough for the whole run to take minutes
    quick: tuple[str, ...]  # --quick's: seconds, to check the script still runs and prints its figures


BENCHMARKS = {
    "route": Benchmark("bench_route.py", ("--rounds", "10", "--cold-runs", "5"),
                       ("--rounds", "1", "--cold-runs", "1", "--first", "200")),
    "reading": Benchmark("bench_route.py", ("--reading", "tests/data/holdout/fifth.jsonl", "--today", "2026-12-07"),
                         ("--reading", "tests/data/holdout/fifth.jsonl", "--today", "2026-12-07")),
    "tuning": Benchmark("bench_route.py", ("--reading", "tests/data/tuning/third.jsonl", "--today", "2026-12-07"),
                        ("--reading", "tests/data/tuning/third.jsonl", "--today", "2026-12-07")),
    "ask": Benchmark("bench_ask.py", ("--seconds", "3", "--ledger-turns", "10", "--processes", "0"),
                     ("--seconds", "0.5", "--ledger-turns", "2", "--processes", "0")),
    "ledger": Benchmark("bench_ledger.py", (), ("--asks", "2000")),
    "serve-ledger": Benchmark("bench_serve_ledger.py", ("--turns", "4", "--seconds", "3"),
                              ("--turns", "1", "--seconds", "1")),
    "serve": Benchmark("bench_serve.py", ("--seconds", "3", "--rounds", "2"), ("--seconds", "1", "--rounds", "1")),
    "savings": Benchmark("bench_savings.py", ("--runs", "3"), ("--rows", "100000", "--runs", "1")),
    "misses": Benchmark("bench_savings.py", ("--misses", "--runs", "3"),
                        ("--misses", "--rows", "20000", "--runs", "1")),
    "async": Benchmark("bench_async.py", (), ("--asks", "100", "--places", "50")),
    "memory": Benchmark("bench_memory.py", (), ("--questions", "20000", "--every", "10000")),
}  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", action="append", choices=sorted(BENCHMARKS), metavar="NAME",
        help=f"run only NAME (again for more): {', '.join(BENCHMARKS)}",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="seconds per benchmark: checks they run, not figures")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a benchmark may take (default 600)")
    parser.add_argument(
        "--against", metavar="REF",
        help="measure REF (a commit) as A and the working tree as B, both installed as wheels in venvs of their "
             "own (kept in the temporary folder for the next run), in turns, and print the ratios B/A",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="with --against: rounds of A and B (default 3)")
    parser.add_argument(
        "--no-instructions", action="store_true", help="with --against: leave out callgrind's instruction counts"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def run(name: str, benchmark: Benchmark, quick: bool, timeout: float, python: str = sys.executable
        ) -> list[dict[str, str]]:  # fmt: skip
    """BENCHMARK's figures, measured with PYTHON's install, or one row saying why there are none."""
    arguments = benchmark.quick if quick else benchmark.arguments
    command = [python, str(HERE / benchmark.script), *arguments, FIGURES_FLAG]
    print(f"{name}: {benchmark.script} {' '.join(arguments)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [failed(name, benchmark, arguments, f"did not finish within {timeout:g} s")]
    print(f"{name}: {time.monotonic() - started:.0f} s, exit {done.returncode}", file=sys.stderr, flush=True)
    figures = figures_in(done.stdout)
    if done.returncode != 0 or figures is None:
        return [failed(name, benchmark, arguments, why_failed(done))]
    return figures


def why_failed(done: subprocess.CompletedProcess[str]) -> str:
    """The line that says why: the last unindented line of stderr (an exception's, whose message may go on
    indented below it, or a SystemExit's), else of stdout."""
    for output in (done.stderr, done.stdout):
        said = [line.strip() for line in output.splitlines() if line.strip() and not line[0].isspace()]
        if said:
            return said[-1]
    return f"exit {done.returncode} and nothing said"


def figures_in(stdout: str) -> list[dict[str, str]] | None:
    """The figures a benchmark printed: its last line that is a JSON list (a server it started may write
    after it), or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("[{"):
            try:
                figures = json.loads(line)
            except ValueError:
                return None
            return [{key: str(figure[key]) for key in ("figure", "value", "command")} for figure in figures]
    return None


def failed(name: str, benchmark: Benchmark, arguments: tuple[str, ...], why: str) -> dict[str, str]:
    command = " ".join(["python", f"tests/bench/{benchmark.script}", *arguments])
    return {"figure": f"{name} ({benchmark.script})", "value": f"not measured: {why[:160]}", "command": command}


def version() -> str:
    try:
        return importlib.metadata.version("hybrid-weather")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> str:
    """CPU count and model, and Python's version: what a time figure depends on."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} × {model}, Python {platform.python_version()}"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict[str, str]]) -> str:
    """ROWS as one Markdown table, the date, version and machine of this run on every row (a row copied
    elsewhere keeps them)."""
    shared = {"date": dt.date.today().isoformat(), "version": version(), "machine": machine()}
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        row = {**row, **shared, "command": f"`{row['command']}`"}
        lines.append("| " + " | ".join(cell(row[column]) for column in COLUMNS) + " |")
    return "\n".join(lines)


def in_rounds(names: list[str], args: argparse.Namespace, pythons: dict[str, str]
              ) -> list[dict[str, list[dict[str, str]]]]:  # fmt: skip
    """Each round's figures of each side of PYTHONS: benchmark by benchmark, A then B in one round and B then
    A in the next, so that neither always runs on the warmer (or the busier) machine."""
    rounds: list[dict[str, list[dict[str, str]]]] = []
    for number in range(args.rounds):
        print(f"round {number + 1} of {args.rounds}", file=sys.stderr, flush=True)
        measured: dict[str, list[dict[str, str]]] = {side: [] for side in pythons}
        for name in names:
            for side in sorted(pythons, reverse=number % 2 == 1):
                measured[side] += run(name, BENCHMARKS[name], args.quick, args.timeout, pythons[side])
        rounds.append(measured)
    return rounds


def counted(pythons: dict[str, str]) -> dict[str, dict[str, float]]:
    """Each side's instruction figures, or none where valgrind is missing (said on stderr)."""
    if shutil.which(ab.VALGRIND) is None:
        print("valgrind not found: no instruction counts (apt-get install valgrind)", file=sys.stderr)
        return {}
    figures = {}
    for side, python in pythons.items():
        print(f"{side}: counting instructions under callgrind (minutes)", file=sys.stderr, flush=True)
        figures[side] = ab.counted_figures(python)
    return figures


def main() -> None:
    args = parse_args()
    names = args.only or list(BENCHMARKS)
    if not args.against:
        rows = [row for name in names for row in run(name, BENCHMARKS[name], args.quick, args.timeout)]
        if len(rows) > MAX_ROWS:
            print(f"{len(rows)} figures: the table keeps the first {MAX_ROWS}", file=sys.stderr)
        print(table(rows[:MAX_ROWS]))
        return
    pythons = {"A": ab.install_of(args.against), "B": ab.install_of_worktree()}
    if not ab.compiled(Path(pythons["B"])):
        raise SystemExit("this tree's rule path did not compile (mypy --strict, .ci/run gate, says why): not measured")
    rounds = in_rounds(names, args, pythons)
    instructions = {} if args.no_instructions else counted(pythons)
    print(ab.ratio_table(rounds, args.against, instructions))
    if instructions:
        print()
        print(ab.instruction_table(instructions["A"], instructions["B"], args.against))


if __name__ == "__main__":
    main()

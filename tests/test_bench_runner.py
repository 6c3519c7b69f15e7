"""`python -m tests.bench` runs a benchmark and prints its figures as the Markdown table the README holds.

The quick route run is seconds long, so its figure means nothing: only that the runner ran the script,
read its figures and laid them out in the table's columns, with a number where the figure is.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

from support import subprocess_env

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["figure", "value", "command", "date", "version", "machine"]


def cells(line: str) -> list[str]:
    """A Markdown table row's cells (a `\\|` inside a cell is not a border)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_the_runner_prints_one_table_of_what_it_measured():
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench", "--only", "route", "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=subprocess_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert cells(lines[0]) == COLUMNS, done.stdout
    assert set(cells(lines[1])) == {"---"}, done.stdout
    rows = [dict(zip(COLUMNS, cells(line), strict=True)) for line in lines[2:]]
    assert len(rows) == 2, done.stdout  # route() warm, and a cold CLI
    assert rows[1]["figure"].startswith("cold `hybrid-weather route"), rows[1]
    assert re.match(r"\d+ ms; \d+ ms; \d+\.\d MB$", rows[1]["value"]), rows[1]
    row = rows[0]
    assert "route()" in row["figure"], row
    assert re.match(r"[+-]?\d+(\.\d+)? µs", row["value"]), row  # measured, not "not measured: …"
    assert row["command"].startswith("`python tests/bench/bench_route.py "), row
    assert row["date"] == dt.date.today().isoformat(), row
    assert row["version"] == importlib.metadata.version("hybrid-weather"), row
    assert re.match(r"\d+ × .+, Python \d+\.\d+", row["machine"]), row


def test_the_ratios_against_a_commit_are_taken_round_by_round_with_their_range():
    from tests.bench import ab

    figure = "`route()` of a new question, p50"
    rounds = [
        {"A": [{"figure": figure, "value": a}], "B": [{"figure": figure, "value": b}]}
        for a, b in (("20.0 µs; 0.80×", "22.0 µs; 0.85×"), ("10.0 µs", "9.0 µs"), ("25.0 µs", "not measured: x"))
    ]
    counted = {"A": {"route": 1000.0}, "B": {"route": 950.0}}
    lines = ab.ratio_table(rounds, "093459e", counted).splitlines()
    assert "A: 093459e" in lines[0] and "3 rounds" in lines[0], lines
    row = cells(lines[2])
    assert row[1] == "20.0 µs; 0.80× / 10.0 µs / 25.0 µs", row
    assert row[3] == "1.00× (0.90–1.10)", row  # 22/20 and 9/10; the round B did not measure has no ratio
    assert row[4] == "0.950×", row

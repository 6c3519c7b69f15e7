"""The benchmarks in tests/bench still run: each of the quick ones, briefly, as a user would run it.

These runs are too short for their figures to mean anything: only that the script runs to its end, prints
every figure, and no ledger writer failed on the way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "bench"


@pytest.mark.parametrize(
    "script, arguments, figures",
    [
        ("bench_ledger.py", ["--asks", "300"], ["rows/s committed", "added by the ledger"]),
        (
            "bench_savings.py",
            ["--backend", "sqlite", "--rows", "3000", "--runs", "1"],
            ["savings_report()", "savings --json, CLI"],
        ),
        (
            "bench_savings.py",
            ["--misses", "--rows", "3000", "--runs", "1", "--raw"],
            ["misses_report()", "over the raw rows"],
        ),
    ],
)
def test_a_benchmark_runs_to_its_end_and_prints_its_figures(script, arguments, figures):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *arguments], capture_output=True, text=True, timeout=120
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "ledger writer" not in said, said  # a writer that failed logs it and carries on: the figures lie
    for figure in figures:
        assert figure in done.stdout, said

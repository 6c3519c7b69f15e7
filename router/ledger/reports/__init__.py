"""Reports read from a stored ledger: what routing saved (savings, simulate) and what the rules missed
(misses)."""

from .misses import misses_report, render_misses
from .savings import render_report, render_simulation, savings_report, simulate, simulate_log

__all__ = [
    "misses_report",
    "render_misses",
    "render_report",
    "render_simulation",
    "savings_report",
    "simulate",
    "simulate_log",
]

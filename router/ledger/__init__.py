"""Recording: one row per request in the cost ledger, and the reports read from it (savings, simulate).

Imported only when a request is first recorded or a report is asked for: `route()` never needs it.
"""

from .baseline import Baseline, default_baseline_cost, default_baseline_usage
from .entry import LedgerEntry
from .migrations import MIGRATIONS, migrate
from .misses import misses_report, render_misses
from .privacy import mask_personal_data
from .recorder import Recorder
from .savings import render_report, savings_report, simulate
from .store import Ledger

__all__ = [
    "MIGRATIONS",
    "Baseline",
    "Ledger",
    "LedgerEntry",
    "Recorder",
    "default_baseline_cost",
    "default_baseline_usage",
    "mask_personal_data",
    "migrate",
    "misses_report",
    "render_misses",
    "render_report",
    "savings_report",
    "simulate",
]

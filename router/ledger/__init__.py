"""Recording: one row per request in the cost ledger, and the reports read from it (savings, simulate).

Imported only when a request is first recorded or a report is asked for: `route()` never needs it.
"""

from hybrid_weather.rules.privacy import mask_personal_data

from .baseline import Baseline, default_baseline_cost, default_baseline_usage
from .entry import LedgerEntry
from .migrations import MIGRATIONS, migrate
from .misses import misses_report, render_misses
from .recorder import Recorder
from .savings import render_report, savings_report, simulate
from .store import Ledger, SpoolLedger

__all__ = [
    "MIGRATIONS",
    "Baseline",
    "Ledger",
    "LedgerEntry",
    "Recorder",
    "SpoolLedger",
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

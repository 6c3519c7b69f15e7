"""Recording: one row per request in the cost ledger (recorder → store), and the reports read from it.

Imported only when a request is first recorded or a report is asked for: `route()` never needs it.
"""

from hybrid_weather.rules.privacy import mask_personal_data

from .baseline import Baseline, default_baseline_cost, default_baseline_usage
from .entry import LedgerEntry
from .recorder import Recorder
from .reports import (
    misses_report,
    render_misses,
    render_report,
    render_simulation,
    savings_report,
    simulate,
    simulate_log,
)
from .store import MIGRATIONS, Ledger, SpoolLedger, migrate

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
    "render_simulation",
    "savings_report",
    "simulate",
    "simulate_log",
]

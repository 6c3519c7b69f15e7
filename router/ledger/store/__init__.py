"""Storage: entries become rows (rows), queued and written by one thread (writer) into SQLite or PostgreSQL,
with a spool file for whatever the database cannot take now (spool) and the schema both keep (migrations,
rollup)."""

from .migrations import MIGRATIONS, migrate
from .writer import Ledger, SpoolLedger

__all__ = ["MIGRATIONS", "Ledger", "SpoolLedger", "migrate"]

"""Storage: the Ledger (ledger), whose entries become rows (rows), queued and written by one thread (writer)
into SQLite or PostgreSQL (database), with a spool file for whatever the database cannot take now (spool)
and the schema both keep (migrations, rollup)."""

from .ledger import Ledger, SpoolLedger
from .migrations import MIGRATIONS, migrate

__all__ = ["MIGRATIONS", "Ledger", "SpoolLedger", "migrate"]

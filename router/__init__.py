"""The front door: parse a question into a Decision, answer rule routes, the CLI and the cost ledger."""

from ._decision import Decision
from ._router import Answer, HybridRouter
from ._session import Session

__all__ = ["Answer", "Decision", "HybridRouter", "Session"]

"""The front door: parse a question into a Decision, answer rule routes, the CLI and the cost ledger."""

from ._decision import Decision
from ._router import HybridRouter

__all__ = ["Decision", "HybridRouter"]

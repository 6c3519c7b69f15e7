"""Understanding a question: the Decision and the parser that makes it (no I/O)."""

from .decision import Comparison, Decision, Route
from .parser import MAX_PLACES, QueryParser

__all__ = ["MAX_PLACES", "Comparison", "Decision", "QueryParser", "Route"]

"""The router learning from its own traffic: `teach` (the operator's words, checked before they are kept)
and `learn` (overlay entries proposed from what the LLM looked up for questions the rules missed)."""

from .proposals import Learned, Proposal, apply_proposals, learn
from .teach import TeachResult, step_back, teach, teach_remove, teach_use

__all__ = [
    "Learned",
    "Proposal",
    "TeachResult",
    "apply_proposals",
    "learn",
    "step_back",
    "teach",
    "teach_remove",
    "teach_use",
]

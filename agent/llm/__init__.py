"""The LLM fallback: an OpenAI-compatible tool loop, its weather tools and the model table (prices).

Only the model table loads with this package (the ledger prices rows with it); the loop and the tools
load on first use, and `openai` only when the first model call is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .models import ModelFacts, ModelTable, Usage

if TYPE_CHECKING:
    from .loop import AgentResult, LLMAgent, LoopTrace, ToolTrace
    from .tools import TOOL_NAMES, TOOL_SCHEMAS, ToolBox, ToolOutcome

# Name → the module that defines it, for the names loaded on first use (PEP 562).
_LAZY = {
    **dict.fromkeys(("AgentResult", "LLMAgent", "LoopTrace", "ToolTrace"), ".loop"),
    **dict.fromkeys(("TOOL_NAMES", "TOOL_SCHEMAS", "ToolBox", "ToolOutcome"), ".tools"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TOOL_NAMES",
    "TOOL_SCHEMAS",
    "AgentResult",
    "LLMAgent",
    "LoopTrace",
    "ModelFacts",
    "ModelTable",
    "ToolBox",
    "ToolOutcome",
    "ToolTrace",
    "Usage",
]

"""The LLM fallback: an OpenAI-compatible tool loop, its tools (and the registry for your own) and the model
table (prices).

Only the model table loads with this package (the ledger prices rows with it); the loop and the tools
load on first use, and `openai` only when the first model call is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .models import ModelFacts, ModelTable, Usage

if TYPE_CHECKING:
    from .loop import AgentResult, LLMAgent, LoopTrace, ToolTrace
    from .registry import Tool, ToolContext, ToolError, tool
    from .tools import WEATHER_TOOL_NAMES, ToolBox, ToolOutcome

# Name → the module that defines it, for the names loaded on first use (PEP 562).
_LAZY = {
    **dict.fromkeys(("AgentResult", "LLMAgent", "LoopTrace", "ToolTrace"), ".loop"),
    **dict.fromkeys(("WEATHER_TOOL_NAMES", "ToolBox", "ToolOutcome"), ".tools"),
    **dict.fromkeys(("Tool", "ToolContext", "ToolError", "tool"), ".registry"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "WEATHER_TOOL_NAMES",
    "AgentResult",
    "LLMAgent",
    "LoopTrace",
    "ModelFacts",
    "ModelTable",
    "Tool",
    "ToolBox",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "ToolTrace",
    "Usage",
    "tool",
]

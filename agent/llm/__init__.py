"""The LLM fallback: an OpenAI-compatible tool loop, its weather tools and the model table (prices).

`openai` is imported only when the first model call is made, never by importing this package.
"""

from .loop import AgentResult, LLMAgent, LoopTrace, ToolTrace
from .models import ModelFacts, ModelTable, Usage
from .tools import TOOL_NAMES, TOOL_SCHEMAS, ToolBox, ToolOutcome

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

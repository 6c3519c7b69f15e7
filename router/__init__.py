"""The front door: understand a question (a Decision), answer it, record it; the CLI.

    from hybrid_weather.router import HybridRouter
    with HybridRouter() as router:
        router.ask("上海今天天气").text

The names below load on first use (PEP 562), so the console script can start before any of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hybrid_weather.agent.errors import (
        ConfigurationError,
        HybridWeatherError,
        InvalidQuestion,
        LLMUnavailable,
        WeatherUnavailable,
    )
    from hybrid_weather.agent.llm.registry import ToolContext, ToolError, tool

    from .answer import Answer, TextPiece
    from .facade import HybridRouter
    from .session import Session
    from .settings import Settings
    from .understand import Decision

_WHERE = {
    "Answer": ".answer",
    "TextPiece": ".answer",
    "HybridRouter": ".facade",
    "Session": ".session",
    "Settings": ".settings",
    "Decision": ".understand",
    **dict.fromkeys(
        ("ConfigurationError", "HybridWeatherError", "InvalidQuestion", "LLMUnavailable", "WeatherUnavailable"),
        "hybrid_weather.agent.errors",
    ),
    # tool is the whole registry and weighs nothing: the LLM loop and openai stay unloaded until a call
    **dict.fromkeys(("ToolContext", "ToolError", "tool"), "hybrid_weather.agent.llm.registry"),
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Answer",
    "ConfigurationError",
    "Decision",
    "HybridRouter",
    "HybridWeatherError",
    "InvalidQuestion",
    "LLMUnavailable",
    "Session",
    "Settings",
    "TextPiece",
    "ToolContext",
    "ToolError",
    "WeatherUnavailable",
    "tool",
]

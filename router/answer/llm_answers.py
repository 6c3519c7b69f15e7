"""LLM answers: the tool loop's result as an Answer, with its trace for --explain and --json."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..understand import Decision
from .answer import Answer, elapsed_ms

if TYPE_CHECKING:
    from hybrid_weather.agent.llm import AgentResult
    from hybrid_weather.agent.weather import WeatherProvider

#: Put before the rules' answer to the weather part of a question whose LLM is unavailable.
DEGRADED_NOTE = "（没有可用的 LLM，只能回答其中的天气部分）\n"


def llm_answer(
    decision: Decision,
    result: AgentResult,
    *,
    model: str,
    cost_usd: float | None,
    provider: WeatherProvider,
    started: float,
) -> Answer:
    """The Answer for an LLM-routed question; SOURCE and attribution only when a weather tool ran."""
    used_weather = result.tool_calls > 0
    return Answer(
        text=result.text,
        route="llm",
        decision=decision,
        data=_trace(result),
        source=provider.name if used_weather else None,
        stale=False,
        cost_usd=cost_usd,
        latency_ms=elapsed_ms(started),
        model=model,
        llm=result,
        attribution=provider.attribution if used_weather else None,
    )


def _trace(result: AgentResult) -> dict[str, Any]:
    return {
        "stopped": result.stopped,
        "places": result.places,
        "loops": [
            {
                "loop": t.loop,
                "prompt_tokens": t.usage.prompt_tokens,
                "cached_tokens": t.usage.cached_tokens,
                "completion_tokens": t.usage.completion_tokens,
                "latency_ms": round(t.latency_ms, 1),
                "attempts": t.attempts,
                "tools": [
                    {
                        "name": c.name,
                        "arguments": c.arguments,
                        "ok": c.ok,
                        "ms": round(c.duration_ms, 1),
                        "reused": c.reused,
                    }
                    for c in t.tools
                ],
            }
            for t in result.loops
        ],
    }

"""The Answer: what ask() returns, the text to show and everything behind it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..understand import Decision, Route

if TYPE_CHECKING:  # the LLM loop loads when first used: rule answers never need it
    from hybrid_weather.agent.llm import AgentResult


@dataclass(slots=True)
class Answer:
    """What ask() returns: the text to show and everything behind it."""

    text: str
    route: Route
    decision: Decision
    data: dict[str, Any]
    source: str | None  #: provider name (open-meteo, amap, demo), None when no weather was fetched
    stale: bool
    cost_usd: float | None
    latency_ms: float
    stale_age_s: float | None = None
    cache_hit: bool | None = None
    provider_ms: float = 0.0
    attribution: str | None = None
    model: str | None = None  #: the LLM that answered (llm route)
    llm: AgentResult | None = None  #: the loop's trace: tokens, time and tools per loop
    #: The models that failed before `model` answered (HYBRID_WEATHER_MODEL's fallbacks): (model, why).
    fallbacks: tuple[tuple[str, str], ...] = ()
    #: The id of the answer's ledger row, for feedback (`hybrid-weather feedback ID wrong`); None without a ledger.
    request_id: str | None = None

    def to_json(self, query: str) -> dict[str, Any]:
        """The `--json` object (docs/contracts.md)."""
        decision = self.decision.to_json(query)
        del decision["query"]
        payload = {
            "query": query,
            "route": self.route,
            "answer": self.text,
            "decision": decision,
            "data": self.data,
            "source": self.source,
            "stale": self.stale,
            "latency_ms": round(self.latency_ms, 3),
            "cost_usd": self.cost_usd,
        }
        # Every documented key on every route, null where it does not apply: programs read it without guessing.
        payload["stale_age_s"] = round(self.stale_age_s or 0.0, 1) if self.stale else None
        payload["attribution"] = self.attribution or None
        payload["request_id"] = self.request_id
        return payload


class TextPiece(NamedTuple):
    """A piece of an answer's text as it is produced, for ask(on_text=...): joined, the pieces are the
    Answer's text. An LLM answer's come as the model streams them; a rule answer's comes whole."""

    text: str
    model: str | None  #: the model writing it; None for the rules
    request_id: str | None  #: the answer's id (its ledger row's), known from the first piece; None without a ledger


def elapsed_ms(started: float) -> float:
    """Milliseconds since STARTED, a time.perf_counter() reading."""
    return (time.perf_counter() - started) * 1000

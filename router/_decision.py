"""The Decision: what the router makes of one question, before any I/O."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from hybrid_weather.rules.gazetteer import Place

Route = Literal["rule", "clarify", "llm"]
#: What a comparison asks for: which place or day is hotter, colder, wetter, windier, ...
Comparison = Literal["hot", "cold", "rain", "snow", "wind", "humidity", "air"]


@dataclass(slots=True)
class Decision:
    """What to do with a question. `reason` always says which rule decided, so a user can check it."""

    route: Route
    cities: list[str]
    dates: list[dt.date]
    aspect: str | None
    reason: str
    #: The places behind `cities`, for the weather tools.
    places: list[Place] = field(default_factory=list)
    #: Set when the question compares places or days (北京和上海明天哪个冷 → "cold").
    compare: Comparison | None = None
    #: For route "clarify": the question or notice to give the user.
    clarification: str | None = None
    #: The query after normalisation, as the rules read it.
    normalized: str = ""
    #: For a clarify about a place the gazetteer lacks: the word, and the rule decision it would make
    #: if a geocoder finds that place (its Place is a placeholder to be replaced).
    unknown_place: str | None = None
    pending: Decision | None = None

    def to_json(self, query: str) -> dict[str, Any]:
        """The `route --json` object (DESIGN.md §3.2): exactly these keys."""
        return {
            "query": query,
            "route": self.route,
            "cities": list(self.cities),
            "dates": [d.isoformat() for d in self.dates],
            "aspect": self.aspect,
            "reason": self.reason,
        }

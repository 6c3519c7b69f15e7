"""The router's word lists: aspects, fillers, comparisons, conjunctions and open-ended markers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._data import load_table

ASPECTS = ("weather", "temperature", "rain", "snow", "wind", "humidity", "air")


class Lexicon:
    """Word → role tables built from rules/data/lexicon.json. Build once, share freely."""

    def __init__(self) -> None:
        data = load_table("lexicon")
        self.aspect_of: dict[str, str] = {w: aspect for aspect, words in data["aspects"].items() for w in words}
        self.fillers = frozenset(data["fillers"])
        self.conjunctions = frozenset(data["conjunctions"])
        self.compare = frozenset(data["compare"])
        self.cold = frozenset(data["cold"])
        self.hot = frozenset(data["hot"])
        #: 降温 / 回暖: a change from today, so the asked day is compared with today.
        self.trend: dict[str, str] = {w: way for way, words in data["trend"].items() for w in words}
        self._open_category = {m: category for category, markers in data["open_ended"].items() for m in markers}
        # One alternation, longest marker first, so the reason names the most specific marker.
        self._open_pattern = re.compile(
            "|".join(re.escape(m) for m in sorted(self._open_category, key=len, reverse=True))
        )
        self.latin_role: dict[str, str] = {w: role for role, words in data["latin"].items() for w in words}

    def words(self) -> Iterable[str]:
        """Every Han word with a role, for the tokenizer's dictionary."""
        yield from self.aspect_of
        yield from self.fillers
        yield from self.conjunctions
        yield from self.compare
        yield from self.cold
        yield from self.hot
        yield from self._open_category

    def strip_open_ended(self, text: str) -> str:
        """TEXT with every open-ended marker removed (北京明天适合出游吗 → 北京明天吗), for degraded answers."""
        return self._open_pattern.sub(" ", text)

    def open_ended(self, text: str) -> tuple[str, str] | None:
        """(category, marker) of the first open-ended marker in TEXT, or None."""
        found = self._open_pattern.search(text)
        return (self._open_category[found.group(0)], found.group(0)) if found else None

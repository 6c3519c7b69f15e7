"""Decide a question: no I/O, no network, deterministic for a given `today`.

The router answers only what it fully understands. Every token must be a place, a date, an aspect,
a comparison, a conjunction or a filler word; anything else either looks like a place the gazetteer
lacks (→ clarify) or is content only a language model can handle (→ llm). That rule is what keeps a
wrong rule answer — the worst outcome — rare.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping

from hybrid_weather.agent.weather import Horizon
from hybrid_weather.rules import Aspect, Place, PlaceMatch, Reader, Reading, Tokens, find_dates, normalize

from .decision import Comparison, Decision, clarify, to_llm
from .follow_up import borrow_context

#: Most places one question may name; more is asked to be split up.
MAX_PLACES = 5
#: Aspects whose facts the general weather answer carries, so asking for several of them is one answer.
_GENERAL_ASPECTS: frozenset[Aspect] = frozenset({"weather", "temperature", "rain", "snow", "wind", "humidity"})
#: Aspects a comparison can measure directly.
_COMPARABLE: dict[Aspect, Comparison] = {
    "rain": "rain",
    "snow": "snow",
    "wind": "wind",
    "humidity": "humidity",
    "air": "air",
}
# Longest unknown word tried as a place (by typo repair or as a place to ask about); longer is content.
_MAX_PLACE_ATTEMPT_CHARS = 6
_ASK_FOR_PLACE = "请问您想查询哪个城市的天气？"


class QueryParser:
    """Reads with the rules' Reader and decides. Thread-safe after construction."""

    def __init__(self, reader: Reader, horizon: Horizon, provider_label: str) -> None:
        self.reader = reader
        self.horizon = horizon  #: the configured provider's, so a date it cannot answer is a clarify here
        self.provider_label = provider_label

    def parse(
        self,
        text: str,
        today: dt.date,
        context: Decision | None = None,
        recent_places: list[Place] | None = None,
        found_places: Mapping[str, PlaceMatch] | None = None,
    ) -> Decision:
        """Decide TEXT. CONTEXT is the last rule decision of a conversation and RECENT_PLACES the places it
        asked about, newest last, for follow-ups (那上海呢？ 后天呢？ 这两个城市哪个更热？). FOUND_PLACES are
        words the gazetteer lacks that a geocoder has since found (周庄)."""
        clean = normalize(text)
        if not clean:
            return clarify("empty query", _ASK_FOR_PLACE)
        marker = self.reader.lexicon.open_ended(clean)
        if marker:
            return to_llm(f"open-ended ({marker[0]}): {marker[1]}")

        spans = find_dates(clean, today)
        for span in spans:
            if not span.dates:
                return clarify(f"invalid date: {span.text}", f"“{span.text}”不是有效的日期，请换一种说法。")
        dates = sorted({d for span in spans for d in span.dates})
        tokens = self.reader.tokens(clean, spans)
        reading = self.reader.read(tokens)
        if len(reading.unknown) > 1:
            return to_llm("unrecognised: " + " ".join(text for _, _, text in reading.unknown))
        if reading.unknown:
            decided = self._place_attempt(reading, tokens, found_places or {})
            if decided is not None:
                return decided
        borrowed = ""
        if context is not None and context.route == "rule":
            dates, borrowed = borrow_context(
                reading, dates, context, recent_places or list(context.places), follow_up="呢" in clean
            )
        decision = self._decide(reading, dates, today)
        if borrowed and decision.route == "rule":
            decision = dataclasses.replace(decision, reason=f"{decision.reason}; from context: {borrowed}")
        return decision

    def _place_attempt(self, reading: Reading, tokens: Tokens, found: Mapping[str, PlaceMatch]) -> Decision | None:
        """Handle the one unknown run: a typo of a place, a place found elsewhere, one we lack, or content.

        Returns the decision when the run decides it, or None once the run has become a place.
        """
        first, last, word = reading.unknown[0]
        before = tokens[first - 1] if first > 0 else None
        next_to_conjunction = (first - 1) in reading.conjunction_at or (last + 1) in reading.conjunction_at
        if reading.places and not next_to_conjunction:
            return to_llm(f"unrecognised: {word}")
        aspect_words = self.reader.lexicon.aspect_of
        first_aspect = next((i for i, t in enumerate(tokens) if t is not None and t in aspect_words), None)
        in_place_slot = (
            first == 0
            or before is None
            or next_to_conjunction
            or (first - 1) in reading.leader_at
            or first_aspect is None
            or first < first_aspect
        )
        # Only inside a weather question: outside one, a sound-alike is more likely another word.
        if not (in_place_slot and reading.aspects and len(word) >= 2):
            return to_llm(f"unrecognised: {word}")
        match = found.get(word)
        if match is None and not word.isascii() and len(word) <= _MAX_PLACE_ATTEMPT_CHARS:
            repaired = self.reader.gazetteer.repair(word)
            match = PlaceMatch((repaired,), "pinyin") if repaired is not None else None
        if match is None:
            return clarify(
                f"unknown place: {word}",
                f"没有找到“{word}”这个地点，请换个说法，例如“上海”“北京朝阳区”或“东京”。",
                unknown_place=word,
            )
        reading.unknown.clear()
        reading.places.append((first, word, match))
        reading.places.sort(key=lambda item: item[0])
        return None

    def _decide(self, reading: Reading, dates: list[dt.date], today: dt.date) -> Decision:
        for _, word, match in reading.places:
            if match.ambiguous:
                options = "、".join(p.display for p in match.candidates)
                return clarify(f"ambiguous place: {word}", f"“{word}”可以指{options}，您想查哪一个？")
        places = list(dict.fromkeys(match.candidates[0] for _, _, match in reading.places))
        if not places:
            if reading.aspects or dates:
                return clarify("no place given", _ASK_FOR_PLACE)
            return to_llm("no weather question recognised")
        if len(places) > MAX_PLACES:
            return clarify(f"too many places: {len(places)}", f"一次最多查询{MAX_PLACES}个地点，请分开提问。")
        aspects = set(reading.aspects) or {"weather"}
        aspect: Aspect
        if len(aspects) == 1:
            aspect = next(iter(aspects))
        elif aspects <= _GENERAL_ASPECTS:
            aspect = "weather"  # the general answer carries every one of these facts
        else:
            return to_llm("several aspects including air quality: " + ",".join(sorted(aspects)))
        dates = dates or [today]
        outside = self.horizon.first_outside(dates, today, air=aspect == "air")
        if outside is not None:
            return clarify(
                f"beyond the forecast horizon: {outside.isoformat()}",
                self.horizon.explain(outside, self.provider_label, air=aspect == "air"),
            )
        compare: Comparison | None = None
        if reading.trend and not reading.compare and len(places) == 1 and len(dates) == 1 and dates[0] > today:
            # 明天会降温吗: a change from today, answered by comparing the two days.
            dates = [today, dates[0]]
            compare = "cold" if reading.trend == "cold" else "hot"
        elif reading.compare:
            if len(places) < 2 and len(dates) < 2:
                return to_llm("comparison with nothing to compare")
            compare = _comparison(aspect, reading)
            if compare is None:
                return to_llm("comparison without a measurable quantity")
        how = f"; compare {compare}" if compare else ""
        vias = sorted({match.via for _, _, match in reading.places} - {"name"})
        via = f" via {','.join(vias)}" if vias else ""
        reason = f"rule: {len(places)} place(s){via}, {len(dates)} day(s), {aspect}{how}"
        return Decision("rule", [p.name for p in places], dates, aspect, reason, places=places, compare=compare)


def _comparison(aspect: Aspect, reading: Reading) -> Comparison | None:
    if reading.cold:
        return "cold"
    if reading.hot or aspect == "temperature":
        return "hot"
    return _COMPARABLE.get(aspect)

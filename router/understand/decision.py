"""The Decision: what the router makes of one question, before any I/O."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from hybrid_weather.rules import Aspect, Place, Threshold

#: rule: answered from the weather tools; clarify: answered with a question or a "not found"; llm: the model.
Route = Literal["rule", "clarify", "llm"]
#: What a comparison asks for: which place or day is hotter, colder, wetter, windier, ...; "spread" is
#: 温差: the day's range for one place, the difference between places for several.
Comparison = Literal["hot", "cold", "rain", "snow", "wind", "humidity", "air", "spread"]


@dataclass(slots=True)
class Decision:
    """What to do with a question. `reason` always says which rule decided, so a user can check it.

    Not frozen: `cities`, `dates` and `places` are lists (docs/contracts.md), which the caller may change, so
    freezing the fields would promise an immutability the lists do not keep. Each caller gets lists of its
    own instead: the parser's memo hands out a copy (with_own_lists), never the Decision it keeps."""

    route: Route
    cities: list[str]
    dates: list[dt.date]
    aspect: Aspect | None
    reason: str
    #: The places behind `cities`, for the weather tools.
    places: list[Place] = field(default_factory=list)
    #: Set when the question compares places or days (北京和上海明天哪个冷 → "cold").
    compare: Comparison | None = None
    #: For route "clarify": the question or notice to give the user.
    clarification: str | None = None
    #: The part of the day asked about, as local hours [start, end) (今晚 → (18, 24)); None: the whole day.
    hours: tuple[int, int] | None = None
    #: For route "llm": the words that sent it there (unknown words, or the open-ended marker), which
    #: `hybrid-weather misses` groups LLM answers by.
    unknown_words: tuple[str, ...] = ()
    #: For a clarify about a word in the place position that the gazetteer lacks (纳尼亚, 周庄): the word.
    #: A geocoder may still find it; the question is then read again with that place known.
    unknown_place: str | None = None
    #: For a yes-no question about a temperature (会超过30度吗, 零度以下吗): the side asked and the degrees, which
    #: the answer says yes or no to from the day's high or low.
    threshold: Threshold | None = None
    #: The rule that decided, as a short stable code beside the prose `reason` (lookup, no_place,
    #: open_ended:advice, correction, context, misheard, …: docs/reading.md lists them): what a program reads,
    #: so that nothing branches on the prose.
    reason_code: str = "lookup"
    #: For a clarify about a name several places hold (城关镇, 朝阳区): the name and those places, so that a reply
    #: naming where (甘肃那个, 榆中的) settles it (Session keeps it for the next question).
    ambiguous: tuple[str, tuple[Place, ...]] | None = None
    #: The recoveries tried where the reading alone did not decide (docs/reading.md), each with what came of it:
    #: "decided", or why it was set aside; empty where the reading decided by rules. `--explain` shows them.
    tried: tuple[tuple[str, str], ...] = ()
    #: For a clarify about `unknown_place` said after where it lies (杭州市青禾镇: 杭州市): that place. A
    #: geocoder's answer counts only inside it.
    unknown_within: Place | None = None

    @property
    def open_ended(self) -> bool:
        """Whether a word asking for judgement, advice, planning or anything but a lookup sent the question to
        the LLM (适合, 规划): the LLM was meant to answer it, so it is no miss of the rules."""
        return self.reason.startswith(OPEN_ENDED_REASON)

    @property
    def is_empty(self) -> bool:
        """Whether the question asked nothing at all ("", whitespace, only emoji)."""
        return self.reason == EMPTY_REASON

    def with_own_lists(self) -> Decision:
        """An equal Decision whose lists are its own: what the parser's memo hands out, so a caller that
        changes one changes nobody else's. tests/test_devset.py checks it keeps every field."""
        return self._made(list(self.cities), list(self.dates), list(self.places), self.reason, self.reason_code)

    def with_reason(self, reason: str, code: str | None = None) -> Decision:
        """This Decision with another REASON (a repair or a borrowed context said in it), and CODE when the rule
        that decided changes with it: what dataclasses.replace does, without its per-call introspection of the
        fields (a repair or a borrowed context makes one on the hot path). tests/test_devset.py checks it keeps
        every field."""
        return self._made(self.cities, self.dates, self.places, reason, code or self.reason_code)

    def _made(self, cities: list[str], dates: list[dt.date], places: list[Place], reason: str, code: str) -> Decision:
        """A Decision with these fields and every other of this one's, passed in order (the fast way)."""
        return Decision(
            self.route,
            cities,
            dates,
            self.aspect,
            reason,
            places,
            self.compare,
            self.clarification,
            self.hours,
            self.unknown_words,
            self.unknown_place,
            self.threshold,
            code,
            self.ambiguous,
            self.tried,
            self.unknown_within,
        )

    def with_tried(self, tried: tuple[tuple[str, str], ...]) -> Decision:
        """This Decision with the recoveries TRIED before it was made (see `tried`)."""
        made = self.with_reason(self.reason)
        made.tried = tried
        return made

    def to_json(self, query: str) -> dict[str, Any]:
        """The `route --json` object (docs/contracts.md): exactly these keys."""
        return {
            "query": query,
            "route": self.route,
            "cities": list(self.cities),
            "dates": [d.isoformat() for d in self.dates],
            "aspect": self.aspect,
            "reason": self.reason,
            "reason_code": self.reason_code,
        }


#: A reason is clauses joined by "; ", each a label of the router's own, then ": " and what it is about, which may
#: quote the question (`rule: 1 place(s), 1 day(s), weather; asked: 北京明天天气; context: 我在苏州上班`).
REASON_CLAUSES, REASON_DETAIL = "; ", ": "
#: Labels whose detail is the router's own summary, not the question's words (counts, aspect, how places matched).
_SUMMARY_LABELS = frozenset({"rule"})
#: Labels whose detail is another clause, with its own label (`clarify: invalid date: 13月`).
_NESTED_LABELS = frozenset({"clarify", "shadow of"})


def reason_labels(reason: str) -> str:
    """REASON with only the router's own words: each clause's label, without what it quotes of the question
    (`rule: 1 place(s), 1 day(s), weather; asked; context`). What a ledger that keeps no words of the
    question (HYBRID_WEATHER_LEDGER_QUERIES=hash) stores of it."""
    return REASON_CLAUSES.join(_label(clause) for clause in reason.split(REASON_CLAUSES))


def _label(clause: str) -> str:
    label, said, detail = clause.partition(REASON_DETAIL)
    if not said or label in _SUMMARY_LABELS:
        return clause
    return f"{label}{REASON_DETAIL}{_label(detail)}" if label in _NESTED_LABELS else label


#: How the reason of a question an open-ended word sent to the LLM begins.
OPEN_ENDED_REASON = "open-ended"
#: The reason of the decision for a question with nothing in it.
EMPTY_REASON = "clarify: empty query"


def clarify(
    reason: str, message: str, *, code: str, unknown_place: str | None = None, within: Place | None = None
) -> Decision:
    """A clarifying answer: REASON for the log, MESSAGE for the user, CODE the rule's; UNKNOWN_PLACE a name to
    geocode, inside WITHIN when the question said where it lies."""
    return Decision(
        "clarify",
        [],
        [],
        None,
        f"clarify: {reason}",
        [],
        None,
        message,
        None,
        (),
        unknown_place,
        reason_code=code,
        unknown_within=within,
    )


def to_llm(reason: str, words: tuple[str, ...] | list[str] = (), *, code: str) -> Decision:
    """The question needs the LLM; REASON says which rule sent it there (CODE, its code), WORDS which words did."""
    return Decision("llm", [], [], None, reason, [], unknown_words=tuple(words), reason_code=code)


def open_ended(kind: str, why: str, words: tuple[str, ...] | list[str] = ()) -> Decision:
    """The question asks for more than a lookup (KIND: advice, planning, …); WHY says what, WORDS which words."""
    return to_llm(f"{OPEN_ENDED_REASON} ({kind}): {why}", words, code=f"open_ended:{kind}")

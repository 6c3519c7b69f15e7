"""Where the question stands in a message that says more: the asking clause and its context.

Real messages wrap one question in context: thanks (好的收到), who and why (我在苏州上班, 孩子明天春游), travel
facts (下周三飞成都), order and room numbers. The parser reads a whole message first; when words it does not
know stop it, it reads each end of the message that starts at a clause boundary as the question on its
own, and what comes before is context (docs/reading.md says when context is inert and when it sends the
message to the LLM).
"""

from __future__ import annotations

from typing import NamedTuple

from hybrid_weather.rules import DateSpan, Reading, Tokens


class PlaceSpan(NamedTuple):
    """Where a place's name stands in a question."""

    start: int
    end: int


#: Most clause boundaries of a message whose question is looked for among context: each is one more parse
#: of a message the LLM would take otherwise, and more is a text, not a message.
MAX_CLAUSES = 8


def token_starts(clean: str, tokens: Tokens, spans: list[DateSpan]) -> list[int]:
    """Where each token of CLEAN starts (a date span's None at the span's start)."""
    starts: list[int] = []
    position = 0
    dates = iter(spans)
    for token in tokens:
        if token is None:
            span = next(dates)
            starts.append(span.start)
            position = span.end
            continue
        found = clean.find(token, position)
        starts.append(found if found >= 0 else position)
        position = (found if found >= 0 else position) + len(token)
    return starts


def place_spans(clean: str, tokens: Tokens, spans: list[DateSpan], reading: Reading) -> list[PlaceSpan]:
    """Where each place READING found stands in CLEAN."""
    starts = token_starts(clean, tokens, spans)
    return [PlaceSpan(starts[i], starts[i] + len(word)) for i, word, _ in reading.places if i >= 0]


def question_starts(clean: str) -> list[int]:
    """Where in CLEAN the question may start, the context before it, earliest first: at a clause boundary
    (where the normaliser left a space for punctuation). Never inside a clause: cut there, the question's
    first word may be the end of a longer one the router cannot read (腊|月初八, 上|周末, 12月第一个|周日), and a
    place may lose what its clause said of it (北京人在|上海). The question runs to the message's end: what
    follows a question adds to it (我打算跑马拉松, 要不要去迪士尼), so it is never context."""
    boundaries = [i + 1 for i, char in enumerate(clean) if char == " "]
    return boundaries if len(boundaries) < MAX_CLAUSES else []


def clauses(text: str) -> list[str]:
    """TEXT's clauses, as the normaliser left them (a space where punctuation stood)."""
    return [clause for clause in text.split(" ") if clause]

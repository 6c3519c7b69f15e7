"""Whether an overlay entry may be kept: the checks `teach` and `learn` make before writing one, and the router
makes of every version it reads (a file may be written by hand), so no entry changes the answer to a question
it was not meant for: a word that is already a place, a date or an aspect to the rules, a word that changes
what is asked, part of a word or place name the rules read, or an everyday word (开会: 今天开会吗 would become
a forecast)."""

from __future__ import annotations

from hybrid_weather.rules import find_dates, normalize, today_in_china
from hybrid_weather.rules.common_words import common_frequency

from .overlay import KINDS, MAX_WORD_CHARS, Overlay, OverlayEntry
from .parser import QueryParser


def overlay_problem(parser: QueryParser, overlay: Overlay) -> str | None:
    """Why OVERLAY must not be served, naming the line of its first entry that cannot be kept, or None."""
    for index, entry in enumerate(overlay.entries):
        if problem := entry_problem(parser, entry):
            return f"{overlay.where(index)}: `{entry.line()}`: {problem}"
    return None


def entry_problem(parser: QueryParser, entry: OverlayEntry) -> str | None:
    """Why ENTRY cannot be kept, or None: a word that changes what is asked, a target the rules cannot read."""
    if entry.kind not in KINDS:
        return f"{entry.kind!r} is not a kind of entry; use one of {', '.join(KINDS)}"
    word = entry.word
    if not word or any(ch.isspace() for ch in word) or len(word) > MAX_WORD_CHARS:
        return f"{word!r}: give one word without spaces, at most {MAX_WORD_CHARS} characters"
    if KINDS[entry.kind] and (not entry.target or any(ch.isspace() for ch in entry.target)):
        return f"`{entry.kind}` needs a target without spaces: teach {entry.kind} {word} TARGET"
    if entry.kind == "llm":
        return None  # any word may be sent to the LLM: it takes nothing from what is answered right
    if problem := intent_word(parser, word):
        return problem
    today = today_in_china()
    if entry.kind == "alias":
        decision = parser.parse(f"{entry.target}今天天气", today, None, None, None)
        if decision.route != "rule" or len(decision.cities) != 1:
            return f"the rules do not read {entry.target!r} as one place; give a place they know (上海, 深圳市南山区)"
    if entry.kind == "date":
        spans = find_dates(normalize(entry.target), today)
        if not spans or "".join(span.text for span in spans) != normalize(entry.target):
            return f"the rules do not read {entry.target!r} as a date; give one they know (明天, 后天, 周六)"
    if (count := common_frequency(normalize(word))) is not None:
        # After the target's checks: a target the rules cannot read is the first thing to fix.
        return (
            f"{word!r} is an everyday word (jieba's dictionary counts it {count:,} times): read away, it changes "
            "every question that uses it; teach a word only this installation uses"
        )
    return None


def intent_word(parser: QueryParser, word: str) -> str | None:
    """Why WORD must not be read away as a place, a date or nothing: it asks for judgement (an open-ended
    marker), changes what is asked (not, compare, going to), or already means something to the rules."""
    reader = parser.reader
    lexicon = reader.lexicon
    clean = normalize(word)
    if lexicon.open_ended(clean) is not None:
        return f"{word!r} asks for judgement or advice (an open-ended marker): such questions are the LLM's"
    changing = (
        lexicon.negations
        | lexicon.corrections
        | lexicon.compare
        | lexicon.comparatives
        | lexicon.going_or_being
        | lexicon.distance_links
        | lexicon.spread
        | frozenset(lexicon.trend)
    )
    held = sorted(w for w in changing if w in clean)
    if held:
        return f"{word!r} holds {held[0]!r}, a word that changes what is asked"
    # Read away inside a longer word, it would cut that word apart: 不 of 不会, 雨 of 下雨, 京 of 北京.
    cut = sorted(w for w in lexicon.words() if clean in w and w != clean)
    if cut:
        return f"{word!r} is part of {cut[0]!r}, a word the rules read: it would cut it apart"
    today = today_in_china()
    if find_dates(clean, today):
        return f"{word!r} is already a date to the rules"
    decision = parser.parse(f"{clean}今天天气", today, None, None, None)
    if decision.route == "rule" and decision.cities:
        return f"{word!r} is already a place to the rules ({decision.cities[0]})"
    cut = sorted(w for w in reader.gazetteer.words() if clean in w and w != clean)
    if cut:
        return f"{word!r} is part of the place name {cut[0]!r}: questions about that place would change"
    aspect = parser.parse(f"上海今天{clean}", today, None, None, None)
    if aspect.route == "rule" and aspect.aspect not in (None, "weather"):
        return f"{word!r} already asks about {aspect.aspect} to the rules"
    return None

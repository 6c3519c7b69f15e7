"""`hybrid-weather teach`: the operator's own words, each checked before it is kept, each change a new
overlay version that says what it changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.rules import find_dates, normalize, today_in_china

from ..settings import overlay_folder
from ..understand.overlay import KINDS, MAX_WORD_CHARS, Overlay, OverlayEntry, OverlayStore, entries_without
from .questions import decide, llm_questions

if TYPE_CHECKING:
    from ..facade import HybridRouter

#: The days of LLM questions a change is measured on.
MEASURED_DAYS = 30


@dataclass(frozen=True)
class TeachResult:
    """A change to the overlay: the version it made and what it changes of the last MEASURED_DAYS' traffic."""

    overlay: Overlay
    change: str  #: what was done, in words
    now_by_rules: int  #: distinct LLM questions of those days the rules now answer
    of_questions: int  #: distinct LLM questions of those days

    def summary(self) -> str:
        said = f"overlay v{self.overlay.version}: {self.change}"
        if self.of_questions:
            said += (
                f"; now answered by rules: {self.now_by_rules} of your last {MEASURED_DAYS} days' "
                f"{self.of_questions} LLM questions"
            )
        return said


def store_of(router: HybridRouter) -> OverlayStore:
    return OverlayStore(overlay_folder(router.settings))


def teach(router: HybridRouter, kind: str, word: str, target: str = "") -> TeachResult:
    """Add (or change) one entry: checked first, written as a new version, measured on the ledger."""
    entry = OverlayEntry(kind, word.strip(), target.strip())
    problem = entry_problem(router, entry)
    if problem:
        raise ConfigurationError(f"not taught: {problem}")
    store = store_of(router)
    current = store.active()
    kept = entries_without(current, {entry.word})
    change = f"{entry.describe()}" + (" (instead of before)" if current and len(kept) < len(current.entries) else "")
    return _written(router, store, [*kept, entry], f"teach {entry.line()}", change)


def teach_remove(router: HybridRouter, word: str) -> TeachResult:
    store = store_of(router)
    current = store.active()
    kept = entries_without(current, {word})
    if current is None or len(kept) == len(current.entries):
        raise ConfigurationError(f"{word!r} is not in the overlay; `hybrid-weather teach list` shows what is")
    return _written(router, store, kept, f"teach remove {word}", f"removed {word}")


def teach_use(router: HybridRouter, version: int) -> Overlay:
    """Go back (or forward) to VERSION; a running serve reads it at its next question."""
    store = store_of(router)
    store.use(version)
    return store.load(version)


def _written(
    router: HybridRouter, store: OverlayStore, entries: list[OverlayEntry], note: str, change: str
) -> TeachResult:
    overlay = store.write(entries, note)
    questions = llm_questions(router, MEASURED_DAYS)
    now = sum(1 for q in questions if decide(router, overlay, q.query, q.today).route == "rule")
    return TeachResult(overlay, change, now, len(questions))


def entry_problem(router: HybridRouter, entry: OverlayEntry) -> str | None:
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
    if problem := intent_word(router, word):
        return problem
    today = today_in_china()
    if entry.kind == "alias":
        decision = decide(router, None, f"{entry.target}今天天气", today)
        if decision.route != "rule" or len(decision.cities) != 1:
            return f"the rules do not read {entry.target!r} as one place; give a place they know (上海, 深圳市南山区)"
    if entry.kind == "date":
        spans = find_dates(normalize(entry.target), today)
        if not spans or "".join(span.text for span in spans) != normalize(entry.target):
            return f"the rules do not read {entry.target!r} as a date; give one they know (明天, 后天, 周六)"
    return None


def intent_word(router: HybridRouter, word: str) -> str | None:
    """Why WORD must not be read away as a place, a date or nothing: it asks for judgement (an open-ended
    marker), changes what is asked (not, compare, going to), or already means something to the rules."""
    lexicon = router.parts.parser.reader.lexicon
    clean = normalize(word)
    if lexicon.open_ended(clean) is not None:
        return f"{word!r} asks for judgement or advice (an open-ended marker): such questions are the LLM's"
    changing = (
        lexicon.negations | lexicon.corrections | lexicon.compare | lexicon.comparatives | lexicon.going_or_being
        | lexicon.distance_links | lexicon.spread | frozenset(lexicon.trend)
    )  # fmt: skip
    held = sorted(w for w in changing if w in clean)
    if held:
        return f"{word!r} holds {held[0]!r}, a word that changes what is asked"
    # Read away inside a longer word, it would cut that word apart: 不 of 不会, 雨 of 下雨.
    cut = sorted(w for w in lexicon.words() if clean in w and w != clean)
    if cut:
        return f"{word!r} is part of {cut[0]!r}, a word the rules read: it would cut it apart"
    today = today_in_china()
    if find_dates(clean, today):
        return f"{word!r} is already a date to the rules"
    decision = decide(router, None, f"{clean}今天天气", today)
    if decision.route == "rule" and decision.cities:
        return f"{word!r} is already a place to the rules ({decision.cities[0]})"
    aspect = decide(router, None, f"上海今天{clean}", today)
    if aspect.route == "rule" and aspect.aspect not in (None, "weather"):
        return f"{word!r} already asks about {aspect.aspect} to the rules"
    return None

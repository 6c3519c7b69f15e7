"""`hybrid-weather learn`: overlay entries proposed from the LLM's own answers, each held to every question of
the ledger it would change before it is accepted.

A question the LLM answered as a plain lookup (weather tools only, one place, one date) says what it
meant: the place and the date the tools were called with. For each word that sent such a question to the
LLM, learn tries the two readings an overlay can give it — the word says nothing (inert), or the word is the
place the model looked up (alias) — and keeps a reading under which the rules read exactly the model's
place and days. A proposal is accepted only when at least MIN_SUPPORT distinct questions support it, none
of the ledger's questions holding the word is read otherwise by it than the model read it, no LLM question
that was not a plain lookup would become a rule answer, and the word is no open-ended marker nor one that
changes what is asked (overlay_check.entry_problem).
"""

from __future__ import annotations

import contextlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..understand.overlay import Overlay, OverlayEntry, entries_without
from ..understand.overlay_check import entry_problem
from .questions import LlmQuestion, decide, llm_questions, reads_as_looked_up
from .teach import store_of, write_checked

if TYPE_CHECKING:
    from ..facade import HybridRouter

#: Distinct questions that must support a proposal.
MIN_SUPPORT = 2


@dataclass
class Proposal:
    """One overlay entry learn would add, with its evidence and, if rejected, why."""

    entry: OverlayEntry
    questions: int = 0  #: distinct supporting questions
    requests: int = 0  #: requests of those questions
    saved_usd: float = 0.0  #: what those requests cost the LLM
    rejected: str | None = None
    examples: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.rejected is None

    def line(self) -> str:
        """The proposal as `learn` lists it: accepted or not, the entry, its evidence, why it was rejected."""
        head = f"{'✓' if self.accepted else '✗'} {self.entry.describe()}"
        evidence = f"{self.questions} questions, {self.requests} requests, ${self.saved_usd:.4f}"
        return f"{head}: {evidence}" + (f" — rejected: {self.rejected}" if self.rejected else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.entry.kind,
            "word": self.entry.word,
            "target": self.entry.target or None,
            "questions": self.questions,
            "requests": self.requests,
            "saved_usd": round(self.saved_usd, 6),
            "accepted": self.accepted,
            "rejected": self.rejected,
            "examples": self.examples[:3],
        }


def learn(router: HybridRouter, days: int) -> list[Proposal]:
    """The proposals the last DAYS days of the ledger support, accepted ones first."""
    questions = llm_questions(router, days)
    with contextlib.closing(store_of(router)) as store:
        current = store.active()
    taught = {entry.word for entry in current.entries} if current else set()
    candidates: dict[OverlayEntry, Proposal] = {}
    proposed: set[str] = set()
    for question in questions:
        if not question.plain:
            continue
        for word in question.unknown_words:
            if word in taught or word in proposed or word not in question.query:
                continue
            for entry in (OverlayEntry("inert", word), OverlayEntry("alias", word, question.places[0])):
                if _supports(router, current, entry, question):
                    candidates[entry] = Proposal(entry)
                    proposed.add(word)  # the other questions holding it judge this reading (_judged)
                    break
    if not candidates:
        return []
    holding = _holding(questions, {entry.word for entry in candidates})
    proposals = [_judged(router, current, proposal, holding[proposal.entry.word]) for proposal in candidates.values()]
    _one_reading_a_word(proposals)
    return sorted(proposals, key=lambda p: (not p.accepted, -p.requests, p.entry.word))


@dataclass(frozen=True)
class Learned:
    """What `learn` found in DAYS days of the ledger and, asked to apply it (APPLY), the version it WROTE."""

    days: int
    proposals: list[Proposal]
    apply: bool
    written: Overlay | None

    def to_json(self) -> dict[str, Any]:
        """The `learn --json` object (docs/contracts.md)."""
        return {
            "days": self.days,
            "proposals": [p.to_json() for p in self.proposals],
            "applied": self.written.version if self.written else None,
        }

    def render(self) -> str:
        """The terminal view: one line a proposal, then what became of them."""
        if not self.proposals:
            return (
                f"Nothing to learn from the last {self.days} days: no plain lookup the LLM answered has a word to "
                "teach."
            )
        lines = [proposal.line() for proposal in self.proposals]
        if self.written:
            lines.append(f"overlay v{self.written.version} written and in use (learn --undo goes back)")
        elif self.apply:
            lines.append("nothing accepted: the overlay is unchanged")
        else:
            lines.append("learn --apply writes the accepted ones")
        return "\n".join(lines)


def apply_proposals(router: HybridRouter, proposals: list[Proposal]) -> Overlay | None:
    """The accepted PROPOSALS written as a new overlay version on top of the active one (None: none)."""
    accepted = [p.entry for p in proposals if p.accepted]
    if not accepted:
        return None
    with (
        contextlib.closing(store_of(router)) as store,
        store.writing(),
    ):  # as teach: the active version read and the next written by one writer at a time
        current = store.active()
        kept = entries_without(current, {entry.word for entry in accepted})
        note = f"learn --apply: {', '.join(e.describe() for e in accepted)}"
        return write_checked(router, store, current, [*kept, *accepted], note)


def _with(current: Overlay | None, entry: OverlayEntry) -> Overlay:
    return Overlay.of(current.version + 1 if current else 1, [*entries_without(current, {entry.word}), entry])


def _supports(router: HybridRouter, current: Overlay | None, entry: OverlayEntry, question: LlmQuestion) -> bool:
    return reads_as_looked_up(decide(router, _with(current, entry), question.query, question.today), question)


def _holding(questions: list[LlmQuestion], words: set[str]) -> dict[str, list[LlmQuestion]]:
    """The questions holding each of WORDS (one scan of each question for all of them)."""
    pattern = re.compile("|".join(map(re.escape, sorted(words, key=len, reverse=True))))
    holding: dict[str, list[LlmQuestion]] = defaultdict(list)
    for question in questions:
        for word in set(pattern.findall(question.query)) | (words & set(question.unknown_words)):
            holding[word].append(question)
    return holding


def _judged(router: HybridRouter, current: Overlay | None, proposal: Proposal, holding: list[LlmQuestion]) -> Proposal:
    """PROPOSAL held to every question holding its word: supported, contradicted, or overreaching."""
    entry = proposal.entry
    if problem := entry_problem(router.parts.parser, entry):
        proposal.rejected = problem
        return proposal
    overlay = _with(current, entry)
    contradicted, overreaching = [], []
    for question in holding:
        decision = decide(router, overlay, question.query, question.today)
        if decision.route != "rule":
            continue
        if not question.plain:
            overreaching.append(question.query)
        elif reads_as_looked_up(decision, question):
            proposal.questions += 1
            proposal.requests += question.requests
            proposal.saved_usd += question.cost_usd
            proposal.examples.append(question.query)
        else:
            contradicted.append(question.query)
    if overreaching:
        proposal.rejected = (
            f"{len(overreaching)} LLM question(s) that were not plain lookups would be answered by rules "
            f"(e.g. {overreaching[0]})"
        )
    elif contradicted:
        proposal.rejected = (
            f"{len(contradicted)} question(s) would be read otherwise than the model read them (e.g. {contradicted[0]})"
        )
    elif proposal.questions < MIN_SUPPORT:
        proposal.rejected = f"{proposal.questions} question supports it; at least {MIN_SUPPORT} must"
    return proposal


def _one_reading_a_word(proposals: list[Proposal]) -> None:
    """A word with two accepted readings (inert here, an alias there) has neither: the evidence disagrees."""
    by_word: dict[str, list[Proposal]] = defaultdict(list)
    for proposal in proposals:
        if proposal.accepted:
            by_word[proposal.entry.word].append(proposal)
    for same in by_word.values():
        if len(same) > 1:
            for proposal in same:
                proposal.rejected = f"the ledger supports more than one reading of {proposal.entry.word!r}"

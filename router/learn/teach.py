"""`hybrid-weather teach`: the operator's own words, each checked before it is kept, each change a new
overlay version that says what it changes."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hybrid_weather.agent.errors import ConfigurationError

from ..understand.overlay import Overlay, OverlayEntry, OverlayStore, entries_without
from ..understand.overlay_check import entry_problem, overlay_problem
from .questions import decide, llm_questions

if TYPE_CHECKING:
    from ..facade import HybridRouter
    from ..understand.overlay_postgres import PostgresOverlayStore

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


def store_of(router: HybridRouter) -> OverlayStore | PostgresOverlayStore:
    """A store of ROUTER's overlay for one change or listing: the fleet's in a PostgreSQL ledger, else files."""
    return router.parts.overlay_store()


def teach(router: HybridRouter, kind: str, word: str, target: str = "") -> TeachResult:
    """Add (or change) one entry: checked first, written as a new version, measured on the ledger."""
    entry = OverlayEntry(kind, word.strip(), target.strip())
    problem = entry_problem(router.parts.parser, entry)
    if problem:
        raise ConfigurationError(f"not taught: {problem}")
    with (
        contextlib.closing(store_of(router)) as store,
        store.writing(),
    ):  # the active version read and the next written by one writer at a time
        current = store.active()
        kept = entries_without(current, {entry.word})
        instead = current is not None and len(kept) < len(current.entries)
        overlay = write_checked(router, store, current, [*kept, entry], f"teach {entry.line()}")
    return _measured(router, overlay, entry.describe() + (" (instead of before)" if instead else ""))


def teach_remove(router: HybridRouter, word: str) -> TeachResult:
    with contextlib.closing(store_of(router)) as store, store.writing():
        current = store.active()
        kept = entries_without(current, {word})
        if current is None or len(kept) == len(current.entries):
            raise ConfigurationError(f"{word!r} is not in the overlay; `hybrid-weather teach list` shows what is")
        overlay = write_checked(router, store, current, kept, f"teach remove {word}")
    return _measured(router, overlay, f"removed {word}")


def teach_use(router: HybridRouter, version: int) -> Overlay:
    """Go back (or forward) to VERSION; a running serve reads it at its next question. A version that fails
    the checks a router makes when it reads one is refused, as the router would refuse it."""
    with contextlib.closing(store_of(router)) as store, store.writing():
        overlay = store.load(version)
        if problem := overlay_problem(router.parts.parser, overlay):
            raise ConfigurationError(f"overlay v{version} not used: {problem}")
        store.use(version)
    return overlay


def step_back(router: HybridRouter) -> Overlay:
    """Go back to the version before the active one (`learn --undo`); the version stepped back from, which is
    kept (teach use goes forward to it again)."""
    with contextlib.closing(store_of(router)) as store:
        active = store.active()
    if active is None or active.parent is None:
        raise ConfigurationError("there is no earlier overlay version to go back to")
    teach_use(router, active.parent)
    return active


def write_checked(
    router: HybridRouter,
    store: OverlayStore | PostgresOverlayStore,
    current: Overlay | None,
    entries: list[OverlayEntry],
    note: str,
) -> Overlay:
    """ENTRIES written as the next version after CURRENT (under store.writing()) when each one CURRENT gave may
    still be kept: a hand may have written it, and the router would refuse the whole version for it."""
    parser, given = router.parts.parser, set(entries)
    if current is not None:
        for index, entry in enumerate(current.entries):
            if entry in given and (problem := entry_problem(parser, entry)):
                raise ConfigurationError(
                    f"not written: {current.where(index)}: `{entry.line()}`: {problem} "
                    f"(hybrid-weather teach remove {entry.word})"
                )
    return store.write(entries, note)


def _measured(router: HybridRouter, overlay: Overlay, change: str) -> TeachResult:
    questions = llm_questions(router, MEASURED_DAYS)
    now = sum(1 for q in questions if decide(router, overlay, q.query, q.today).route == "rule")
    return TeachResult(overlay, change, now, len(questions))

"""A conversation: what the last answer was about, and the turns the LLM sees."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from hybrid_weather.rules import Place, mask_personal_data

from .understand import Decision

_RECENT_PLACES = 5

#: Rough token budget for history sent to the LLM. Chinese text runs about one token per character,
#: so characters are a fair, dependency-free estimate.
DEFAULT_HISTORY_TOKENS = 1_500


@dataclass
class Session:
    """Pass the same Session to ask()/route() for follow-ups: 那上海呢？ 后天呢？ 这两个城市哪个更热？"""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    history_tokens: int = DEFAULT_HISTORY_TOKENS
    last: Decision | None = None  #: the last rule decision, the context follow-ups borrow from
    #: The question just answered with "which one?" (a name several places hold), and that clarify: the next
    #: question may name where, and settle it (甘肃那个). Only the question right before counts.
    asked_which: tuple[str, Decision] | None = None
    recent_places: list[Place] = field(default_factory=list)  #: distinct places asked about, newest last
    turns: list[tuple[str, str]] = field(default_factory=list)  #: (question, answer) pairs, oldest first
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def remember(self, question: str, answer: str, decision: Decision) -> None:
        with self._lock:
            self.asked_which = (question, decision) if decision.ambiguous is not None else None
            if decision.route == "rule":
                self.last = decision
                for place in decision.places:
                    if place in self.recent_places:
                        self.recent_places.remove(place)
                    self.recent_places.append(place)
                del self.recent_places[:-_RECENT_PLACES]
            self.turns.append((question, answer))
            # Drop the oldest turns past the budget; the newest turn always stays.
            while len(self.turns) > 1 and sum(len(q) + len(a) for q, a in self.turns) > self.history_tokens:
                self.turns.pop(0)

    def llm_history(self, *, masked: bool = True) -> list[dict[str, Any]]:
        """The recent turns as chat messages; MASKED: personal data in the questions masked."""
        with self._lock:
            messages: list[dict[str, Any]] = []
            for question, answer in self.turns:
                messages.append({"role": "user", "content": mask_personal_data(question) if masked else question})
                messages.append({"role": "assistant", "content": answer})
            return messages

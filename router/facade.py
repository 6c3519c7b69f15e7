"""HybridRouter: the one long-lived object a program keeps, a thin facade over named parts.

    text ─▶ parser (rules' Reader → Decision) ─▶ rule answers (weather service) ─┐
                                              └▶ LLM agent (tools → weather)  ───┴▶ Answer ─▶ recorder (ledger)

The parts live in `Parts` (router/parts.py), each built on first use, once, whichever thread gets there
first; this class only wires a request through them.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import HybridWeatherError, WeatherUnavailable
from hybrid_weather.agent.llm.models import ModelTable
from hybrid_weather.agent.weather import WeatherService
from hybrid_weather.rules import PlaceMatch, normalize, today_in_china

from ._lazy import built
from .answer import DEGRADED_NOTE, Answer, elapsed_ms, llm_answer
from .parts import DEFAULT_DEADLINE, Parts
from .session import Session
from .settings import Settings, check_provider
from .understand import Decision

if TYPE_CHECKING:  # the LLM loop and the ledger (sqlite3) load when first used
    from hybrid_weather.agent.llm import LLMAgent

    from .ledger import Ledger


class HybridRouter:
    """Routes questions and answers the simple ones. Thread-safe; build one and share it.

    Keyword arguments left as None come from the environment (docs/contracts.md), read on first use,
    never at import.
    """

    def __init__(
        self,
        *,
        provider: str | None = None,
        ledger: str | None = None,
        cache_ttl: float | None = None,
        deadline: float = DEFAULT_DEADLINE,
        settings: Settings | None = None,
        http_options: dict[str, Any] | None = None,
        llm_options: dict[str, Any] | None = None,
        shadow_rate: float = 0.0,
    ) -> None:
        if provider is not None:
            check_provider(provider)
        if not 0.0 <= shadow_rate <= 1.0:
            raise ValueError("shadow_rate is a fraction from 0 to 1")
        self.deadline = deadline
        self.parts = Parts(
            settings=settings,
            provider=provider,
            ledger=ledger,
            cache_ttl=cache_ttl,
            deadline=deadline,
            shadow_rate=shadow_rate,
            http_options=http_options or {},
            llm_options=llm_options or {},
        )

    # -- the parts a caller may reach (built on first use) ------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.parts.settings

    @property
    def weather(self) -> WeatherService:
        return self.parts.weather

    @property
    def models(self) -> ModelTable:
        return self.parts.models

    @property
    def ledger(self) -> Ledger | None:
        """The request ledger, or None when it is off."""
        return self.parts.ledger

    @property
    def agent(self) -> LLMAgent:
        """The LLM loop; raises LLMUnavailable when no API key is configured."""
        return self.parts.agent

    def close(self) -> None:
        """Finish shadow runs, flush the ledger and close the HTTP clients."""
        self.parts.close()

    def __enter__(self) -> HybridRouter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- routing and answering ---------------------------------------------------------------------

    def route(self, text: str, *, today: dt.date | None = None, session: Session | None = None) -> Decision:
        """Decide what to do with TEXT: no I/O, never raises for any str. A SESSION supplies follow-up context."""
        return self._route(text, today or today_in_china(), session)

    def ask(
        self, text: str, *, today: dt.date | None = None, session: Session | None = None, emoji: bool = True
    ) -> Answer:
        """Answer TEXT. Raises WeatherUnavailable (no data, not even stale) or LLMUnavailable."""
        arrived, started, today = time.time(), time.perf_counter(), today or today_in_china()
        decision = self._route(text, today, session)
        try:
            deadline = time.monotonic() + self.deadline
            decision = self._locate(text, decision, today, session, deadline)
            if decision.route == "llm":
                answer = self._ask_llm(text, decision, today, session, started)
            else:
                answer, fetched = self.parts.rule_answers.answer(
                    decision, today, emoji=emoji, started=started, deadline=deadline
                )
                self._shadow(text, decision, fetched, today)
        except HybridWeatherError as error:
            self._record_failure(text, decision, error, arrived, started, session)
            raise
        self._finish(text, answer, arrived, session)
        return answer

    async def aask(
        self, text: str, *, today: dt.date | None = None, session: Session | None = None, emoji: bool = True
    ) -> Answer:
        """ask() for asyncio programs: places are fetched concurrently, the event loop never blocks."""
        import asyncio

        arrived, started, today = time.time(), time.perf_counter(), today or today_in_china()
        decision = self._route(text, today, session)
        loop = asyncio.get_running_loop()
        try:
            deadline = time.monotonic() + self.deadline
            if decision.unknown_place is not None:
                decision = await loop.run_in_executor(None, self._locate, text, decision, today, session, deadline)
            if decision.route == "llm":
                # The loop is sequential network I/O with its own deadline; a worker thread runs it.
                answer = await loop.run_in_executor(None, self._ask_llm, text, decision, today, session, started)
            else:
                answer, fetched = await self.parts.rule_answers.aanswer(
                    decision, today, emoji=emoji, started=started, deadline=deadline
                )
                self._shadow(text, decision, fetched, today)
        except HybridWeatherError as error:
            self._record_failure(text, decision, error, arrived, started, session)
            raise
        self._finish(text, answer, arrived, session)
        return answer

    def weather_part(self, text: str, *, today: dt.date | None = None, emoji: bool = True) -> Answer | None:
        """The plain weather part of an LLM question answered by the rules, or None when it has none.

        For a degraded answer when no LLM is available: 北京明天适合出游吗 → 北京明天的天气.
        """
        today = today or today_in_china()
        decision = self._route(self.parts.parser.reader.lexicon.strip_open_ended(normalize(text)), today, None)
        if decision.route != "rule":
            return None
        try:
            answer, _ = self.parts.rule_answers.answer(
                decision, today, emoji=emoji, started=time.perf_counter(), deadline=time.monotonic() + self.deadline
            )
        except HybridWeatherError:
            return None
        answer.text = DEGRADED_NOTE + answer.text
        return answer

    def _route(
        self, text: str, today: dt.date, session: Session | None, found: dict[str, PlaceMatch] | None = None
    ) -> Decision:
        context = session.last if isinstance(session, Session) else None
        recent = list(session.recent_places) if isinstance(session, Session) else None
        return self.parts.parser.parse(text if isinstance(text, str) else str(text), today, context, recent, found)

    def _locate(
        self, text: str, decision: Decision, today: dt.date, session: Session | None, deadline: float
    ) -> Decision:
        """For a place the gazetteer lacks, ask the provider's geocoder and, if it finds one, read again."""
        word = decision.unknown_place
        if word is None:
            return decision
        try:
            found = self.weather.geocode(word, deadline)
        except WeatherUnavailable:
            return decision  # the clarify stands; the forecast fetch would fail the same way
        if found is None:
            return decision
        match = PlaceMatch((found,), f"geocoding ({self.weather.provider.name})")
        located = self._route(text, today, session, {word: match})
        return located if located.route == "rule" else decision

    def _ask_llm(
        self, text: str, decision: Decision, today: dt.date, session: Session | None, started: float
    ) -> Answer:
        agent = self.agent
        result = agent.run(text, history=session.llm_history() if session else None, today=today)
        return llm_answer(
            decision,
            result,
            model=agent.model,
            cost_usd=self.models.cost(agent.model, result.usage),
            provider=self.weather.provider,
            started=started,
        )

    def _shadow(self, text: str, decision: Decision, fetched: list[Any], today: dt.date) -> None:
        if self.parts.shadow_rate > 0 and self.parts.shadow is not None:
            self.parts.shadow.maybe_run(text, decision, fetched, today)

    def _finish(self, text: str, answer: Answer, arrived: float, session: Session | None) -> None:
        if session is not None:
            session.remember(text, answer.text, answer.decision)
        if self.parts.recorder is not None:
            self.parts.recorder.answered(text, answer, arrived=arrived, session_id=session.id if session else None)

    def _record_failure(
        self, text: str, decision: Decision, error: Exception, arrived: float, started: float, session: Session | None
    ) -> None:
        if self.parts.recorder is None:
            return
        agent = built(self.parts, "agent")
        self.parts.recorder.failed(
            text,
            decision,
            error,
            arrived=arrived,
            latency_ms=elapsed_ms(started),
            provider=self.weather.provider.name if decision.route == "rule" else None,
            model=agent.model if agent is not None and decision.route == "llm" else None,
            session_id=session.id if session is not None else None,
        )

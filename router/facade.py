"""HybridRouter: the one long-lived object a program keeps, a thin facade over named parts.

    text ─▶ parser (rules' Reader → Decision) ─▶ rule answers (weather service) ─┐
                                              └▶ LLM agent (tools → weather)  ───┴▶ Answer ─▶ recorder (ledger)

The parts live in `Parts` (router/parts.py), each built on first use, once, whichever thread gets there
first; this class only wires a request through them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import (
    CircuitOpen,
    ConfigurationError,
    HybridWeatherError,
    InvalidQuestion,
    LLMUnavailable,
    RequestNotFound,
    UpstreamConnectError,
    UpstreamTimeout,
    WeatherUnavailable,
)
from hybrid_weather.agent.llm.models import ModelTable, sampling_problem
from hybrid_weather.agent.weather import Enclosure, WeatherService
from hybrid_weather.agent.weather.service import shielded
from hybrid_weather.rules import (
    MAX_QUESTION_CHARS,
    WEATHER_ADVICE,
    Place,
    PlaceMatch,
    contains_personal_data,
    mask_personal_data,
    normalize,
    today_in_china,
)

from ._lazy import built
from .answer import DEGRADED_NOTE, Answer, TextPiece, elapsed_ms, llm_answer
from .outgoing import mask_logs
from .parts import DEFAULT_DEADLINE, Parts
from .session import Session
from .settings import Settings, check_provider
from .understand import Decision
from .understand.overlay import read_through

if TYPE_CHECKING:  # the LLM loop and the ledger (sqlite3) load when first used
    from hybrid_weather.agent.llm import LLMAgent

    from .ledger import Ledger, SpoolLedger


logger = logging.getLogger("hybrid_weather")


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
        disk_cache: bool = False,
        cache_url: str | None = None,
        ledger_queue: int | None = None,
        tools: Sequence[Any] = (),
    ) -> None:
        if provider is not None:
            check_provider(provider)
        if not 0.0 <= shadow_rate <= 1.0:
            raise ValueError("shadow_rate is a fraction from 0 to 1")
        self.deadline = deadline
        mask_logs(logger)  # the library's log lines may quote a request: masked before any handler sees them
        self.parts = Parts(
            settings=settings,
            provider=provider,
            ledger=ledger,
            cache_ttl=cache_ttl,
            deadline=deadline,
            shadow_rate=shadow_rate,
            http_options=http_options or {},
            llm_options=llm_options or {},
            disk_cache=disk_cache,
            cache_url=cache_url,
            ledger_queue=ledger_queue,
            tools=_checked_tools(tools),
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
    def ledger(self) -> Ledger | SpoolLedger | None:
        """The request ledger, or None when it is off."""
        return self.parts.ledger

    @property
    def ledger_problem(self) -> str | None:
        """What went wrong with the ledger in this router's life (None: nothing, or no ledger)."""
        ledger = built(self.parts, "ledger")
        return ledger.problem if ledger is not None else None

    @property
    def cache_problem(self) -> str | None:
        """The first time the shared forecast cache could not be used in this router's life (None: never,
        or no shared cache)."""
        weather = built(self.parts, "weather")
        shared = weather.shared if weather is not None else None
        return shared.problem if shared is not None else None

    @property
    def agent(self) -> LLMAgent:
        """The LLM loop; raises LLMUnavailable when no API key is configured."""
        return self.parts.agent

    def connect_llm(self) -> bool:
        """Build the configured model's client now, its `openai` import included, so that the first LLM
        answer's time is the answer's, not an import's (`serve` at start, the CLI before an LLM question).
        False, and nothing built, when no LLM is configured (no key): a rule-only service never pays it."""
        try:
            agent = self.parts.agent
        except (LLMUnavailable, ConfigurationError):
            return False
        agent.connect()
        return True

    def close(self) -> None:
        """Finish shadow runs, flush the ledger and close the HTTP clients."""
        self.parts.close()

    def __enter__(self) -> HybridRouter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- routing and answering ---------------------------------------------------------------------

    def route(self, text: str, *, today: dt.date | None = None, session: Session | None = None) -> Decision:
        """Decide what to do with TEXT: no network (only a look for a new overlay version, at most once a
        second), never raises for any str. A SESSION supplies follow-up context."""
        return self._route(text, today or today_in_china(), session)

    def ask(
        self,
        text: str,
        *,
        today: dt.date | None = None,
        session: Session | None = None,
        emoji: bool = True,
        model: str | None = None,
        sampling: dict[str, Any] | None = None,
        on_text: Callable[[TextPiece], object] | None = None,
        caller: str | None = None,
    ) -> Answer:
        """Answer TEXT. Raises WeatherUnavailable (no data, not even stale), LLMUnavailable, or InvalidQuestion
        (TEXT longer than rules.MAX_QUESTION_CHARS: nothing asked, nothing recorded). MODEL: a model of the
        price table to answer with if TEXT needs one, instead of the configured one (ConfigurationError for
        a name the table lacks); SAMPLING, its temperature and max_tokens for this request; CALLER, whose
        request it is, kept on its ledger row (`serve` names the key: feedback and reports show a key its own).

        ON_TEXT receives the answer's text as it is produced, in TextPieces that join to Answer.text: an
        LLM answer's as the model streams it (on the thread that runs the model), a rule answer's whole.
        Once a piece has gone out, a model that fails is not retried or replaced (it would say it twice).
        An exception ON_TEXT raises ends its pieces, not the answer: the answer is recorded, then ask()
        raises that exception."""
        request = self._begin(text, today, session, model, sampling, on_text, caller)
        with self._recorded(request):
            request.decision = self._locate(request)
            if request.decision.route != "llm":
                answer, fetched = self.parts.rule_answers.answer(
                    request.decision, request.today, emoji=emoji, started=request.started, deadline=request.deadline
                )
                self._shadow(request, fetched)
        if request.decision.route == "llm":
            return self._answer_llm(request)
        return self._finish(request, answer)

    async def aask(
        self,
        text: str,
        *,
        today: dt.date | None = None,
        session: Session | None = None,
        emoji: bool = True,
        model: str | None = None,
        sampling: dict[str, Any] | None = None,
        on_text: Callable[[TextPiece], object] | None = None,
        caller: str | None = None,
    ) -> Answer:
        """ask() for asyncio programs: places are fetched concurrently, the event loop never blocks (ON_TEXT
        is called on the worker thread that runs the model: hand its pieces to the loop thread-safely)."""
        import asyncio

        request = self._begin(text, today, session, model, sampling, on_text, caller)
        loop = asyncio.get_running_loop()
        with self._recorded(request):
            if request.decision.unknown_place is not None:
                request.decision = await loop.run_in_executor(self.weather.io_pool, self._locate, request)
            if request.decision.route != "llm":
                answer, fetched = await self.parts.rule_answers.aanswer(
                    request.decision, request.today, emoji=emoji, started=request.started, deadline=request.deadline
                )
                self._shadow(request, fetched)
        if request.decision.route == "llm":
            # The loop is sequential network I/O with its own deadline: a worker thread runs it to the end and
            # records it there, shielded, so a caller that stops waiting does not lose the tokens it spent.
            return await shielded(loop.run_in_executor(self.weather.io_pool, self._answer_llm, request))
        return self._finish(request, answer)

    def feedback(self, request_id: str, verdict: str, comment: str | None = None, *, caller: str | None = None) -> bool:
        """Keep a user's VERDICT ("wrong" or "right", and an optional COMMENT) on the answer whose
        `request_id` is REQUEST_ID (its ledger row's id; a drop-in completion's id with or without its
        "chatcmpl-"), one of CALLER's when given (ask's `caller`). True when kept, False when its row is not
        stored yet but may be on its way (another process's queue, the spool): the verdict is applied when
        it lands, if within ledger.PENDING_FEEDBACK_S. InvalidQuestion for a verdict or an id that is not
        one, RequestNotFound (one) for an id the ledger does not hold (or not of CALLER's);
        ConfigurationError without a ledger; LedgerUnavailable when it cannot be reached."""
        from .ledger.store.feedback import REQUEST_ID, VERDICTS

        request_id = request_id.strip().removeprefix("chatcmpl-") if isinstance(request_id, str) else ""
        if verdict not in VERDICTS:
            raise InvalidQuestion(f"the verdict is {verdict!r}; give one of {', '.join(VERDICTS)}")
        if not REQUEST_ID.fullmatch(request_id):
            raise InvalidQuestion(
                f"{request_id[:40]!r} is not a request id; give the request_id an answer carried (22 hex digits)"
            )
        ledger = self.ledger
        if ledger is None:
            raise ConfigurationError("the ledger is off (HYBRID_WEATHER_LEDGER=off): there is no answer to mark")
        outcome = ledger.feedback(request_id, verdict, comment, caller)
        if outcome == "unknown":
            raise RequestNotFound(f"no answer with request id {request_id} is in the ledger at {ledger.location}")
        return outcome == "kept"

    def weather_part(self, text: str, *, today: dt.date | None = None, emoji: bool = True) -> Answer | None:
        """The plain weather part of an LLM question answered by the rules, or None when it has none.

        For a degraded answer when no LLM is available: 北京明天适合出游吗 → 北京明天的天气.
        """
        today = today or today_in_china()
        reader, clean = self.parts.parser.reader, normalize(text)
        weather_words = reader.lexicon.strip_open_ended(clean)
        if not reader.lexicon.open_ended_kinds(clean) <= WEATHER_ADVICE and not reader.names_weather(
            weather_words, today
        ):
            return None  # 北京到上海多远 names two places but asks nothing about their weather
        decision = self._route(weather_words, today, None)
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
        return self._read(text, today, session, found)[0]

    def _read(
        self, text: str, today: dt.date, session: Session | None, found: dict[str, PlaceMatch] | None = None
    ) -> tuple[Decision, int | None]:
        """The Decision on TEXT, read through the installation's overlay (teach, learn) where one of its words
        is in it; and the overlay version read through (None: this installation has none)."""
        text = text if isinstance(text, str) else str(text)
        context = session.last if isinstance(session, Session) else None
        recent = list(session.recent_places) if isinstance(session, Session) else None
        overlay = self.parts.overlays.choose(session.id if isinstance(session, Session) else text)
        parse = self.parts.parser.parse
        asked_which = session.asked_which if isinstance(session, Session) else None
        decision = read_through(overlay, text, lambda said: parse(said, today, context, recent, found, asked_which))
        return decision, None if overlay is None else overlay.version

    def known_model(self, model: str) -> bool:
        """Whether MODEL is one this router can answer with: the configured one or one of the price table."""
        return model == self.parts.model or (not self.models.problem and self.models.get(model) is not None)

    def _begin(
        self,
        text: str,
        today: dt.date | None,
        session: Session | None,
        model: str | None,
        sampling: dict[str, Any] | None = None,
        on_text: Callable[[TextPiece], object] | None = None,
        caller: str | None = None,
    ) -> _Request:
        # The deadline counts from the call, routing included: a first ask that loads the gazetteer still
        # ends when the caller was promised, not that long after it.
        arrived, started, deadline = time.time(), time.perf_counter(), time.monotonic() + self.deadline
        if isinstance(text, str) and len(text) > MAX_QUESTION_CHARS:
            # Refused as `serve` refuses it (422), before routing, the LLM or the ledger see any of it.
            raise InvalidQuestion(
                f"the question is {len(text):,} characters long; ask it in at most {MAX_QUESTION_CHARS:,} "
                "(a weather question needs a few dozen)"
            )
        if model is not None and not self.known_model(model):
            raise ConfigurationError(
                f"model {model!r} is not in the price table; name one of the shipped models.json or "
                "add it to $HYBRID_WEATHER_HOME/models.json"
            )
        for field, value in (sampling or {}).items():
            if field not in ("temperature", "max_tokens"):
                raise ConfigurationError(f"sampling: {field!r} is not a setting; give temperature or max_tokens")
            if problem := sampling_problem(field, value):
                raise ConfigurationError(f"sampling: {problem}")
        today = today or today_in_china()
        decision, overlay = self._read(text, today, session)
        routed_s = time.perf_counter() - started
        # The id is made now, not when the row is written: a streamed answer names it in its first piece.
        recorder = self.parts.recorder
        request_id = recorder.new_id(arrived) if recorder is not None else None
        return _Request(
            text,
            today,
            session,
            decision,
            arrived,
            started,
            deadline,
            model,
            sampling,
            overlay,
            routed_s,
            on_text,
            request_id,
            caller=caller,
        )

    def _locate(self, request: _Request) -> Decision:
        """For a place the gazetteer lacks, ask the provider's geocoder and, if it finds one, read again."""
        decision, word = request.decision, request.decision.unknown_place
        if word is None or contains_personal_data(word):
            return decision  # a phone number in the place's position is not sent to a geocoder
        within = self._enclosure(decision.unknown_within) if decision.unknown_within is not None else None
        try:
            found = self.weather.geocode(word, request.deadline, within)
        except (UpstreamConnectError, UpstreamTimeout, CircuitOpen):
            # The geocoder could not be reached: whether the place exists is unknown, and saying it does not
            # (a clarify, exit 0) would be wrong. The weather service is unavailable: exit 3, offline hint.
            raise
        except WeatherUnavailable:
            return decision  # it answered, but not usably: the clarify stands, as for no results
        if found is None:
            return decision
        match = PlaceMatch((found,), f"geocoding ({self.weather.provider.name})")
        located = self._route(request.text, request.today, request.session, {word: match})
        return located if located.route == "rule" else decision

    def _enclosure(self, place: Place) -> Enclosure:
        """PLACE with its units' own names, outermost first (浙江省, 杭州市, 余杭区): what a geocoder's answer
        is checked against."""
        gazetteer = self.parts.parser.reader.gazetteer
        chain = [place]
        while (parent := gazetteer.parent_of(chain[0])) is not None:
            chain.insert(0, parent)
        # A unit's name is written with its parent's before it (杭州市余杭区): its own name is what follows.
        names = [chain[0].name] + [inner.name.removeprefix(outer.name) for outer, inner in itertools.pairwise(chain)]
        return Enclosure(place, tuple(names))

    def _answer_llm(self, request: _Request) -> Answer:
        with self._recorded(request):
            answer = self._ask_llm(request)
        return self._finish(request, answer)

    def _ask_llm(self, request: _Request) -> Answer:
        session = request.session
        masked = self.settings.llm_sees == "masked"  # personal data stays on this machine unless told otherwise
        text = mask_personal_data(request.text) if masked else request.text
        history = session.llm_history(masked=masked) if session else None
        # A model the caller named answers alone; else the configured one, then each fallback in turn when
        # the one before failed after its retries (or could not be reached at all).
        chain = [request.model] if request.model else self.parts.model_chain
        failed: list[tuple[str, str]] = []
        for name in chain:
            try:
                agent = self.parts.agent_for(name)
                on_text = None if request.on_text is None else self._passer(request, agent.model)
                result = agent.run(
                    text, history=history, today=request.today, sampling=request.sampling, on_text=on_text
                )
                break
            except LLMUnavailable as error:
                if len(failed) == len(chain) - 1 or request.sent:
                    raise
                failed.append((name, str(error)))
                logger.warning("model %s failed (%s); asking %s", name, error, chain[len(failed)])
        cost = self.models.cost(agent.model, result.usage)
        provider = self.weather.provider
        answer = llm_answer(
            request.decision, result, model=agent.model, cost_usd=cost, provider=provider, started=request.started
        )
        answer.fallbacks = tuple(failed)
        return answer

    @staticmethod
    def _passer(request: _Request, model: str | None) -> Callable[[str], None]:
        """What hands REQUEST's text, piece by piece, to its on_text, as written by MODEL."""
        on_text = request.on_text
        assert on_text is not None

        def pass_on(text: str) -> None:
            request.sent = True
            if request.on_text_failed is not None:
                return
            try:
                on_text(TextPiece(text, model, request.request_id))
            except Exception as error:  # the caller's (a closed pipe, a closed event loop): the answer, paid
                request.on_text_failed = error  # for, still runs to its row; ask() raises this after that

        return pass_on

    def _shadow(self, request: _Request, fetched: list[Any]) -> None:
        if self.parts.shadow_rate > 0 and self.parts.shadow is not None:
            self.parts.shadow.maybe_run(request.text, request.decision, fetched, request.today)

    def _finish(self, request: _Request, answer: Answer) -> Answer:
        session = request.session
        if session is not None:
            session.remember(request.text, answer.text, answer.decision)
        recorder = self.parts.recorder
        if recorder is not None:
            answer.request_id = recorder.answered(
                request.text,
                answer,
                request.arrived,
                session.id if session is not None else None,
                request.overlay,
                request_id=request.request_id,
                caller=request.caller,
            )
        self._trace(request, answer=answer)
        if request.on_text is not None and not request.sent:  # a rule answer, or a model that did not stream
            self._passer(request, answer.model if answer.route == "llm" else None)(answer.text)
        if request.on_text_failed is not None:
            raise request.on_text_failed
        return answer

    def _trace(self, request: _Request, *, answer: Answer | None = None, error: BaseException | None = None) -> None:
        """REQUEST's spans, when OpenTelemetry traces are configured (router/tracing.py)."""
        tracer = self.parts.tracing[0]
        if tracer is not None:
            from .tracing import trace_request

            decision, ended = request.decision, request.arrived + (time.perf_counter() - request.started)
            trace_request(
                tracer,
                self.parts.outgoing,
                arrived=request.arrived,
                routed_s=request.routed_s,
                ended=ended,
                decision=decision,
                request_id=request.request_id,
                answer=answer,
                error=error,
            )

    @contextlib.contextmanager
    def _recorded(self, request: _Request) -> Iterator[None]:
        """Record a request that fails with a typed error (the error still reaches the caller)."""
        try:
            yield
        except BaseException as error:
            if not isinstance(error, (HybridWeatherError, KeyboardInterrupt, SystemExit)) and not _cancelled(error):
                raise
            # A typed failure, or an ask cut short (Ctrl-C, SIGTERM, a cancelled task): a row says what happened.
            recorder, decision, agent = self.parts.recorder, request.decision, built(self.parts, "agent")
            model = request.model or (agent.model if agent is not None else None)
            if recorder is not None:
                recorder.failed(
                    request.text,
                    decision,
                    error,
                    arrived=request.arrived,
                    latency_ms=elapsed_ms(request.started),
                    provider=self.weather.provider.name if decision.route == "rule" else None,
                    model=model if decision.route == "llm" else None,
                    session_id=request.session.id if request.session is not None else None,
                    overlay=request.overlay,
                    request_id=request.request_id,
                    caller=request.caller,
                )
            self._trace(request, error=error)
            raise


def _cancelled(error: BaseException) -> bool:
    """Whether ERROR is an asyncio task's cancellation (only a program that imported asyncio has one)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(error, asyncio.CancelledError)


@dataclass(slots=True)
class _Request:
    """One ask on its way through the facade."""

    text: str
    today: dt.date
    session: Session | None
    decision: Decision  #: what the router made of it; replaced once a geocoder finds an unknown place
    arrived: float  #: time.time(), for the ledger
    started: float  #: time.perf_counter(), for latency
    deadline: float  #: time.monotonic() by which the answer must be in: the call's start + HybridRouter.deadline
    model: str | None = None  #: the model the caller named, if any (else the configured one)
    sampling: dict[str, Any] | None = None  #: the caller's temperature and max_tokens, if any
    overlay: int | None = None  #: the overlay version the question was read through (None: no overlay)
    routed_s: float = 0.0  #: seconds the routing took (traces)
    on_text: Callable[[TextPiece], object] | None = None  #: the caller's, for the answer's text as it comes
    request_id: str | None = None  #: the ledger row's id, made when the request arrived (None: no ledger)
    sent: bool = False  #: a piece of the answer has gone to on_text
    on_text_failed: Exception | None = None  #: what on_text raised; no piece goes to it after that
    caller: str | None = None  #: whose request it is, for its ledger row (None: nobody's in particular)


def _checked_tools(tools: Sequence[Any]) -> tuple[Any, ...]:
    """TOOLS, each marked with @tool, with no two of one name: a mistake shows when the router is made,
    not at the first question that needs the LLM."""
    if not tools:
        return ()  # and the registry stays unloaded: a one-shot CLI run does not pay for it
    from hybrid_weather.agent.llm.registry import tool_of

    names = [tool_of(given).name for given in tools]
    doubled = {name for name in names if names.count(name) > 1}
    if doubled:
        raise ValueError(f"two tools are named {', '.join(sorted(doubled))}")
    return tuple(tools)

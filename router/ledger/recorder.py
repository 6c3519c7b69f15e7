"""Turn what happened to a request into its ledger row: an answer, a failure, or a shadow run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Protocol

from .entry import LedgerEntry, RequestIds

if TYPE_CHECKING:
    from hybrid_weather.agent.llm import AgentResult
    from hybrid_weather.agent.llm.models import Usage

    from ..answer import Answer
    from ..understand import Decision


class RowSink(Protocol):
    """What takes rows: a Ledger, or a SpoolLedger standing in for one."""

    def record(self, entry: LedgerEntry) -> None: ...


#: The outcome of a request that asked nothing ("", whitespace, only emoji): no money spent or saved.
EMPTY = "empty"


class Recorder:
    """Queues one row per request on a Ledger; every method returns at once (the writer does the rest). DEMO:
    the router answers from the demo provider, so each of its rows (answers, clarifications, failures and
    shadow runs alike: the traffic of a trial) is marked, and the reports leave it out unless asked."""

    def __init__(self, ledger: RowSink, *, demo: bool = False) -> None:
        self.ledger = ledger
        self.demo = demo
        self._ids = RequestIds()

    def new_id(self, arrived: float) -> str:
        """An id for a request that arrived at ARRIVED, made before its row (a streamed answer names it first)."""
        return self._ids.new(arrived)

    def answered(
        self,
        query: str,
        answer: Answer,
        arrived: float,
        session_id: str | None = None,
        overlay: int | None = None,
        *,
        request_id: str | None = None,
        caller: str | None = None,
    ) -> str:
        """ANSWER's row: QUERY arrived at ARRIVED (time.time()), in session SESSION_ID, read through OVERLAY,
        under REQUEST_ID (new_id's) or a new id, on CALLER's behalf. Returns the row's id, which the answer
        carries (feedback names it)."""
        decision, result = answer.decision, answer.llm
        request_id = request_id or self._ids.new(arrived)
        entry = LedgerEntry(
            started_at=arrived,
            route=answer.route,
            query=query,
            reason=decision.reason,
            reason_code=decision.reason_code,
            aspect=decision.aspect,
            places=tuple(result.places if result else decision.cities),
            days=len(decision.dates),
            provider=answer.source,
            cache_hit=answer.cache_hit,
            stale=answer.stale,
            model=answer.model,
            cost_usd=answer.cost_usd,
            latency_ms=answer.latency_ms,
            outcome=EMPTY if decision.is_empty else "ok",
            session_id=session_id,
            unknown_words=decision.unknown_words,
            overlay_version=overlay,
            request_id=request_id,
            caller=caller,
            demo=self.demo,
        )
        self.ledger.record(entry if result is None else _with_llm(entry, result, decision.open_ended))
        return request_id

    def failed(
        self,
        query: str,
        decision: Decision,
        error: BaseException,
        *,
        arrived: float,
        latency_ms: float,
        provider: str | None,
        model: str | None,
        session_id: str | None,
        overlay: int | None = None,
        request_id: str | None = None,
        caller: str | None = None,
    ) -> None:
        self.ledger.record(
            LedgerEntry(
                started_at=arrived,
                route=decision.route,
                query=query,
                reason=decision.reason,
                reason_code=decision.reason_code,
                aspect=decision.aspect,
                places=tuple(decision.cities),
                days=len(decision.dates),
                provider=provider,
                model=model,
                cost_usd=0.0,
                latency_ms=latency_ms,
                outcome=_outcome(error),
                session_id=session_id,
                # The LLM's attempts before it gave up (3 for a server that failed three times).
                llm_attempts=getattr(error, "attempts", None) or None,
                unknown_words=decision.unknown_words,
                overlay_version=overlay,
                request_id=request_id,
                caller=caller,
                demo=self.demo,
            )
        )

    def passed_through(
        self,
        query: str,
        reason: str,
        *,
        arrived: float,
        latency_ms: float,
        model: str | None,
        usage: Usage | None,
        cost_usd: float | None,
        outcome: str,
        caller: str | None = None,
    ) -> None:
        """A chat request `serve` sent to the model as it came (it carried its own tools): an llm row, which
        an all-LLM design pays alike (it saved nothing), with the endpoint's tokens and their cost (None:
        not known, e.g. a streamed answer)."""
        self.ledger.record(
            LedgerEntry(
                started_at=arrived,
                route="llm",
                query=query,
                reason=reason,
                reason_code="pass_through",
                model=model,
                usage=usage,
                cost_usd=cost_usd,
                latency_ms=latency_ms,
                outcome=outcome,
                caller=caller,
            )
        )

    def shadow(
        self,
        query: str,
        decision: Decision,
        *,
        arrived: float,
        latency_ms: float,
        model: str | None,
        result: AgentResult | None,
        cost_usd: float | None,
        agreement: bool | None,
        error: Exception | None = None,
    ) -> None:
        """A shadow run: the LLM's answer to a rule-answered question, its real cost and whether it agreed."""
        self.ledger.record(
            _with_llm(
                LedgerEntry(
                    started_at=arrived,
                    route="shadow",
                    query=query,
                    reason=f"shadow of: {decision.reason}",
                    reason_code="shadow",
                    aspect=decision.aspect,
                    places=tuple(decision.cities),
                    days=len(decision.dates),
                    model=model,
                    cost_usd=cost_usd,
                    latency_ms=latency_ms,
                    agreement=agreement,
                    outcome=type(error).__name__ if error is not None else "ok",
                    demo=self.demo,
                ),
                result,
                decision.open_ended,
            )
        )


def _with_llm(entry: LedgerEntry, result: AgentResult | None, open_ended: bool) -> LedgerEntry:
    """ENTRY with the LLM loop's tokens, attempts, loops, tool calls and model time, when there was a loop. A
    question an open-ended word sent to the LLM (适合, 规划: OPEN_ENDED) is no plain lookup, whatever tools
    answered it: `misses` is what the rules could have answered, not what they leave to the LLM on purpose."""
    if result is None:
        return entry
    looked_up = None if open_ended else plain_lookup_date(result)
    return entry._replace(
        usage=result.usage,
        llm_attempts=result.attempts,
        llm_loops=len(result.loops),
        tool_calls=result.tool_calls,
        tool_failures=result.tool_failures,
        plain_lookup=looked_up is not None,
        lookup_date=looked_up,
        model_ms=result.model_ms,
    )


def plain_lookup_date(result: AgentResult) -> str | None:
    """The date the weather tools were called with (明天, 2026-12-05) when RESULT is a plain lookup — weather-
    tool calls only, about one place and one set of days: what a rule answer could have done had the router
    understood the question — else None. What `learn` holds a rule's reading of the question to."""
    from hybrid_weather.agent.llm import WEATHER_TOOL_NAMES

    calls = [call for loop in result.loops for call in loop.tools]
    dates = {_date_argument(call.arguments) for call in calls}
    plain = (
        result.stopped == "answer"
        and bool(calls)
        and all(call.name in WEATHER_TOOL_NAMES and call.ok for call in calls)
        and len(set(result.places)) == 1
        and len(dates) == 1
    )
    return dates.pop() if plain else None


def _date_argument(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return "?"
    return str(value.get("date") or "今天") if isinstance(value, dict) else "?"


def _outcome(error: BaseException) -> str:
    """The outcome column of a failed request: the error's class, Interrupted (Ctrl-C, SIGTERM) or Cancelled
    (an asyncio caller gave up on the task)."""
    if isinstance(error, (KeyboardInterrupt, SystemExit)):
        return "Interrupted"
    return "Cancelled" if type(error).__name__ == "CancelledError" else type(error).__name__

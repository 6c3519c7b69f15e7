"""Daily LLM budgets per API key (HYBRID_WEATHER_KEY_BUDGETS) and a cap on each key's requests to the model
in flight (HYBRID_WEATHER_KEY_CONCURRENCY): over its budget, a key's questions that need the model get 429
until the next UTC day, while its rule answers keep flowing; at its cap, 429 until one has finished.

    HYBRID_WEATHER_KEY_BUDGETS=5usd                       every key (or client address): $5 a day
    HYBRID_WEATHER_KEY_BUDGETS=5usd,team-a=20usd,batch=200000tokens   a default, and two keys of their own

Before a request goes to the model it reserves its worst cost (`Cost`: what one request may spend, at the
dearest price of the models that may answer it). It is let through while what its key spent and reserved
today is under the budget and while the key has fewer requests in flight than the cap, and both are
counted before the model is called — one Lua script in the fleet's Redis (HYBRID_WEATHER_CACHE_URL), one
lock in the process without it — so requests that arrive together cannot all pass on the same room. When
the request ends its real cost replaces the estimate; one that failed gives it back; one whose cost is not
known (a model without a price, a streamed pass-through whose usage is not read) keeps it.

How far over a budget a key can go: the last request let through saw less than the budget spent and
reserved, and each request in flight counts at least its reservation, so a key ends a day less than one
reservation over — as long as no request costs more than it reserved. The loop checks its token budget
after each call, so one request can cross it by its last call; the bound documented and measured is the
cap times one request's worst cost (docs/serving.md).

A Redis that cannot be reached counts here meanwhile: a budget may be overrun by what each worker lets
through in that time, never enforced on nothing; a reservation made in Redis that cannot be settled there
stands (over-counted, never under), and its hold ends with its lease.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from hybrid_weather.agent.errors import ConfigurationError

from .access import hashed
from .errors import ApiError

if TYPE_CHECKING:
    from hybrid_weather.agent.weather.shared_cache import SharedCache

_ENTRY = re.compile(r"(?:(?P<key>[^=\s]+)=)?(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>usd|tokens)", re.IGNORECASE)
#: Seconds a day's counter is kept after its day began: long enough to read it until the day ends.
_COUNTER_TTL_S = 2 * 86_400
#: Requests to the model a key may have in flight when budgets are set and HYBRID_WEATHER_KEY_CONCURRENCY
#: is not: a person or a small batch job never waits for it, and 8 reservations bound the overrun.
DEFAULT_CONCURRENCY = 8
#: Seconds a hold on a slot lasts at the most: longer than any answer takes (the LLM loop's deadline is
#: 45 s), so only a worker that died without settling loses its slots to it, and gets them back then.
LEASE_S = 300.0


@dataclass(frozen=True, slots=True)
class Budget:
    amount: float
    unit: str  #: usd or tokens

    def __str__(self) -> str:
        return f"${self.amount:g}" if self.unit == "usd" else f"{self.amount:,.0f} tokens"

    def amount_text(self, spent: float) -> str:
        return f"${spent:,.4f}" if self.unit == "usd" else f"{spent:,.0f} tokens"


class Cost(NamedTuple):
    """What a request costs, in both of a budget's units."""

    tokens: float
    usd: float


@dataclass(frozen=True, slots=True)
class Hold:
    """One request's reservation: its slot, and its estimate against its key's budget of the day."""

    caller: str
    budget: Budget | None  #: None: the caller has no budget, only the cap
    day: str  #: the UTC day whose counter holds the estimate
    estimate: float  #: in the budget's unit
    token: str
    shared: bool  #: made in Redis (else in this process)


@dataclass(slots=True)
class Budgets:
    """Who may spend how much a day and have how many requests in flight, and what each spent; thread-safe."""

    default: Budget | None = None
    by_caller: dict[str, Budget] = field(default_factory=dict)  #: "key:<digest prefix>" → its budget
    concurrency: int | None = None  #: requests to the model a caller may have in flight (None: any number)
    shared: SharedCache | None = None
    _spent: dict[tuple[str, str, str], float] = field(default_factory=dict)  #: spent and reserved here
    _held: dict[str, dict[str, float]] = field(default_factory=dict)  #: caller → its holds' lease ends
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def parse(
        cls, text: str | None, shared: SharedCache | None = None, concurrency: str | None = None
    ) -> Budgets | None:
        """The budgets TEXT and the cap CONCURRENCY set, or None when they set neither; ConfigurationError
        naming the variable."""
        cap = _concurrency(concurrency)
        if (not text or not text.strip()) and not cap:
            return None
        budgets = cls(shared=shared, concurrency=cap)
        for part in (text or "").split(",") if text and text.strip() else ():
            match = _ENTRY.fullmatch(part.strip())
            if match is None or float(match["amount"]) <= 0:
                raise ConfigurationError(
                    f"HYBRID_WEATHER_KEY_BUDGETS: {part.strip()!r} is not a budget; use an amount a day in usd or "
                    "tokens, for every key or for one: e.g. 5usd,team-key=20usd,batch-key=200000tokens"
                )
            budget = Budget(float(match["amount"]), match["unit"].lower())
            if match["key"] is None:
                budgets.default = budget
            else:
                budgets.by_caller[f"key:{hashed(match['key'])[:16]}"] = budget
        if concurrency is None and (budgets.default or budgets.by_caller):
            budgets.concurrency = DEFAULT_CONCURRENCY
        return budgets

    def reserve(self, caller: str, worst: Cost, now: dt.datetime | None = None) -> Hold | None:
        """Reserve WORST, one request's worst cost, against CALLER's budget of today (UTC), and one of its
        slots: the Hold to settle when the request ends, None when CALLER has neither a budget nor a cap.
        Raises ApiError 429 when the budget is spent or every slot is taken."""
        budget = self.by_caller.get(caller, self.default)
        if budget is None and not self.concurrency:
            return None
        now = now or dt.datetime.now(dt.timezone.utc)
        day = now.date().isoformat()
        estimate = 0.0 if budget is None else worst.usd if budget.unit == "usd" else worst.tokens
        hold = Hold(caller, budget, day, estimate, secrets.token_hex(8), shared=self.shared is not None)
        if self.shared is not None:
            here = self._spent.get((caller, budget.unit, day), 0.0) if budget else 0.0
            reserved = self.shared.reserve(
                _counter(caller, budget, day),
                _holds(caller),
                budget=budget.amount if budget else None,
                counted_here=here,
                estimate=estimate,
                cap=self.concurrency,
                token=hold.token,
                lease_s=LEASE_S,
                ttl_s=_COUNTER_TTL_S,
            )
            if reserved is not None:
                outcome, count = reserved
                if outcome == 1 and budget is not None:
                    raise _spent(budget, count, now)
                if outcome == 2:
                    raise self._busy(int(count))
                return hold
            hold = Hold(caller, budget, day, estimate, hold.token, shared=False)  # Redis is away: counted here
        with self._lock:
            spent = 0.0
            if budget is not None:
                for old in [k for k in self._spent if k[2] != day]:  # yesterday's counts are no budget's
                    del self._spent[old]
                spent = self._spent.get((caller, budget.unit, day), 0.0)
                if spent >= budget.amount:
                    raise _spent(budget, spent, now)
            held = self._held.setdefault(caller, {})
            clock = time.monotonic()
            for token in [t for t, until in held.items() if until <= clock]:
                del held[token]
            if self.concurrency and len(held) >= self.concurrency:
                raise self._busy(len(held))
            held[hold.token] = clock + LEASE_S
            if budget is not None and estimate > 0:
                self._spent[(caller, budget.unit, day)] = spent + estimate
        return hold

    def settle(self, hold: Hold, tokens: float | None, usd: float | None) -> None:
        """End HOLD: its slot is free, and its estimate becomes the real cost (TOKENS and USD; 0 and 0 give
        it back; None keeps the estimate for the unit it stands for, as a cost that is not known)."""
        budget = hold.budget
        real = None if budget is None else usd if budget.unit == "usd" else tokens
        change = 0.0 if real is None else real - hold.estimate
        if hold.shared:
            assert self.shared is not None
            self.shared.settle(
                _counter(hold.caller, budget, hold.day),
                _holds(hold.caller),
                token=hold.token,
                change=change,
                ttl_s=_COUNTER_TTL_S,
            )
            return  # Redis away: the estimate stands there and the lease frees the slot
        with self._lock:
            held = self._held.get(hold.caller, {})
            held.pop(hold.token, None)
            if not held:
                self._held.pop(hold.caller, None)
            counted = (hold.caller, budget.unit, hold.day) if budget is not None else None
            if counted is not None and change and counted in self._spent:
                self._spent[counted] = max(0.0, self._spent[counted] + change)

    def _busy(self, held: int) -> ApiError:
        return ApiError(
            429,
            "rate_limit_error",
            f"this key has {held} requests to the model in flight, as many as "
            f"it may (HYBRID_WEATHER_KEY_CONCURRENCY={self.concurrency}); retry when one has finished",
            "key_concurrency_exceeded",
            {"retry-after": "1"},
        )


def _spent(budget: Budget, spent: float, now: dt.datetime) -> ApiError:
    midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    wait = int((midnight - now).total_seconds()) + 1
    return ApiError(
        429,
        "insufficient_quota",
        f"this key's LLM budget of {budget} a day is spent "
        f"({budget.amount_text(spent)} today, the reservations of its requests in flight included); "
        f"questions that need the model are refused until 00:00 UTC (in {wait // 3600} h "
        f"{wait % 3600 // 60} min); weather lookups are still answered",
        "key_budget_exceeded",
        {"retry-after": str(wait)},
    )


def _counter(caller: str, budget: Budget | None, day: str) -> str:
    return f"budget:{caller}:{budget.unit if budget else 'none'}:{day}"


def _holds(caller: str) -> str:
    return f"inflight:{caller}"


def _concurrency(text: str | None) -> int | None:
    """The cap TEXT sets: a whole number from 1, or off (None); ConfigurationError naming the variable."""
    if text is None or not text.strip() or text.strip().lower() == "off":
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigurationError(
            f"HYBRID_WEATHER_KEY_CONCURRENCY={text!r}: give the requests to the model a key "
            "may have in flight, a whole number from 1 (e.g. 8), or off"
        )
    return int(text)

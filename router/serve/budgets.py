"""Daily LLM budgets per API key (HYBRID_WEATHER_KEY_BUDGETS): over its budget, a key's questions that need
the model get 429 until the next UTC day, while its rule answers keep flowing.

    HYBRID_WEATHER_KEY_BUDGETS=5usd                       every key (or client address): $5 a day
    HYBRID_WEATHER_KEY_BUDGETS=5usd,team-a=20usd,batch=200000tokens   a default, and two keys of their own

What a key spent is counted in the fleet's Redis when HYBRID_WEATHER_CACHE_URL is set (one counter per key,
unit and UTC day, INCRBYFLOAT, expiring after two days), so every worker and host shares it; else in this
process. A Redis that cannot be reached counts here meanwhile: a budget may be overrun by what each worker
lets through in that time, never enforced on nothing. A request that starts under budget is answered whole,
so a key may end a day a little over.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import ConfigurationError

from .access import hashed
from .errors import ApiError

if TYPE_CHECKING:
    from hybrid_weather.agent.weather.shared_cache import SharedCache

_ENTRY = re.compile(r"(?:(?P<key>[^=\s]+)=)?(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>usd|tokens)", re.IGNORECASE)
#: Seconds a day's counter is kept after its day began: long enough to read it until the day ends.
_COUNTER_TTL_S = 2 * 86_400


@dataclass(frozen=True, slots=True)
class Budget:
    amount: float
    unit: str  #: usd or tokens

    def __str__(self) -> str:
        return f"${self.amount:g}" if self.unit == "usd" else f"{self.amount:,.0f} tokens"


@dataclass(slots=True)
class Budgets:
    """Who may spend how much a day, and what each spent; thread-safe."""

    default: Budget | None = None
    by_caller: dict[str, Budget] = field(default_factory=dict)  #: "key:<digest prefix>" → its budget
    shared: SharedCache | None = None
    _spent: dict[tuple[str, str, str], float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def parse(cls, text: str | None, shared: SharedCache | None = None) -> Budgets | None:
        """The budgets TEXT sets, or None when it sets none; ConfigurationError naming the variable."""
        if not text or not text.strip():
            return None
        budgets = cls(shared=shared)
        for part in text.split(","):
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
        return budgets

    def check(self, caller: str, now: dt.datetime | None = None) -> None:
        """Raise ApiError 429 when CALLER has spent its budget today (UTC)."""
        budget = self.by_caller.get(caller, self.default)
        if budget is None:
            return
        now = now or dt.datetime.now(dt.timezone.utc)
        spent = self._read(caller, budget.unit, now)
        if spent < budget.amount:
            return
        midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
        wait = int((midnight - now).total_seconds()) + 1
        used = f"${spent:,.4f}" if budget.unit == "usd" else f"{spent:,.0f} tokens"
        raise ApiError(429, "insufficient_quota", f"this key's LLM budget of {budget} a day is spent ({used} "
                       f"today); questions that need the model are refused until 00:00 UTC (in {wait // 3600} h "
                       f"{wait % 3600 // 60} min); weather lookups are still answered",
                       "key_budget_exceeded", {"retry-after": str(wait)})  # fmt: skip

    def spend(self, caller: str, answer: Any, now: dt.datetime | None = None) -> None:
        """Count what ANSWER (an LLM answer) cost against CALLER's budget, in the budget's unit."""
        budget = self.by_caller.get(caller, self.default)
        if budget is None or answer.llm is None:
            return
        usage = answer.llm.usage
        tokens = usage.prompt_tokens + usage.completion_tokens
        amount = float(answer.cost_usd or 0.0) if budget.unit == "usd" else float(tokens)
        if amount <= 0:
            return
        now = now or dt.datetime.now(dt.timezone.utc)
        name = self._name(caller, budget.unit, now)
        if self.shared is not None and self.shared.add_float(name, amount, _COUNTER_TTL_S) is not None:
            return
        with self._lock:
            day = now.date().isoformat()
            for old in [k for k in self._spent if k[2] != day]:  # yesterday's counts are no budget's
                del self._spent[old]
            self._spent[(caller, budget.unit, day)] = self._spent.get((caller, budget.unit, day), 0.0) + amount

    def _read(self, caller: str, unit: str, now: dt.datetime) -> float:
        here = self._spent.get((caller, unit, now.date().isoformat()), 0.0)
        if self.shared is not None:
            shared = self.shared.read_float(self._name(caller, unit, now))
            if shared is not None:
                return shared + here  # what this worker counted while Redis was away, too
        return here

    @staticmethod
    def _name(caller: str, unit: str, now: dt.datetime) -> str:
        return f"budget:{caller}:{unit}:{now.date().isoformat()}"

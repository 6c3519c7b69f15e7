"""The baseline: what an all-LLM design would have spent on the same requests. Computed here only.

Three estimates, best available first, and the report names the one it used:
1. shadow: rule answers at the mean real cost of shadow LLM runs of rule-answered questions;
2. ledger: the mean cost of this ledger's own LLM answers, by number of places;
3. default: published measurements (gpt-4o-mini: ~500 tokens for a one-place question in two loops,
   ~2,500 for three places in four; +1,000 per extra place) priced at the configured model.
LLM answers count at their real cost on both sides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hybrid_weather.agent.llm.models import ModelTable, Usage

DEFAULT_BASELINE_TOKENS_ONE_PLACE = 500
DEFAULT_BASELINE_TOKENS_PER_EXTRA_PLACE = 1000
# The prompt/completion split is ours: tool loops are mostly prompt (system prompt, schemas, tool results).
DEFAULT_BASELINE_COMPLETION_SHARE = 0.15
#: LLM answers the ledger needs before its own measurements replace the published default.
MIN_LEDGER_SAMPLE = 20
#: Shadow runs needed before they set the baseline of rule answers (measured, not estimated).
MIN_SHADOW_SAMPLE = 10
# A bucket (1, 2, 3+ places) with fewer samples than this uses the mean over all buckets.
_MIN_BUCKET_SAMPLE = 5

Row = Mapping[str, Any]


def default_baseline_usage(places: int) -> Usage:
    """Tokens an all-LLM design spends on a question about PLACES places (published measurements)."""
    tokens = DEFAULT_BASELINE_TOKENS_ONE_PLACE + DEFAULT_BASELINE_TOKENS_PER_EXTRA_PLACE * max(0, places - 1)
    completion = round(tokens * DEFAULT_BASELINE_COMPLETION_SHARE)
    return Usage(prompt_tokens=tokens - completion, completion_tokens=completion)


def default_baseline_cost(models: ModelTable, model: str, places: int) -> float | None:
    """USD an all-LLM design spends on one question about PLACES places on MODEL; None if unpriced."""
    return models.cost(model, default_baseline_usage(max(1, places)))


def place_bucket(count: int) -> int:
    """1, 2 or 3 (three or more places): costs grow with places, so means are kept per bucket."""
    return min(max(count, 1), 3)


class _Means:
    """Mean cost per place bucket, with the overall mean for thin buckets."""

    def __init__(self, samples: Iterable[tuple[int, float]]) -> None:
        self.by_bucket: dict[int, list[float]] = defaultdict(list)
        for bucket, cost in samples:
            self.by_bucket[bucket].append(cost)
        self.count = sum(len(v) for v in self.by_bucket.values())
        self.overall = sum(c for v in self.by_bucket.values() for c in v) / self.count if self.count else 0.0

    def of(self, bucket: int) -> float:
        values = self.by_bucket.get(bucket, [])
        return sum(values) / len(values) if len(values) >= _MIN_BUCKET_SAMPLE else self.overall


class Baseline:
    """The baseline of each row in a report window, from the best estimate the window allows.

    ROWS and SHADOWS carry `route`, `outcome`, `cost_usd`, `baseline_cost_usd` (the default estimate
    stored with the row), `baseline_method` and `bucket` (place_bucket of the row's places).
    """

    def __init__(self, rows: Sequence[Row], shadows: Sequence[Row]) -> None:
        self.shadow = _Means(
            (r["bucket"], r["cost_usd"]) for r in shadows if r["outcome"] == "ok" and r["cost_usd"] is not None
        )
        self.ledger = _Means(
            (r["bucket"], r["cost_usd"])
            for r in rows
            if r["route"] == "llm" and r["outcome"] == "ok" and r["cost_usd"] is not None
        )
        self.shadowed = self.shadow.count >= MIN_SHADOW_SAMPLE
        self.measured = self.ledger.count >= MIN_LEDGER_SAMPLE
        self._defaults = sorted({r["baseline_method"] for r in rows if r["route"] != "llm" and r["baseline_method"]})

    @property
    def sample(self) -> int:
        """LLM answers in the window (the ledger estimate's sample)."""
        return self.ledger.count

    def of(self, row: Row) -> float | None:
        if row["route"] == "llm":
            return row["cost_usd"]  # type: ignore[no-any-return]
        if row["route"] == "rule" and self.shadowed:
            return self.shadow.of(row["bucket"])
        if self.measured:
            return self.ledger.of(row["bucket"])
        return row["baseline_cost_usd"]  # type: ignore[no-any-return]

    @property
    def method(self) -> str:
        if self.measured:
            method = f"ledger: mean cost of this ledger's {self.ledger.count} LLM answers, by number of places"
        else:
            method = (
                "default: published gpt-4o-mini measurements (~500 tokens for one place in two loops, "
                f"~2,500 for three places in four) at the configured model's price "
                f"({', '.join(self._defaults) or 'n/a'})"
            )
        if self.shadowed:
            method = (
                f"shadow: rule answers at the mean cost of {self.shadow.count} shadow LLM runs, "
                f"by number of places; others {method}"
            )
        return method

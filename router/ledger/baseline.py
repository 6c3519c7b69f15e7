"""The baseline: what an all-LLM design would have spent on the same requests. Computed here only.

Three estimates, best available first, and the report names the one it used:
1. shadow: rule answers at the mean real cost of shadow LLM runs of rule-answered questions;
2. ledger: the mean cost of this ledger's own LLM answers, by number of places;
3. default: published measurements (gpt-4o-mini: ~500 tokens for a one-place question in two loops,
   ~2,500 for three places in four; +1,000 per extra place) priced at the configured model.
LLM answers count at their real cost on both sides.
"""

from __future__ import annotations

import functools
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

Group = Mapping[str, Any]


def default_baseline_usage(places: int) -> Usage:
    """Tokens an all-LLM design spends on a question about PLACES places (published measurements)."""
    tokens = DEFAULT_BASELINE_TOKENS_ONE_PLACE + DEFAULT_BASELINE_TOKENS_PER_EXTRA_PLACE * max(0, places - 1)
    completion = round(tokens * DEFAULT_BASELINE_COMPLETION_SHARE)
    return Usage(prompt_tokens=tokens - completion, completion_tokens=completion)


@functools.lru_cache(maxsize=256)
def default_baseline_cost(models: ModelTable, model: str, places: int) -> float | None:
    """USD an all-LLM design spends on one question about PLACES places on MODEL; None if unpriced.

    Kept per (table, model, places): the ledger prices every rule row and the service every rule answer
    by it, and the same few values hold all day (a ModelTable does not change once read)."""
    return models.cost(model, default_baseline_usage(max(1, places)))


class _Means:
    """Mean cost per place bucket, with the overall mean for thin buckets, from (bucket, total, count)."""

    def __init__(self, samples: Iterable[tuple[int, float, int]]) -> None:
        self.totals: dict[int, float] = defaultdict(float)
        self.counts: dict[int, int] = defaultdict(int)
        for bucket, total, count in samples:
            self.totals[bucket] += total
            self.counts[bucket] += count
        self.count = sum(self.counts.values())
        self.overall = sum(self.totals.values()) / self.count if self.count else 0.0

    def of(self, bucket: int) -> float:
        count = self.counts.get(bucket, 0)
        return self.totals[bucket] / count if count >= _MIN_BUCKET_SAMPLE else self.overall


class Baseline:
    """The baseline of each group of rows in a report window, from the best estimate the window allows.

    GROUPS and SHADOWS are the rollup's aggregates (rollup.Window.groups): `route`, `outcome`, `places`
    (the place bucket), `requests`, `priced` (rows with a known cost), `cost_usd`, `baseline_cost_usd`
    (the sum of the default estimates stored with the rows) and `baseline_method`.
    """

    def __init__(self, groups: Sequence[Group], shadows: Sequence[Group]) -> None:
        self.shadow = _Means((g["places"], g["cost_usd"], g["priced"]) for g in shadows if g["outcome"] == "ok")
        self.ledger = _Means(
            (g["places"], g["cost_usd"], g["priced"]) for g in groups if g["route"] == "llm" and g["outcome"] == "ok"
        )
        self.shadowed = self.shadow.count >= MIN_SHADOW_SAMPLE
        self.measured = self.ledger.count >= MIN_LEDGER_SAMPLE
        self._defaults = sorted({g["baseline_method"] for g in groups if g["route"] != "llm" and g["baseline_method"]})

    @property
    def sample(self) -> int:
        """LLM answers in the window (the ledger estimate's sample)."""
        return self.ledger.count

    def of(self, group: Group) -> float:
        """What an all-LLM design would have spent on GROUP's requests."""
        if group["route"] == "llm":
            return float(group["cost_usd"])
        if group["route"] == "rule" and self.shadowed:
            return float(group["requests"] * self.shadow.of(group["places"]))
        if self.measured:
            return float(group["requests"] * self.ledger.of(group["places"]))
        return float(group["baseline_cost_usd"])

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

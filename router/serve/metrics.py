"""What /metrics shows, in Prometheus's text format, summed over every worker process.

With several workers, prometheus_client's multiprocess mode keeps each process's values in files under
PROMETHEUS_MULTIPROC_DIR (the serve command makes a fresh one per start) and /metrics sums them, so any
worker answers for all. Without it (one process, tests), the values live in memory.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from hybrid_weather.rules.privacy import mask_personal_data

if TYPE_CHECKING:
    from ..answer import Answer

#: Latency buckets (seconds): rule answers take microseconds, LLM answers seconds.
_LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

#: Tool names that get a label of their own in a worker; later ones count as "other".
MAX_TOOL_LABELS = 32


class Metrics:
    """The service's counters and histograms; one per worker process."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        # In multiprocess mode values go to files and are collected from there; else to this registry.
        own = None if self.multiprocess else CollectorRegistry()
        self._registry = own
        self.requests = Counter(
            "hybrid_weather_requests",
            "HTTP requests by endpoint, route and outcome",
            ["endpoint", "route", "outcome"],
            registry=own,
        )
        self.latency = Histogram(
            "hybrid_weather_request_seconds",
            "Time to answer, by endpoint and route",
            ["endpoint", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=own,
        )
        self.upstream = Counter(
            "hybrid_weather_upstream_fetches",
            "Answers that needed the weather provider, by provider and whether it answered",
            ["provider", "result"],
            registry=own,
        )
        self.cache_hits = Counter(
            "hybrid_weather_cache_hits", "Rule answers served from the forecast cache", registry=own
        )
        self.cache_dropped = Counter(
            "hybrid_weather_cache_dropped",
            "Copies in a second-level forecast cache that "
            "failed the checks upstream replies pass, dropped and fetched again, by cache "
            "(redis, disk)",
            ["cache"],
            registry=own,
        )
        self.first_token = Histogram(
            "hybrid_weather_first_token_seconds",
            "Time from a streamed LLM request to its first token of text",
            buckets=_LATENCY_BUCKETS,
            registry=own,
        )
        self.tokens = Counter(
            "hybrid_weather_llm_tokens", "LLM tokens, by kind (prompt, completion)", ["kind"], registry=own
        )
        self.cost = Counter("hybrid_weather_llm_cost_usd", "What the LLM answers cost (USD)", registry=own)
        self.tool_calls = Counter(
            "hybrid_weather_tool_calls",
            "Tool calls the LLM made, by tool and outcome (ok, error, reused)",
            ["tool", "outcome"],
            registry=own,
        )
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._tool_names: set[str] = set()
        self.saved = Counter(
            "hybrid_weather_saved_usd",
            "What answering without a model saved against the all-LLM baseline (USD)",
            registry=own,
        )

    def answered(self, endpoint: str, answer: Answer, saved_usd: float | None) -> None:
        # The labelled children of a route, kept: labels() looks them up under a lock on every call.
        children = self._children.get((endpoint, answer.route))
        if children is None:
            children = self._children[(endpoint, answer.route)] = (
                self.requests.labels(endpoint, answer.route, "ok"),
                self.latency.labels(endpoint, answer.route),
            )
        children[0].inc()
        children[1].observe(answer.latency_ms / 1000)
        if answer.source is not None and answer.route != "llm":
            if answer.cache_hit:
                self.cache_hits.inc()
            else:
                self.upstream.labels(answer.source, "stale" if answer.stale else "ok").inc()
        if answer.llm is not None:
            self.tokens.labels("prompt").inc(answer.llm.usage.prompt_tokens)
            self.tokens.labels("completion").inc(answer.llm.usage.completion_tokens)
            for loop in answer.llm.loops:
                for tool in loop.tools:
                    outcome = "reused" if tool.reused else "ok" if tool.ok else "error"
                    self.tool_calls.labels(self._tool_label(tool.name), outcome).inc()
        if answer.cost_usd:
            self.cost.inc(answer.cost_usd)
        if saved_usd:
            self.saved.inc(saved_usd)

    def _tool_label(self, name: str) -> str:
        """NAME as a label, or "other" once MAX_TOOL_LABELS names have one: a model can call a tool by any
        name it makes up, and every label value is a series Prometheus keeps."""
        name = mask_personal_data(name)  # the model's words: a label leaves the process like a ledger column
        if name not in self._tool_names and len(self._tool_names) < MAX_TOOL_LABELS:
            self._tool_names.add(name)
        return name if name in self._tool_names else "other"

    def dropped_copy(self, cache: str) -> None:
        """WeatherService.on_drop: one copy CACHE gave back failed its checks."""
        self.cache_dropped.labels(cache).inc()

    def failed(self, endpoint: str, route: str, outcome: str, seconds: float) -> None:
        self.requests.labels(endpoint, route, outcome).inc()
        self.latency.labels(endpoint, route).observe(seconds)

    def render(self) -> bytes:
        if self._registry is not None:
            return generate_latest(self._registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)

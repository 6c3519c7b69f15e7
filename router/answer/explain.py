"""`--explain`: an Answer's decision, its reason, cache hit or miss, fallbacks and timings, as text for a
person and as data inside the `--json` object; the same facts either way."""

from __future__ import annotations

from typing import Any

from .answer import Answer


def explanation(answer: Answer) -> str:
    """The lines `ask --explain` prints under the answer."""
    decision = answer.decision
    days = ",".join(d.isoformat() for d in decision.dates) or "-"
    lines = [
        f"decision: {decision.route} · {','.join(decision.cities) or '-'} · {days} · {decision.aspect or '-'}",
        f"reason:   {decision.reason}",
    ]
    for name, outcome in decision.tried:  # where the reading alone did not decide, what was tried, in order
        lines.append(f"tried:    {name}: {outcome}")
    for model, why in answer.fallbacks:
        lines.append(f"fallback: {model} failed ({why}) → next model")
    cache = _cache(answer)
    if answer.llm is not None:
        lines.extend(_call_chain(answer))
    elif cache is not None:
        lines.append(f"cache:    {cache} · provider {answer.source} {answer.provider_ms:.1f} ms")
    lines.append(f"total:    {answer.latency_ms:.1f} ms")
    if answer.request_id:
        lines.append(f"request:  {answer.request_id} (hybrid-weather feedback {answer.request_id} wrong)")
    return "\n".join(lines)


def explanation_json(answer: Answer) -> dict[str, Any]:
    """--explain inside the --json object: the same facts as the text, as data."""
    cache = _cache(answer)
    return {
        "route": answer.decision.route,
        "reason": answer.decision.reason,
        "tried": [{"recovery": name, "outcome": outcome} for name, outcome in answer.decision.tried],
        "cache": cache,
        "provider_ms": round(answer.provider_ms, 3) if cache else None,
        "total_ms": round(answer.latency_ms, 3),
        "call_chain": answer.data if answer.llm is not None else None,
        "fallbacks": [{"model": model, "error": why} for model, why in answer.fallbacks],
    }


def _cache(answer: Answer) -> str | None:
    """How the weather was had (hit, stale or miss), for an answer that fetched some without the LLM."""
    if answer.llm is not None or not answer.source:
        return None
    return "hit" if answer.cache_hit else "stale" if answer.stale else "miss"


def _call_chain(answer: Answer) -> list[str]:
    """调用链分析: per loop, where the tokens and the time went, and what the tools did."""
    result = answer.llm
    assert result is not None
    cost = "unknown price" if answer.cost_usd is None else f"${answer.cost_usd:.6f}"
    lines = [
        f"调用链分析 (call chain) · model {answer.model} · stopped: {result.stopped} · {cost}",
        f"{'loop':>4}  {'prompt':>7}  {'cached':>6}  {'completion':>10}  {'ms':>8}  {'tries':>5}  tools",
    ]
    for loop in result.loops:
        tools = (
            ", ".join(
                f"{t.name}({t.arguments}) {'ok' if t.ok else 'error'}{' (reused)' if t.reused else ''} "
                f"{t.duration_ms:.0f}ms"
                for t in loop.tools
            )
            or "-"
        )
        lines.append(
            f"{loop.loop:>4}  {loop.usage.prompt_tokens:>7}  {loop.usage.cached_tokens:>6}  "
            f"{loop.usage.completion_tokens:>10}  {loop.latency_ms:>8.1f}  {loop.attempts:>5}  {tools}"
        )
    total = result.usage
    lines.append(
        f"{'all':>4}  {total.prompt_tokens:>7}  {total.cached_tokens:>6}  {total.completion_tokens:>10}  "
        f"{sum(each.latency_ms for each in result.loops):>8.1f}  {result.attempts:>5}  "
        f"{result.tool_calls} call(s), {result.tool_failures} failed"
    )
    return lines

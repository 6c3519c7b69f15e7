"""What the routing saved: one pass over the ledger's rows for a window of days, and projections."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, get_args

from ..understand import Route
from .baseline import Baseline, place_bucket
from .recorder import EMPTY

ROUTES = get_args(Route)


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * fraction))], 3)


def _with_bucket(row: sqlite3.Row) -> dict[str, Any]:
    try:
        count = len(json.loads(row["places"] or "[]"))
    except ValueError:
        count = 0
    return {**dict(row), "bucket": place_bucket(count)}


def savings_report(
    db: sqlite3.Connection, days: int, *, now: dt.datetime | None = None, by: str | None = None
) -> dict[str, Any]:
    """The `savings --json` object (docs/contracts.md keys first, then the operator figures)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    since = (now - dt.timedelta(days=days)).isoformat(timespec="microseconds")
    cursor = db.cursor()
    cursor.row_factory = sqlite3.Row
    everything = [
        _with_bucket(r)
        for r in cursor.execute(
            "SELECT route, aspect, places, model, cost_usd, baseline_cost_usd, baseline_method, latency_ms, outcome,"
            " llm_loops, tool_calls, tool_failures, datetime_utc, agreement, invalid"
            " FROM requests WHERE datetime_utc >= ? ORDER BY id",
            (since,),
        )
    ]
    shadows = [r for r in everything if r["route"] == "shadow"]
    rows = [r for r in everything if r["route"] != "shadow"]
    estimate = Baseline(rows, shadows)

    by_route = dict.fromkeys(ROUTES, 0)
    latency: dict[str, list[float]] = defaultdict(list)
    actual = baseline = 0.0
    unknown_cost = 0
    loops: Counter[int] = Counter()
    tool_calls = tool_failures = 0
    groups: dict[str, dict[str, float]] = defaultdict(
        lambda: {"requests": 0, "actual_cost_usd": 0.0, "baseline_cost_usd": 0.0}
    )
    outcomes: Counter[str] = Counter()
    for r in rows:
        by_route[r["route"]] = by_route.get(r["route"], 0) + 1
        outcomes[r["outcome"]] += 1
        if r["outcome"] != "ok":
            # Failed or empty: no money was spent and none saved; counted and shown apart.
            groups[_group_key(r, by or "day")]["requests"] += 1
            continue
        latency[r["route"]].append(r["latency_ms"] or 0.0)
        if r["cost_usd"] is None:
            unknown_cost += 1
        cost = r["cost_usd"] or 0.0
        base = estimate.of(r) or 0.0
        actual += cost
        baseline += base
        if r["route"] == "llm" and r["llm_loops"] is not None:
            loops[r["llm_loops"]] += 1
        tool_calls += r["tool_calls"] or 0
        tool_failures += r["tool_failures"] or 0
        key = _group_key(r, by or "day")
        group = groups[key]
        group["requests"] += 1
        group["actual_cost_usd"] += cost
        group["baseline_cost_usd"] += base
    shadow_spend = 0.0
    for r in shadows:  # spent, even though no user saw it: in the total and in its group alike
        shadow_spend += r["cost_usd"] or 0.0
        groups[_group_key(r, by or "day")]["actual_cost_usd"] += r["cost_usd"] or 0.0
    actual += shadow_spend
    verdicts = [r["agreement"] for r in shadows if r["agreement"] is not None]
    saved = baseline - actual
    return {
        "days": days,
        "requests": len(rows),
        "by_route": by_route,
        "by_outcome": {
            "ok": outcomes["ok"],
            "failed": sum(n for outcome, n in outcomes.items() if outcome not in ("ok", EMPTY)),
            "empty": outcomes[EMPTY],
        },
        "failures": {outcome: n for outcome, n in sorted(outcomes.items()) if outcome not in ("ok", EMPTY)},
        "invalid_rows": sum(1 for r in everything if r["invalid"]),
        "actual_cost_usd": round(actual, 8),
        "baseline_cost_usd": round(baseline, 8),
        "saved_usd": round(saved, 8),
        "saved_pct": round(100 * saved / baseline, 2) if baseline > 0 else None,
        "latency_ms": {
            route: {"p50": _percentile(v, 0.50), "p95": _percentile(v, 0.95)} for route, v in latency.items()
        },
        "baseline_method": estimate.method,
        "baseline_sample": estimate.sample,
        "unknown_cost_requests": unknown_cost,
        "llm_loops": {str(k): v for k, v in sorted(loops.items())},
        "tool_success_rate": round(1 - tool_failures / tool_calls, 4) if tool_calls else None,
        "shadow": {
            "runs": len(shadows),
            "cost_usd": round(shadow_spend, 8),
            "agreement_rate": round(sum(verdicts) / len(verdicts), 4) if verdicts else None,
            "judged": len(verdicts),
        },
        "groups": {
            "by": by or "day",
            "rows": {
                k: {**v, "saved_usd": round(v["baseline_cost_usd"] - v["actual_cost_usd"], 8)}
                for k, v in sorted(groups.items())
            },
        },
    }


def _group_key(r: dict[str, Any], by: str) -> str:
    if by == "route":
        return str(r["route"])
    if by == "aspect":
        return str(r["aspect"] or "-")
    if by == "model":
        return str(r["model"] or "(none)")
    return str(r["datetime_utc"][:10])


_BAR_WIDTH = 30  # characters for the largest amount in the chart


def _plural(n: int, noun: str) -> str:
    return noun if n == 1 else noun + "s"


def _count(n: int, noun: str) -> str:
    """1 request, 2 requests."""
    return f"{n} {_plural(n, noun)}"


def render_report(report: dict[str, Any]) -> str:
    """The terminal view: totals, shares, latency, agent health and a per-group chart."""
    by_route = report["by_route"]
    total = report["requests"]
    lines = [
        f"Last {report['days']} days: {_count(total, 'request')} — "
        + ", ".join(f"{route} {n} ({100 * n / total:.0f}%)" for route, n in by_route.items()),
        f"Spent      ${report['actual_cost_usd']:.6f}",
        f"All-LLM    ${report['baseline_cost_usd']:.6f}  (baseline)",
        f"Saved      ${report['saved_usd']:.6f}"
        + (f"  ({report['saved_pct']:.1f}%)" if report["saved_pct"] is not None else ""),
        f"Baseline:  {report['baseline_method']}",
    ]
    outcomes = report["by_outcome"]
    if outcomes["failed"] or outcomes["empty"]:
        failures = ", ".join(f"{name} {n}" for name, n in report["failures"].items())
        lines.append(
            f"Not counted: {outcomes['failed']} failed ({failures or '-'}) and {outcomes['empty']} empty "
            f"{_plural(outcomes['failed'] + outcomes['empty'], 'request')}: no spend and no saving"
        )
    if report["invalid_rows"]:
        lines.append(
            f"Invalid:   {_count(report['invalid_rows'], 'row')} held values that could not be facts (left out)"
        )
    if report["unknown_cost_requests"]:
        lines.append(
            f"Unknown:   {_count(report['unknown_cost_requests'], 'request')} used a model with no price; "
            "counted as $0 above"
        )
    lines.append(
        "Latency:   "
        + "; ".join(
            f"{route} p50 {v['p50']:.1f} ms, p95 {v['p95']:.1f} ms" for route, v in report["latency_ms"].items()
        )
    )
    if report["llm_loops"]:
        loops = report["llm_loops"].items()
        lines.append("LLM loops: " + ", ".join(f"{_count(int(k), 'loop')}: {v}" for k, v in loops))
    if report["tool_success_rate"] is not None:
        lines.append(f"Tools:     {100 * report['tool_success_rate']:.1f}% of tool calls succeeded")
    shadow = report["shadow"]
    if shadow["runs"]:
        agreed = (
            f", LLM agreed with the rule answer in {100 * shadow['agreement_rate']:.0f}% of {shadow['judged']} judged"
            if shadow["agreement_rate"] is not None
            else ""
        )
        lines.append(f"Shadow:    {_count(shadow['runs'], 'run')}, ${shadow['cost_usd']:.6f} (in Spent){agreed}")
    rows = report["groups"]["rows"]
    if rows:
        width = max(len(k) for k in rows)
        peak = max(max(v["baseline_cost_usd"], v["actual_cost_usd"]) for v in rows.values()) or 1.0
        lines.append("")
        lines.append(f"{'by ' + report['groups']['by']:<{width}}  requests  spent / all-LLM")
        for key, v in rows.items():
            spent = round(_BAR_WIDTH * v["actual_cost_usd"] / peak)
            would = round(_BAR_WIDTH * v["baseline_cost_usd"] / peak)
            bar = ("█" * spent + "░" * max(0, would - spent)).ljust(_BAR_WIDTH)  # one scale, one column
            lines.append(
                f"{key:<{width}}  {int(v['requests']):>8}  {bar} "
                f"${v['actual_cost_usd']:.6f} / ${v['baseline_cost_usd']:.6f}"
            )
    return "\n".join(lines)


def simulate(
    decisions: Sequence[str],
    places_per_query: Sequence[int],
    *,
    model_cost: Callable[[int], float],
    per_day: int | None,
) -> dict[str, Any]:
    """Project daily and monthly LLM spend for a query log, all-LLM versus hybrid.

    DECISIONS are the routes the router took for each logged query; PLACES_PER_QUERY how many places each
    named; MODEL_COST(places) the estimated cost of one LLM answer about that many places.
    """
    total = len(decisions)
    counts = Counter(decisions)
    all_llm = sum(model_cost(max(1, n)) for n in places_per_query)
    hybrid = sum(model_cost(max(1, n)) for route, n in zip(decisions, places_per_query, strict=True) if route == "llm")
    scale = (per_day or total) / total if total else 0.0
    daily_all, daily_hybrid = all_llm * scale, hybrid * scale
    return {
        "queries": total,
        "per_day": per_day or total,
        "by_route": {route: counts.get(route, 0) for route in ROUTES},
        "rule_share": round(counts.get("rule", 0) / total, 4) if total else None,
        "daily_all_llm_usd": round(daily_all, 6),
        "daily_hybrid_usd": round(daily_hybrid, 6),
        "monthly_all_llm_usd": round(30 * daily_all, 4),
        "monthly_hybrid_usd": round(30 * daily_hybrid, 4),
        "monthly_saved_usd": round(30 * (daily_all - daily_hybrid), 4),
        # A model priced at $0 (self-hosted) costs nothing either way: nothing saved, not a division by zero.
        "saved_pct": round(100 * (1 - hybrid / all_llm), 2) if all_llm else 0.0,
    }

"""What the routing saved: the ledger's rows for a window of days, aggregated in SQL, and projections."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, get_args

from hybrid_weather.agent.errors import ConfigurationError

from ...understand import Decision, Route
from ..baseline import Baseline
from ..recorder import EMPTY
from ..store.rollup import (
    FEEDBACK_FIRST,
    caller_params,
    demo_rows,
    moment,
    not_demo,
    of_caller,
    percentile,
    query,
    read_window,
)

ROUTES = get_args(Route)


def savings_report(
    db: Any,
    days: int,
    *,
    now: dt.datetime | None = None,
    by: str | None = None,
    caller: str | None = None,
    include_demo: bool = False,
) -> dict[str, Any]:
    """The `savings --json` object (docs/contracts.md keys first, then the operator figures), aggregated in
    SQL over a sqlite3 or psycopg connection to the ledger. CALLER: only that caller's requests (shadow runs
    are nobody's: they are the operator's spend). A demo provider's rows only with INCLUDE_DEMO."""
    now = now or dt.datetime.now(dt.timezone.utc)
    since = now - dt.timedelta(days=days)
    window = read_window(db, since, caller, include_demo)
    shadows = [g for g in window.groups if g["route"] == "shadow"]
    groups_in = [g for g in window.groups if g["route"] != "shadow"]
    estimate = Baseline(groups_in, shadows)

    totals = _Totals(by or "day")
    for g in groups_in:
        totals.add(g, estimate)
    for g in shadows:
        totals.add_shadow(g)
    by_route, outcomes, actual, baseline = totals.by_route, totals.outcomes, totals.actual, totals.baseline
    saved = baseline - actual
    return {
        "days": days,
        "requests": sum(by_route.values()),
        "by_route": by_route,
        "by_outcome": {
            "ok": outcomes["ok"],
            "failed": sum(n for outcome, n in outcomes.items() if outcome not in ("ok", EMPTY)),
            "empty": outcomes[EMPTY],
        },
        "failures": {outcome: n for outcome, n in sorted(outcomes.items()) if outcome not in ("ok", EMPTY) and n},
        "invalid_rows": sum(g["invalid"] for g in window.groups),
        "actual_cost_usd": round(actual, 8),
        "baseline_cost_usd": round(baseline, 8),
        "saved_usd": round(saved, 8),
        "saved_pct": round(100 * saved / baseline, 2) if baseline > 0 else None,
        "latency_ms": _percentiles(window.latency),
        # The model's own time within those answers (its calls, retries included), bounded the same way.
        "model_ms": _percentiles(window.model_latency),
        "baseline_method": estimate.method,
        "baseline_sample": estimate.sample,
        "unknown_cost_requests": totals.unknown_cost,
        "llm_loops": {str(k): v for k, v in sorted(totals.loops.items())},
        "tool_success_rate": totals.tool_success_rate,
        "shadow": _shadow(shadows, totals.shadow_spend),
        "feedback": _feedback(db, since, by_route.get("rule", 0), caller, include_demo),
        "timeline": {day: totals.timeline[day] for day in sorted(totals.timeline)},  # per day (UTC) and route
        "groups": _overlay_groups(db, since, caller, include_demo)
        if by == "overlay"
        else {"by": by or "day", "rows": _rows(totals.groups)},
        # The window's rows a router on the demo provider wrote (synthetic weather): counted above only when
        # include_demo says so, and said either way.
        "demo_rows": demo_rows(db, since, caller),
        "include_demo": include_demo,
    }


class _Totals:
    """The window's groups of rows summed, as savings_report says them: by route, outcome, day and BY's group."""

    def __init__(self, by: str) -> None:
        self.by = by
        self.by_route = dict.fromkeys(ROUTES, 0)
        self.actual = self.baseline = self.shadow_spend = 0.0
        self.unknown_cost = self.tool_calls = self.tool_failures = 0
        self.loops: Counter[int] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.timeline: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(ROUTES, 0))
        self.groups: dict[str, dict[str, float]] = defaultdict(
            lambda: {"requests": 0, "actual_cost_usd": 0.0, "baseline_cost_usd": 0.0}
        )

    def add(self, g: dict[str, Any], estimate: Baseline) -> None:
        """One group of rows a user asked (G), its baseline priced by ESTIMATE."""
        n = g["requests"]
        self.by_route[g["route"]] = self.by_route.get(g["route"], 0) + n
        self.timeline[g["day"]][g["route"]] = self.timeline[g["day"]].get(g["route"], 0) + n
        self.outcomes[g["outcome"]] += n
        group = self.groups[_group_key(g, self.by)]
        group["requests"] += n
        if g["outcome"] != "ok":
            return  # failed or empty: no money was spent and none saved; counted and shown apart
        self.unknown_cost += n - g["priced"]
        base = estimate.of(g)
        self.actual += g["cost_usd"]
        self.baseline += base
        if g["route"] == "llm" and g["llm_loops"] >= 0:
            self.loops[g["llm_loops"]] += n
        self.tool_calls += g["tool_calls"]
        self.tool_failures += g["tool_failures"]
        group["actual_cost_usd"] += g["cost_usd"]
        group["baseline_cost_usd"] += base

    def add_shadow(self, g: dict[str, Any]) -> None:
        """One group of shadow runs: spent, though no user saw it, in the total and in its group alike."""
        self.shadow_spend += g["cost_usd"]
        self.actual += g["cost_usd"]
        self.groups[_group_key(g, self.by)]["actual_cost_usd"] += g["cost_usd"]

    @property
    def tool_success_rate(self) -> float | None:
        return round(1 - self.tool_failures / self.tool_calls, 4) if self.tool_calls else None


def _percentiles(latencies: dict[str, dict[float, int]]) -> dict[str, dict[str, float | None]]:
    """p50 and p95 per route of LATENCIES (the rollup's buckets): upper bounds, at most 5 % above the exact
    ones."""
    return {
        route: {"p50": percentile(latencies[route], 0.50), "p95": percentile(latencies[route], 0.95)}
        for route in ROUTES
        if latencies.get(route)
    }


def _shadow(shadows: list[dict[str, Any]], spent: float) -> dict[str, Any]:
    """The shadow runs of the window (SPENT: their cost), and how often the LLM agreed with the rules."""
    judged = sum(g["judged"] for g in shadows)
    return {
        "runs": sum(g["requests"] for g in shadows),
        "cost_usd": round(spent, 8),
        "agreement_rate": round(sum(g["agreed"] for g in shadows) / judged, 4) if judged else None,
        "judged": judged,
    }


def _rows(groups: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """The table's rows, a group each; rounded like the totals: sums of doubles in another order differ past
    the 15th digit."""
    return {
        k: {
            "requests": int(v["requests"]),
            "actual_cost_usd": round(v["actual_cost_usd"], 8),
            "baseline_cost_usd": round(v["baseline_cost_usd"], 8),
            "saved_usd": round(v["baseline_cost_usd"] - v["actual_cost_usd"], 8),
        }
        for k, v in sorted(groups.items())
    }


def _feedback(db: Any, since: dt.datetime, rule_answers: int, caller: str | None, demo: bool) -> dict[str, Any]:
    """How many rule answers of the window (CALLER's, if given; a demo provider's only with DEMO) users marked
    wrong, and their share of the rule answers."""
    (wrong,) = query(
        db,
        f"SELECT count(*) {FEEDBACK_FIRST} AND f.verdict = 'wrong' AND r.route = 'rule'"
        f" AND r.datetime_utc >= ?{not_demo(db, demo)}{of_caller(caller)}",
        (moment(db, since), *caller_params(caller)),
    )[0]
    wrong = int(wrong)
    share = round(wrong / rule_answers, 6) if rule_answers else None
    return {"rule_answers": rule_answers, "rule_marked_wrong": wrong, "rule_marked_wrong_share": share}


def _overlay_groups(db: Any, since: dt.datetime, caller: str | None, demo: bool) -> dict[str, Any]:
    """The window's requests by the overlay version they were read through (teach, learn; a canary runs
    two): how many, what they cost against the all-LLM baseline, the share the rules answered, how many
    failed, and how often shadow runs agreed. Read from the rows themselves: the rollup has no version."""
    rows = query(
        db,
        "SELECT overlay_version, sum(CASE WHEN route = 'shadow' THEN 0 ELSE 1 END), "
        "sum(CASE WHEN route = 'rule' THEN 1 ELSE 0 END), "
        f"sum(CASE WHEN route <> 'shadow' AND outcome NOT IN ('ok', '{EMPTY}') THEN 1 ELSE 0 END), "
        "sum(coalesce(cost_usd, 0)), sum(coalesce(baseline_cost_usd, 0)), "
        "sum(CASE WHEN agreement IS NULL THEN 0 ELSE 1 END), sum(CASE WHEN agreement THEN 1 ELSE 0 END) "
        f"FROM requests AS r WHERE datetime_utc >= ?{not_demo(db, demo)}{of_caller(caller)} GROUP BY 1",
        (moment(db, since), *caller_params(caller)),
    )
    groups = {}
    for version, requests, rules, failed, actual, baseline, judged, agreed in rows:
        requests, judged = int(requests or 0), int(judged or 0)
        groups["none" if version is None else f"v{version}"] = {
            "requests": requests,
            "actual_cost_usd": round(float(actual or 0), 8),
            "baseline_cost_usd": round(float(baseline or 0), 8),
            "saved_usd": round(float(baseline or 0) - float(actual or 0), 8),
            "rule_share": round(int(rules or 0) / requests, 4) if requests else None,
            "failed": int(failed or 0),
            "shadow_agreement_rate": round(int(agreed or 0) / judged, 4) if judged else None,
        }
    return {"by": "overlay", "rows": dict(sorted(groups.items()))}


def _group_key(g: dict[str, Any], by: str) -> str:
    if by == "route":
        return str(g["route"])
    if by == "aspect":
        return str(g["aspect"] or "-")
    if by == "model":
        return str(g["model"] or "(none)")
    return str(g["day"])


_BAR_WIDTH = 30  # characters for the largest amount in the chart


def plural(n: int, noun: str) -> str:
    return noun if n == 1 else noun + "s"


def _count(n: int, noun: str) -> str:
    """1 request, 2 requests."""
    return f"{n} {plural(n, noun)}"


#: Characters of a group's name the terminal view prints.
_KEY_CHARS = 40


def demo_line(report: dict[str, Any]) -> str | None:
    """What REPORT (savings' or misses') did with the window's demo rows, when it held any: a user who tried
    the demo provider is not surprised by figures that leave those answers out, or count them."""
    rows = report["demo_rows"]
    if not rows:
        return None
    if report["include_demo"]:
        return f"Demo:      {_count(rows, 'request')} answered from synthetic demo weather are included"
    return (
        f"Demo:      {_count(rows, 'request')} answered from synthetic demo weather left out "
        "(--include-demo counts them)"
    )


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
            f"{plural(outcomes['failed'] + outcomes['empty'], 'request')}: no spend and no saving"
        )
    if line := demo_line(report):
        lines.append(line)
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
    if report["model_ms"]:
        lines.append(
            "Model:     "
            + "; ".join(
                f"{route} p50 {v['p50']:.1f} ms, p95 {v['p95']:.1f} ms" for route, v in report["model_ms"].items()
            )
            + "  (the model's own time within the latency above)"
        )
    if report["llm_loops"]:
        loops = report["llm_loops"].items()
        lines.append("LLM loops: " + ", ".join(f"{_count(int(k), 'loop')}: {v}" for k, v in loops))
    if report["tool_success_rate"] is not None:
        lines.append(f"Tools:     {100 * report['tool_success_rate']:.1f}% of tool calls succeeded")
    marked = report["feedback"]
    if marked["rule_marked_wrong"]:
        lines.append(
            f"Feedback:  {marked['rule_marked_wrong']} of {marked['rule_answers']} rule answers marked wrong "
            f"({100 * marked['rule_marked_wrong_share']:.2f}%; hybrid-weather misses lists them)"
        )
    shadow = report["shadow"]
    if shadow["runs"]:
        agreed = (
            f", LLM agreed with the rule answer in {100 * shadow['agreement_rate']:.0f}% of {shadow['judged']} judged"
            if shadow["agreement_rate"] is not None
            else ""
        )
        lines.append(f"Shadow:    {_count(shadow['runs'], 'run')}, ${shadow['cost_usd']:.6f} (in Spent){agreed}")
    # A group's name is what the ledger holds (a model's name can be anything a program set): cut to a column.
    rows = [(k if len(k) <= _KEY_CHARS else k[: _KEY_CHARS - 1] + "…", v) for k, v in report["groups"]["rows"].items()]
    if rows:
        width = max(len(k) for k, _ in rows)
        peak = max(max(v["baseline_cost_usd"], v["actual_cost_usd"]) for _, v in rows) or 1.0
        lines.append("")
        lines.append(f"{'by ' + report['groups']['by']:<{width}}  requests  spent / all-LLM")
        for key, v in rows:
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


def simulate_log(
    log: Iterable[str],
    route: Callable[[str], Decision],
    *,
    model_cost: Callable[[int], float],
    per_day: int | None,
    name: str,
) -> dict[str, Any]:
    """simulate() for the queries of LOG's lines (one a line, or JSON Lines with a "query" field), each routed
    by ROUTE; a ConfigurationError naming NAME when LOG holds none."""
    routes, places = [], []
    for logged in _logged_queries(log):
        decision = route(logged)
        routes.append(decision.route)
        places.append(len(decision.cities))
    if not routes:
        raise ConfigurationError(f"{name} has no queries: give one per line, or JSON Lines with a query field")
    return simulate(routes, places, per_day=per_day, model_cost=model_cost)


def _logged_queries(lines: Iterable[str]) -> Iterable[str]:
    """The query on each line of a log: the line itself, or the "query" of a JSON Lines record; blanks skipped."""
    for line in lines:
        if query := _logged_query(line.strip()):
            yield query


def _logged_query(text: str) -> str | None:
    if not text.startswith("{"):
        return text or None
    try:
        record = json.loads(text)
    except ValueError:
        return text  # a question that happens to start with a brace
    logged = record.get("query") if isinstance(record, dict) else None
    return logged.strip() or None if isinstance(logged, str) else None


def render_simulation(result: dict[str, Any]) -> str:
    """The terminal view of simulate()'s projection, priced on RESULT's model."""
    by = result["by_route"]
    return "\n".join(
        [
            f"{result['queries']} queries: rule {by['rule']}, clarify {by['clarify']}, llm {by['llm']} "
            f"(rule share {100 * result['rule_share']:.1f}%)",
            f"At {result['per_day']:,} queries/day on {result['model']}:",
            f"  all-LLM  ${result['daily_all_llm_usd']:,.4f}/day  ${result['monthly_all_llm_usd']:,.2f}/month",
            f"  hybrid   ${result['daily_hybrid_usd']:,.4f}/day  ${result['monthly_hybrid_usd']:,.2f}/month",
            f"  saved    ${result['monthly_saved_usd']:,.2f}/month ({result['saved_pct']:.1f}%)",
        ]
    )

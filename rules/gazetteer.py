"""Places: Chinese administrative units, townships, world cities, countries and nicknames, and how a word
resolves to them.

Resolution order (the router relies on it): nickname table → exact names and short forms (countries, units)
→ for a word none of those holds, areas, townships and towns (towns.json, read on first use) → pinyin
repair of homophone typos (only for words in place position, only over provinces and prefectures, since
common words such as 背景/程度 sound like 北京/成都; never of a township's name) → unknown. A place said
after its parent is looked for among that parent's children only (within, slip_within).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from ._data import load_table
from ._kept import Kept
from .china_time import CHINA_TZ_NAME

#: township: a division below the county (镇, 乡, 街道); town: a town or neighbourhood only GeoNames lists.
PlaceLevel = Literal["province", "prefecture", "county", "world", "area", "township", "town", "geocoded"]
_LEVELS: dict[int, PlaceLevel] = {1: "province", 2: "prefecture", 3: "county"}
# When one word names several units, the city a person most likely means wins: a prefecture-level city
# (吉林 → 吉林市, 朝阳 → 朝阳市) over a province, a province over a county, any of these over abroad.
_LEVEL_RANK: dict[str, int] = {
    "prefecture": 0,
    "province": 1,
    "county": 2,
    "world": 3,
    "area": 4,
    "township": 5,
    "town": 6,
    "geocoded": 7,
}
#: The suffixes of a unit's name (广州市, 星落县): part of the name said, stripped only to repair a typo (杭洲市).
UNIT_SUFFIXES = ("市", "省", "区", "县", "镇", "乡")
#: The suffixes of a division below the county (下塘镇, 良渚街道): one said after a county or city lies in it.
TOWNSHIP_SUFFIXES = ("镇", "乡", "街道")
#: The levels a township may be said after, as where it lies (杭州市青禾镇, 长丰县下塘镇).
ABOVE_TOWNSHIP: frozenset[PlaceLevel] = frozenset({"province", "prefecture", "county"})
_MAX_READING_COMBINATIONS = 64
#: Towns with at least this many people recorded are taken as meant before a homophone-typo repair.
TOWN_MIN_POPULATION = 10_000
#: Where Chinese is written in traditional characters, and where Cantonese is spoken: a question written or
#: said so means the place there of a name a mainland county shares (大埔, 九龙).
WRITES_TRADITIONAL: frozenset[str] = frozenset({"HK", "MO", "TW"})
SPEAKS_CANTONESE: frozenset[str] = frozenset({"HK", "MO"})
#: A place outside the mainland with this many people recorded is the one its name means over a mainland
#: county of that name, however the question is written (九龙: Kowloon, not 甘孜州九龙县).
PROMINENT_POPULATION = 1_000_000
#: A Hong Kong or Macau area this large is as likely meant as a mainland county of its name (see _weighed).
COUNTY_SIZED_POPULATION = 100_000
_REGION_NAMES = {"HK": "香港", "MO": "澳门", "TW": "台湾"}
# Latin names shorter than this are not repaired; from _LONG_LATIN_NAME letters, two edits are allowed.
_MIN_LATIN_REPAIR_CHARS = 5
_LONG_LATIN_NAME = 9
_REPAIRS_KEPT = 4096
# Runs of Latin words whose look-up is kept (see lookup_latin).
_LATIN_RUNS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Place:
    """A place the weather can be fetched for."""

    name: str  #: canonical name as the gazetteer spells it: 上海市, 深圳市南山区, 东京
    display: str  #: short name for answers: 上海, 深圳市南山区, 东京
    level: PlaceLevel
    latitude: float
    longitude: float
    timezone: str
    country: str  #: ISO 3166 alpha-2
    adcode: str | None = None  #: Chinese administrative code (AMap uses it; a town's or area's is its county's)
    parent: str | None = None  #: adcode of the enclosing unit
    population: int = 0  #: recorded population, for towns of one name (0: not recorded)
    #: Whose latitude and longitude these are: the place's own, or (a township no source locates) its county's seat.
    coordinates: Literal["own", "county"] = "own"


class PlaceMatch(NamedTuple):
    """What one word resolves to: a single place, or several a person would have to choose from."""

    candidates: tuple[Place, ...]
    via: str  #: nickname, name, pinyin, latin
    #: The places of this name in Hong Kong, Macau or Taiwan, when a mainland county shares it: the one meant
    #: by a question written in traditional characters or said in Cantonese (see Gazetteer.as_written).
    beyond: tuple[Place, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


class Gazetteer:
    """All places the router knows, indexed by every spelling it accepts. Build once, share freely."""

    def __init__(self) -> None:
        places = load_table("places")
        aliases = load_table("aliases")
        # The indexes hold row numbers (the Chinese table's rows, then the world's), and a row's Place is made
        # the first time a question needs it: making all 5,270 up front, and hashing them to drop repeats,
        # was half of building the gazetteer and a tenth of a cold CLI run; a run meets a few.
        china, world = places["china"], places["world"]
        self._china_rows: list[list[Any]] = china["rows"]
        self._world_rows: list[list[Any]] = world["rows"]
        self._china_column = _columns(china)
        self._world_column = _columns(world)
        self._made: list[Place | None] = [None] * (len(self._china_rows) + len(self._world_rows))
        self._row_of_code: dict[str, int] = {}
        self._row_of_name: dict[str, int] = {}
        self._pinyin_keys: list[tuple[str, int]] = []
        by_word, latin = self._index_rows()
        self._by_word = {word: tuple(found) for word, found in by_word.items()}
        # Names a mainland county shares with a place in Hong Kong, Macau or Taiwan (大埔, 九龙): only these read
        # the towns table when looked up (rules/build_data.py lists them).
        self._shared = frozenset(places["shared"])
        #: 丹麦, 葡萄牙: a country by its usual Chinese name → its capital's row (answered as a province is).
        self._countries = {word: self._row_of_name[capital] for word, capital in places["countries"].items()}
        #: 大丰镇, 同安乡: townships named as a character or two and then a place (丰镇, 安乡), which the tokenizer
        #: reads as that place: the reader looks such a name up in the towns table (rules/reader.py).
        self.townships_around_places = frozenset(places["townships_around_places"])
        self._nicknames = {word: self._row_of_name[name] for word, name in aliases["nicknames"].items()}
        #: 襄樊, 盘州市: a unit's name from before or after the snapshot (jionlp's list of changes) → its row.
        self._renamed = {word: self._row_of_name[name] for word, name in places["renamed"].items()}
        self._ambiguous = {
            word: tuple(map(self._row_of_name.__getitem__, names)) for word, names in aliases["ambiguous"].items()
        }
        #: 北上广深, 京津冀, 江浙沪: several places in one word, each asked about.
        self.groups = {word: tuple(map(self._place_named, names)) for word, names in aliases["groups"].items()}
        #: 江南, 中原, 河西: a region first, though a district has that short name (南宁市江南区). A name all the
        #: same (a date after one is not cut into: 江南明天), but lookup() gives it no place.
        self.regions = frozenset(aliases["regions"])
        # Every word that names a place, in one set: is_place_word() asks of every few characters before a
        # date and of every token, and most are no place (one look-up, not three).
        self._place_words = frozenset(
            itertools.chain(
                self._by_word, self._nicknames, self._ambiguous, self.regions, self._countries, self._renamed
            )
        )
        for word, names in aliases["latin"].items():  # a name, or several a person would choose from (sz)
            names = [names] if isinstance(names, str) else names
            latin[_latin_key(word)] = [self._row_of_name[name] for name in names]
        self._latin = {key: tuple(dict.fromkeys(found)) for key, found in latin.items()}
        # Latin keys by the lengths a repair may look at, filled on first use: see _latin_near().
        self._latin_windows: dict[tuple[int, int], list[str]] = {}
        self._areas: dict[str, str] = aliases["areas"]
        # Each word's match, made on its first lookup and kept: lookup() is on every question's path, and
        # making all of them up front would be a noticeable part of a cold start.
        self._matches: dict[str, PlaceMatch] = {}
        # The same for runs of Latin words, which are any words (in, the, weather), so a bounded number of them.
        # An English question reads each of its words as the start of a name, so the same runs come back.
        self._latin_matches = Kept(self._lookup_latin, _LATIN_RUNS_KEPT)
        self._repair_index: _PinyinIndex | None = None
        # A misspelling is typed again and again, and a repair scans thousands of names (many times what
        # reading a whole question costs): the repairs of the most recent words are kept.
        self._latin_repairs: Callable[[str], Place | None] = functools.lru_cache(_REPAIRS_KEPT)(self._repair_latin)
        self._pinyin_repairs: Callable[[str], Place | None] = functools.lru_cache(_REPAIRS_KEPT)(self._repair)
        self._local: _LocalPlaces | None = None
        # Each unit's children's rows, by the unit's code: made on first use (a slip after a place, a capital).
        self._rows_under: dict[str, list[int]] | None = None
        self._prominence = 0.0
        self._unrecorded = 1
        # The codes enclosing each parent, made on first use: places named one after another (广州深圳东莞,
        # 北京朝阳) are each checked against the one before, and a chain of parents walked for each.
        self._enclosing: dict[str | None, frozenset[str]] = {}
        self._capitals: dict[str, Place] = {}  # a province's code → its capital, found when first asked (34 at most)

    def _index_rows(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Fill the indexes by code and name, and the pinyin keys; return the rows of each Han word and of each
        Latin key (pinyin without tones, GeoNames' English names: Harbin, Urumqi)."""
        by_word: dict[str, list[int]] = defaultdict(list)
        latin: dict[str, list[int]] = defaultdict(list)
        code_, name_, canonical_, short_, pinyin_, en_ = map(
            self._china_column.__getitem__, ("code", "name", "canonical", "short", "pinyin", "en")
        )
        for row, unit in enumerate(self._china_rows):
            self._row_of_code[unit[code_]] = row
            self._row_of_name[unit[canonical_]] = row
            for word in dict.fromkeys([unit[canonical_], unit[name_], *unit[short_]]):
                by_word[word].append(row)
            for reading in unit[pinyin_]:
                self._pinyin_keys.append((reading, row))
                latin[reading.translate(_NO_TONES)].append(row)
            for english in unit[en_]:
                latin[english].append(row)
        name_, names_, en_ = map(self._world_column.__getitem__, ("name", "names", "en"))
        for row, city in enumerate(self._world_rows, len(self._china_rows)):
            self._row_of_name[city[name_]] = row
            for word in city[names_]:
                by_word[word].append(row)
            latin[_latin_key(city[en_])].append(row)
        return by_word, latin

    def _place(self, row: int) -> Place:
        """The Place of ROW, made on first use and kept (a race makes two equal ones; either is kept)."""
        place = self._made[row]
        if place is None:
            place = self._made[row] = self._make(row)
        return place

    def _places(self, rows: Iterable[int]) -> tuple[Place, ...]:
        return tuple(map(self._place, rows))

    def _place_named(self, name: str) -> Place:
        return self._place(self._row_of_name[name])

    def place_of_code(self, adcode: str) -> Place | None:
        """The Chinese administrative unit with ADCODE, or None."""
        row = self._row_of_code.get(adcode)
        return None if row is None else self._place(row)

    def _make(self, row: int) -> Place:
        if row >= len(self._china_rows):
            city, column = self._world_rows[row - len(self._china_rows)], self._world_column
            name = city[column["name"]]
            return Place(
                name,
                name,
                "world",
                city[column["lat"]],
                city[column["lon"]],
                city[column["tz"]],
                city[column["country"]],
            )
        unit, column = self._china_rows[row], self._china_column
        level = _LEVELS[unit[column["level"]]]
        short, canonical = unit[column["short"]], unit[column["canonical"]]
        display = canonical if level == "county" else (short[-1] if short else unit[column["name"]])
        return Place(
            canonical,
            display,
            level,
            unit[column["lat"]],
            unit[column["lon"]],
            CHINA_TZ_NAME,
            "CN",
            unit[column["code"]],
            unit[column["parent"]],
        )

    def words(self) -> Iterable[str]:
        """Every Han spelling of a place, for the tokenizer's dictionary."""
        return itertools.chain(
            self._by_word,
            self._nicknames,
            self._ambiguous,
            self._areas,
            self.groups,
            self.regions,
            self._countries,
            self._renamed,
        )

    def units_named(self, word: str) -> tuple[Place, ...]:
        """The administrative units WORD names, a region's word too (江南 → 南宁市江南区)."""
        return self._places(self._by_word.get(word, ()))

    def parent_of(self, place: Place) -> Place | None:
        return self.place_of_code(place.parent) if place.parent else None

    def lookup(self, word: str) -> PlaceMatch | None:
        """Resolve a Han word: nickname first, then names and short forms; None if it names no place."""
        match = self._matches.get(word)
        if match is None and self.is_place_word(word) and word not in self.regions:
            if word in self._nicknames:
                match = PlaceMatch((self._place(self._nicknames[word]),), "nickname")
            elif word in self._ambiguous:
                match = PlaceMatch(self._places(self._ambiguous[word]), "nickname")
            elif word in self._renamed:
                match = PlaceMatch((self._place(self._renamed[word]),), "renamed")
            elif word in self._countries:
                capital = self._place(self._countries[word])
                match = PlaceMatch((dataclasses.replace(capital, display=f"{word}（{capital.display}）"),), "country")
            elif word in self._areas and all(self._place(row).level == "county" for row in self._by_word[word]):
                # 西湖, 东湖: a well-known area (a lake, a sight) before the districts elsewhere that share its
                # name; said with their suffix (西湖区) or beside their city (南昌西湖) the districts are meant.
                match = PlaceMatch((_area(word, self._place_named(self._areas[word])),), "local")
            else:
                match = PlaceMatch(_most_likely(self._places(self._by_word[word])), "name")
                if word in self._shared:
                    match = self._weighed(word, match)
            self._matches[word] = match  # one word, one value: a race stores the same match twice
        return match

    def _weighed(self, word: str, units: PlaceMatch) -> PlaceMatch:
        """UNITS, the mainland counties WORD names, weighed against the places of that name in Hong Kong, Macau
        and Taiwan: one of those with PROMINENT_POPULATION people is meant (九龙, 新北); a Hong Kong or Macau
        area of COUNTY_SIZED_POPULATION is asked about beside the county (大埔: 梅州市大埔县 or Tai Po); else the
        county is meant (蓝田, 永康). The places beyond stay on the match for a question written in traditional
        characters or said in Cantonese, which means one of them (see as_written)."""
        beyond = tuple(
            p
            for p in (*units.candidates, *self._local_places().get(word))
            if p.country in WRITES_TRADITIONAL and (p.level == "world" or p.population >= TOWN_MIN_POPULATION)
        )
        mainland = tuple(p for p in units.candidates if p.country == "CN")
        if not beyond or not mainland:
            return units
        # Named with where they are, so the question of which one reads 大埔（香港）, not 大埔 twice.
        beyond = tuple(
            dataclasses.replace(p, display=f"{p.name}（{_REGION_NAMES[p.country]}）")
            for p in self._prominent(tuple(dict.fromkeys(beyond)))
        )
        if beyond[0].population >= PROMINENT_POPULATION:
            return PlaceMatch(beyond[:1], "prominence", beyond)
        # Written in simplified characters a name is the mainland's, unless it is also a Hong Kong or Macau area
        # as large as a county, which visitors from the mainland ask about as they write: then, which one.
        visited = tuple(p for p in beyond if p.country in SPEAKS_CANTONESE and p.population >= COUNTY_SIZED_POPULATION)
        return PlaceMatch((*mainland, *visited), units.via, beyond)

    def as_written(self, match: PlaceMatch, regions: frozenset[str]) -> PlaceMatch:
        """MATCH as a question written or said as in REGIONS means it (see WRITES_TRADITIONAL and
        SPEAKS_CANTONESE): the one place of its name there, if there is one (大埔 in traditional characters or
        with Cantonese words is Tai Po, in Hong Kong); else MATCH."""
        there = [p for p in match.beyond if p.country in regions]
        if len(there) != 1 or match.candidates == (there[0],):
            return match
        return PlaceMatch((there[0],), "script")

    def is_place_word(self, word: str) -> bool:
        """Whether WORD names a place (cheaper than lookup() when the place itself is not needed)."""
        return word in self._place_words

    def lookup_latin(self, words: list[str]) -> tuple[int, PlaceMatch | None]:
        """The longest run of WORDS from the first that names a place in English or toneless pinyin
        (new york city, xiamen, xi'an), as (its number of words, the match); (0, None) when none does.
        Each word's key is made once for the runs of every length."""
        return self._latin_matches[tuple(words)]

    def _lookup_latin(self, words: tuple[str, ...]) -> tuple[int, PlaceMatch | None]:
        keys = [_latin_key(word) for word in words]
        for size in range(len(keys), 0, -1):
            found = self._latin.get("".join(keys[:size]) if size > 1 else keys[0])
            if found:
                return size, PlaceMatch(_most_likely(self._places(found)), "latin")
        return 0, None

    def repair_latin(self, word: str) -> Place | None:
        """The place a misspelled English or pinyin name means (shangahi, bejing), or None.

        Within one edit (two for long names; a swap of two letters counts as one) of exactly one place's
        name; shorter words are left alone, since short names are too close to one another.
        """
        key = _latin_key(word)
        return self._latin_repairs(key) if len(key) >= _MIN_LATIN_REPAIR_CHARS else None

    def _repair_latin(self, key: str) -> Place | None:
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        limit = 1 if len(key) < _LONG_LATIN_NAME else 2
        found = process.extract(
            key, self._latin_near(len(key), limit), scorer=OSA.distance, score_cutoff=limit, limit=8
        )
        if not found:
            return None
        best = min(distance for _, distance, _ in found)
        places = {
            p
            for choice, distance, _ in found
            if distance == best
            for p in _most_likely(self._places(self._latin[choice]))
        }
        return _single(places)

    def _latin_near(self, length: int, limit: int) -> list[str]:
        """The Latin keys that a word of LENGTH can be within LIMIT edits of: those whose length is within
        LIMIT of LENGTH (an edit changes a length by one at most): a repair scans only these, not every
        Latin key."""
        window = self._latin_windows.get((length, limit))
        if window is None:
            window = [key for key in self._latin if abs(len(key) - length) <= limit]
            self._latin_windows[(length, limit)] = window  # a race only builds the same list twice
        return window

    def lookup_local(self, word: str, *, minor: bool = True) -> PlaceMatch | None:
        """A well-known area or a town the names do not cover (张江, 鼓浪屿, 周庄, 九份), or None.

        Asked only for a word no unit, nickname or city has (the tables load on first use). With
        MINOR false, only areas and towns with a recorded population of at least TOWN_MIN_POPULATION:
        the rest yield to a typo repair (深镇 is a village, and a typo of 深圳). Of same-named towns, one
        with `prominence` times the recorded population of every other is the one meant; otherwise the
        user is asked which.
        """
        found = self._local_places().get(word, ())
        if not minor:
            found = tuple(p for p in found if p.level in ("area", "township") or p.population >= TOWN_MIN_POPULATION)
        if not found:
            return None
        return PlaceMatch(self._prominent(found), "local")

    def is_local_word(self, word: str) -> bool:
        """Whether WORD names an area, a township or a town (loads their table on first use)."""
        return self._local_places().has(word)

    def is_township_name(self, word: str) -> bool:
        """Whether WORD is a township's name in full, as the statistics bureau lists it (下塘镇, 蓝田开发区,
        津南开发区西区): exact evidence, where its name without the suffix (下塘) is not."""
        return self._local_places().is_township_name(word)

    def within(self, outer: PlaceMatch, word: str) -> Place | None:
        """The place named WORD that lies inside one of OUTER's candidates (北京 + 朝阳 → 北京市朝阳区,
        上海 + 张江 → 张江, 香港 + 九龙 → 九龙): units first, then areas and towns. A name that is the outer
        place again (北京北京, 成都，成都) is a repetition, not a place inside it."""
        units = self.units_named(word)
        if set(units) & set(outer.candidates):
            return None
        if outer.via == "country":  # 韩国釜山: a city of the country named before it
            return _single({p for p in units if p.country == outer.candidates[0].country})
        inside = self.inside(outer, units)
        if inside is None:
            inside = self.inside(outer, self._local_places().get(word, ()))
        return inside

    def slip_within(self, outer: PlaceMatch, word: str) -> tuple[Place, str] | None:
        """The one unit or township right inside OUTER's candidate whose name WORD is with one character slipped
        to another of the same sound, and that name (杭州 + 尚城区 → 杭州市上城区, 上城区: 尚 and 上 are both
        shang), or None (none, or several). The parent is the check a guess by sound needs: among its few
        children one name one slip away is no coincidence; among every name of the map it would be."""
        if len(word) < 2:
            return None
        found = {
            (child, name)
            for parent in outer.candidates
            for child, names in self._children_named(parent)
            for name in names
            if self._one_slip(word, name)
        }
        places = {child for child, _ in found}
        return min(found, key=lambda item: item[1]) if len(places) == 1 else None

    def _children_named(self, parent: Place) -> list[tuple[Place, tuple[str, ...]]]:
        """The units and townships whose parent is PARENT, each with the names it is said by."""
        if not parent.adcode:
            return []
        rows, column = self._china_rows, self._china_column
        name_, short_ = column["name"], column["short"]
        children = [(self._place(row), (rows[row][name_], *rows[row][short_])) for row in self._rows_of(parent.adcode)]
        if parent.level == "county":
            children.extend(self._local_places().under(parent.adcode))
        return children

    def _one_slip(self, word: str, name: str) -> bool:
        """Whether WORD is NAME with exactly one character replaced by one that sounds like it, tones aside."""
        if len(word) != len(name) or word == name:
            return False
        slips = [(a, b) for a, b in zip(word, name, strict=True) if a != b]
        if len(slips) != 1:
            return False
        readings = self._readings()
        said, meant = slips[0]
        toneless = {r.rstrip("012345") for r in readings.get(said, ())}
        return not toneless.isdisjoint(r.rstrip("012345") for r in readings.get(meant, ()))

    def _readings(self) -> dict[str, list[str]]:
        return self._pinyin_index().readings

    def _pinyin_index(self) -> _PinyinIndex:
        """The readings of names and characters, built on the first word that needs them (a repair, a slip)."""
        if self._repair_index is None:  # a race only builds it twice; both copies are equal
            self._repair_index = _PinyinIndex([(reading, self._place(row)) for reading, row in self._pinyin_keys])
        return self._repair_index

    def inside(self, outer: PlaceMatch, candidates: Iterable[Place]) -> Place | None:
        """The one of CANDIDATES that lies inside one of OUTER's candidates, or None (none, or several)."""
        outer_codes = {p.adcode for p in outer.candidates if p.adcode}
        found = [p for p in candidates if p.parent and self._enclosing_codes(p) & outer_codes]
        return found[0] if len(found) == 1 else None

    def capital_of(self, province: Place) -> Place | None:
        """The capital of PROVINCE (a province that holds prefectures), or None. The sources place a province
        at its seat (each of the 27 within 0.21° of one of its prefectures: tests/test_places.py holds them to
        the capitals), so its capital is the prefecture nearest that point."""
        if province.level != "province" or not province.adcode:
            return None
        capital = self._capitals.get(province.adcode)
        if capital is None:
            children = (self._place(row) for row in self._rows_of(province.adcode))
            prefectures = [p for p in children if p.level == "prefecture"]
            if not prefectures:
                return None
            capital = self._capitals[province.adcode] = min(
                prefectures,
                key=lambda p: (p.latitude - province.latitude) ** 2 + (p.longitude - province.longitude) ** 2,
            )
        return capital

    def _rows_of(self, parent: str) -> list[int]:
        """The rows of the units whose parent's code is PARENT, from an index of every unit's children (a scan of
        the table for each was a quarter of reading a question after a place)."""
        if self._rows_under is None:  # a race only builds it twice; both copies are equal
            parent_ = self._china_column["parent"]
            under: dict[str, list[int]] = {}
            for row, unit in enumerate(self._china_rows):
                if unit[parent_]:
                    under.setdefault(unit[parent_], []).append(row)
            self._rows_under = under
        return self._rows_under.get(parent, [])

    def encloses(self, outer: Place, inner: Place) -> bool:
        """Whether INNER lies inside OUTER (a unit with a code: a province, prefecture or county)."""
        return bool(outer.adcode) and outer.adcode in self._enclosing_codes(inner)

    def _local_places(self) -> _LocalPlaces:
        if self._local is None:  # a race only builds it twice; both copies are equal
            self._local = _LocalPlaces(self._areas, self._place_named, self.place_of_code)
            self._prominence, self._unrecorded = self._local.prominence, self._local.unrecorded
        return self._local

    def _prominent(self, found: tuple[Place, ...]) -> tuple[Place, ...]:
        """FOUND, places of one name, or the one a person means by it: recorded with TOWN_MIN_POPULATION people
        or more and `prominence` times every other, one not recorded counting as the median township recorded
        (towns.json's "unrecorded": ~20,000): 虎门 is 东莞's (191,891). Otherwise all of them, so the user is
        asked which (乌镇: 桐乡's, of 60,000, or 佳县's, not recorded)."""
        if len(found) == 1:
            return found
        ranked = sorted(found, key=lambda p: -p.population)
        top, runner_up = ranked[0].population, ranked[1].population or self._unrecorded
        if top >= TOWN_MIN_POPULATION and top >= self._prominence * runner_up:
            return (ranked[0],)
        return tuple(ranked)

    def _enclosing_codes(self, place: Place) -> frozenset[str]:
        """The codes of every unit PLACE lies in: its parent's, that one's parent's, and so on."""
        codes = self._enclosing.get(place.parent)
        if codes is None:
            chain: set[str] = set()
            current = self.parent_of(place)
            while current is not None and current.adcode and current.adcode not in chain:
                chain.add(current.adcode)
                current = self.parent_of(current)
            codes = self._enclosing[place.parent] = frozenset(chain)  # one per parent: a few thousand at most
        return codes

    def repair(self, word: str, *, by_characters: bool = False) -> Place | None:
        """The province or prefecture WORD is a homophone typo of (杭洲 → 杭州市), or None.

        Exact readings with tones first, then without tones, then fuzzy pinyin; a tie between two
        different places is no answer, since guessing would be worse than asking. A word read as a phrase
        (单位, dan1 wei4; 背景, bei4 jing3) is read so, not with every reading of each character (单 is also
        shan4, and 单位 is no typo of 汕尾); BY_CHARACTERS reads every word character by character (what
        rules/build_data.py asks, to find those words).
        """
        said = next((suffix for suffix in UNIT_SUFFIXES if word.endswith(suffix) and len(word) > 2), "")
        word = word.removesuffix(said)
        if not 2 <= len(word) <= 5:
            return None
        place = self._repair(word, by_characters=True) if by_characters else self._pinyin_repairs(word)
        # 府新区 is no slip of 阜新市: a repair changes the sounds said, not the kind of unit (杭洲市 → 杭州市).
        return place if place is None or place.name.endswith(said) else None

    def sounds_like(self, word: str) -> Place | None:
        """The province or prefecture WORD, as said (no suffix taken off: 深镇 is 深圳 misheard), sounds like."""
        return self._pinyin_repairs(word) if 2 <= len(word) <= 5 else None

    def _repair(self, word: str, *, by_characters: bool = False) -> Place | None:
        return self._pinyin_index().find(word, by_characters=by_characters)


class _LocalPlaces:
    """Areas, townships and towns by word. The table is read once (a column per field and each word's rows, all
    parsed by json), and a town's Place is only made when a question names it: most of the 45,000 never are."""

    def __init__(
        self, areas: dict[str, str], place_named: Callable[[str], Place], place_of_code: Callable[[str], Place | None]
    ) -> None:
        table = load_table("towns")
        self.prominence = float(table["prominence"])
        self.unrecorded = int(table["unrecorded"])
        self._place_of_code = place_of_code
        self._columns: dict[str, list[Any]] = table["columns"]
        self._rows_of: dict[str, int | list[int]] = table["words"]
        self._areas = {word: _area(word, place_named(unit_name)) for word, unit_name in areas.items()}
        self._made: dict[str, tuple[Place, ...]] = {}
        self._under: dict[str, dict[int, list[str]]] | None = None

    def has(self, word: str) -> bool:
        return word in self._areas or word in self._rows_of

    def is_township_name(self, word: str) -> bool:
        rows = self._rows_of.get(word)
        if rows is None:
            return False
        names, codes = self._columns["name"], self._columns["code"]
        return any(names[row] == word and codes[row] is not None for row in ([rows] if isinstance(rows, int) else rows))

    def under(self, county: str) -> list[tuple[Place, tuple[str, ...]]]:
        """The townships and towns whose county is COUNTY, each with its words (an index made on first use: only
        a slip inside a path asks for it)."""
        if self._under is None:
            under: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
            parents = self._columns["parent"]
            for word, rows in self._rows_of.items():
                for row in [rows] if isinstance(rows, int) else rows:
                    under[parents[row]][row].append(word)
            self._under = under
        return [(self._town(row), tuple(words)) for row, words in self._under.get(county, {}).items()]

    def get(self, word: str, default: tuple[Place, ...] = ()) -> tuple[Place, ...]:
        if word in self._areas:  # a hand-kept area is the one meant
            return (self._areas[word],)
        rows = self._rows_of.get(word)
        if rows is None:  # kept only for the table's words: every other word a question holds would grow it
            return default
        if word not in self._made:
            self._made[word] = tuple(map(self._town, [rows] if isinstance(rows, int) else rows))
        return self._made[word] or default

    def _town(self, row: int) -> Place:
        """Row ROW's Place. A township is named with its county's full name before it (杭州市余杭区良渚街道: a
        program reading `cities` knows which one) and shown with it after (良渚街道（杭州市余杭区）); a GeoNames
        town, whose county is only the nearest seat's, is shown with it."""
        columns = self._columns
        name, parent = columns["name"][row], columns["parent"][row]
        county = self._place_of_code(parent)
        township = columns["code"][row] is not None
        if township and county is not None:
            full, display = county.name + name, f"{name}（{county.name}）"
        elif county is not None and county.level == "county":
            full, display = name, f"{name}（{county.name}）"
        else:
            full = display = name
        return Place(
            full,
            display,
            "township" if township else "town",
            columns["lat"][row],
            columns["lon"][row],
            columns["tz"][row],
            columns["country"][row],
            parent,
            parent,
            columns["population"][row],
            "own" if columns["own"][row] else "county",
        )


class _PinyinIndex:
    """Readings of province and prefecture names, built on the first typo the router meets."""

    def __init__(self, keys: list[tuple[str, Place]]) -> None:
        table = load_table("pinyin")
        self.readings: dict[str, list[str]] = {ch: r.split(",") for ch, r in table["readings"].items()}
        #: Words read as phrases that every reading of each character would take for a place (单位: dan1 wei4).
        self.phrases: dict[str, str] = table["phrases"]
        self.toned: dict[str, set[Place]] = defaultdict(set)
        # toneless key → {place: its syllables}
        self.toneless: dict[str, dict[Place, tuple[str, ...]]] = defaultdict(dict)
        for reading, place in keys:
            self.toned[reading].add(place)
            self.toneless[reading.translate(_NO_TONE_DIGITS)][place] = tuple(
                r.rstrip("012345") for r in reading.split()
            )
        # IME-style fuzzy key → {place: its syllables}
        self.fuzzy: dict[tuple[str, ...], dict[Place, tuple[str, ...]]] = defaultdict(dict)
        for syllables_of in self.toneless.values():
            for place, syllables in syllables_of.items():
                self.fuzzy[tuple(_fuzzy_syllable(x) for x in syllables)][place] = syllables
        # For the names of each length, the fuzzy syllables at each place in them: a word with a character
        # none of whose sounds is at its place in a name cannot be one, under any of the readings below.
        self.fuzzy_at: dict[int, list[set[str]]] = {}
        for key in self.fuzzy:
            for at, syllable in enumerate(key):
                self.fuzzy_at.setdefault(len(key), [set() for _ in key])[at].add(syllable)
        # A character's fuzzy syllables, made when asked for: only characters with readings ask, so never more
        # than the table holds.
        self._sounds: dict[str, frozenset[str]] = {}

    def find(self, word: str, *, by_characters: bool = False) -> Place | None:
        per_char = self.readings_of(word, by_characters=by_characters)
        if not all(per_char) or not self._may_be_a_name(word, per_char):
            return None
        return self.find_by_readings(per_char)

    def readings_of(self, word: str, *, by_characters: bool = False) -> list[list[str]]:
        """The toned readings of each character of WORD (of the phrase WORD is, where it is one)."""
        phrase = None if by_characters else self.phrases.get(word)
        return [[r] for r in phrase.split()] if phrase else [self.readings.get(ch, []) for ch in word]

    def find_by_readings(self, per_char: list[list[str]]) -> Place | None:
        """The one place a word of these readings (PER_CHAR, none empty) names, compared with every name:
        find() without its shortcut (tests/test_repair_shortcuts.py holds the two to the same answers)."""
        combos = list(itertools.islice(itertools.product(*per_char), _MAX_READING_COMBINATIONS))
        toned = [" ".join(c) for c in combos]
        for index, keys in ((self.toned, toned), (self.toneless, [k.translate(_NO_TONE_DIGITS) for k in toned])):
            hits = {p for key in keys for p in index.get(key, ())}
            if hits:
                return _single(hits)
        # Fuzzy pinyin as input methods define it (z/zh, c/ch, s/sh, n/l, an/ang, en/eng, in/ing): the
        # confusions people type and speakers make (重亲 → 重庆). One syllable must match outright, so a
        # phrase that merely sounds alike throughout is not taken for a place.
        hits = set()
        for combo in dict.fromkeys(tuple(r.rstrip("012345") for r in c) for c in combos):
            for place, syllables in self.fuzzy.get(tuple(_fuzzy_syllable(x) for x in combo), {}).items():
                if any(a == b for a, b in zip(syllables, combo, strict=True)):
                    hits.add(place)
        return _single(hits) if hits else None

    def _may_be_a_name(self, word: str, per_char: list[list[str]]) -> bool:
        """False when no reading of WORD, fuzzy and with every reading of each character, is a name's: what
        any stage of find() matches is one of these. A character with no sound at its place in a name of
        its length ends it at once (明添, 霍格沃茨); else the fuzzy readings are looked up whole (一共),
        unless there are too many of them to be cheaper than find() itself."""
        places = self.fuzzy_at.get(len(word))
        if places is None:
            return False
        sounds_at = []
        for syllables, char, readings in zip(places, word, per_char, strict=True):
            sounds = self._sounds.get(char)
            if sounds is None:
                sounds = self._sounds[char] = frozenset(_fuzzy_syllable(r.rstrip("012345")) for r in readings)
            if syllables.isdisjoint(sounds):
                return False
            sounds_at.append(sounds)
        if math.prod(map(len, sounds_at)) > _MAX_READING_COMBINATIONS:
            return True
        return any(key in self.fuzzy for key in itertools.product(*sounds_at))


_FUZZY_INITIALS = (("zh", "z"), ("ch", "c"), ("sh", "s"), ("l", "n"))
_FUZZY_FINALS = (("iang", "ian"), ("uang", "uan"), ("ang", "an"), ("eng", "en"), ("ing", "in"))


@functools.lru_cache(maxsize=2048)  # a few hundred syllables, each asked for again and again in every repair
def _fuzzy_syllable(syllable: str) -> str:
    for a, b in _FUZZY_INITIALS:
        if syllable.startswith(a):
            syllable = b + syllable[len(a) :]
            break
    for a, b in _FUZZY_FINALS:
        if syllable.endswith(a):
            return syllable[: -len(a)] + b
    return syllable


def _area(word: str, unit: Place) -> Place:
    """The well-known area WORD (外滩, 西湖), answered with the weather of UNIT, the district that holds it, and
    named with it (上海市黄浦区外滩: a program reading `cities` knows where), shown as said."""
    return Place(
        unit.name + word, word, "area", unit.latitude, unit.longitude, unit.timezone, "CN", unit.adcode, unit.adcode
    )


def _columns(table: dict[str, Any]) -> dict[str, int]:
    """Where each column of TABLE (a data file's "columns" and "rows") is in a row."""
    return {name: at for at, name in enumerate(table["columns"])}


def _single(places: set[Place]) -> Place | None:
    if not places:
        return None
    ranked = _most_likely(tuple(places))
    return ranked[0] if len(ranked) == 1 else None


def _most_likely(found: tuple[Place, ...]) -> tuple[Place, ...]:
    """The places of the highest rank among FOUND (a prefecture-level city over a county). Two of one rank
    are all returned, so the user is asked which: 朝阳区 is in Beijing and in Changchun, and no data here
    says which one a person means."""
    best_rank = min(_LEVEL_RANK[p.level] for p in found)
    return tuple(dict.fromkeys(p for p in found if _LEVEL_RANK[p.level] == best_rank))


#: Pinyin as a Latin name is written: no tones, no spaces (xian for 西安).
_NO_TONES = str.maketrans("", "", "0123456789 ")
#: Toneless syllables still apart: a typo repair reads syllable by syllable (僩, xian, is not 西安, xi an).
_NO_TONE_DIGITS = str.maketrans("", "", "0123456789")


def _latin_key(word: str) -> str:
    word = word.lower()
    # Most words are letters only (shanghai, tokyo) and most names of several words letters and spaces (new
    # york): the key without a pass over its characters in Python.
    if word.isalpha():
        return word
    joined = word.replace(" ", "")
    return joined if joined.isalpha() else "".join(ch for ch in word if ch.isalpha())

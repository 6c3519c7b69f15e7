"""Read a normalised question into its parts: places, aspects, comparison words and what is left over.

The Reader owns the tokenizer, gazetteer and lexicon (built once, shared by every thread); the router
decides from a Reading, and the LLM's weather tools resolve the place names a model sends with it.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from .dates import DateSpan, date_words, find_dates, parse_number
from .gazetteer import (
    ABOVE_TOWNSHIP,
    SPEAKS_CANTONESE,
    TOWNSHIP_SUFFIXES,
    UNIT_SUFFIXES,
    WRITES_TRADITIONAL,
    Gazetteer,
    PlaceMatch,
)
from .lexicon import ROLES, Aspect, Lexicon, ThresholdSide
from .normalize import normalize, to_simplified, writes_traditional
from .sound_alike import SoundAlikes
from .tokenizer import Tokenizer

# English place names run to three words at most (new york city, rio de janeiro).
_LATIN_WINDOW = 3

_UNIT_SUFFIX_SET = frozenset(UNIT_SUFFIXES)
# How many tokens on either side of a run not understood a township's name may take in: the tokenizer cuts a
# name it does not know into the words it does (肥东|经济|开发区|管理|委员会).
_TOWNSHIP_REACH = 4
#: The roles whose words only mark where they stand (和, 不对, 不是, 离), and the field of _Found (and of the
#: Reading) that keeps their indexes.
_MARKS = {"conjunction": "conjunction_at", "correction": "correction_at", "negation": "negation_at", "link": "link_at"}

#: A token list with None where a date expression was cut out (dates are found before segmentation).
Tokens = list[str | None]


class Threshold(NamedTuple):
    """A temperature a yes-no question asks about (会超过30度吗: above 30; 会到零下吗 is no figure)."""

    side: ThresholdSide
    degrees: float


#: A place a question names: (token index, word, match). A follow-up's places, borrowed from the last answer,
#: stand at negative indexes, before the question's first token.
PlaceAt = tuple[int, str, PlaceMatch]
#: A run of tokens not understood: (first index, last index, text).
UnknownRun = tuple[int, int, str]


class Reading(NamedTuple):
    """What the walk over a question's tokens found. Immutable, so that what the Reader found stays as found:
    a later step that reads more into a question (a place found for a word not understood, a correction, a
    follow-up's borrowing from the last answer: router/understand/follow_up.py's FollowUp) makes a new Reading
    with `_replace`. A NamedTuple, not a frozen dataclass: as immutable, and built much faster (every
    question makes one or more)."""

    places: tuple[PlaceAt, ...] = ()
    aspects: tuple[Aspect, ...] = ()
    cold: bool = False
    hot: bool = False
    compare: bool = False
    asks_which: bool = False  #: a compare word that asks which of several (哪个, 谁, 比), not only 更 or 一点
    trend: str | None = None  #: "cold" for 降温, "hot" for 回暖
    spread: bool = False  #: 温差: the range of temperature is asked
    #: Places a follow-up refers to (这两个城市 → 2; 0 means all recent ones); not `count`, which is the tuple's
    #: own method.
    place_count: int | None = None
    conjunction_at: tuple[int, ...] = ()
    leader_at: tuple[int, ...] = ()
    correction_at: tuple[int, ...] = ()  #: 不对, 我是说: what follows replaces what came before
    negation_at: tuple[int, ...] = ()  #: 不是, 不要: the place or date that follows is excluded
    link_at: tuple[int, ...] = ()  #: 离, 从, 之间: what joins the places of a distance question
    unknown: tuple[UnknownRun, ...] = ()
    #: The temperature a yes-no question asks about, if it names exactly one with a side (超过30度, 零度以下).
    threshold: Threshold | None = None

    @property
    def says_weather(self) -> bool:
        """Whether any word asks about the weather: an aspect, how it feels, a change or a comparison (not
        a question whose only words of the weather are the default one, 北京明天)."""
        return bool(self.aspects or self.cold or self.hot or self.compare or self.trend or self.spread)


@dataclass(slots=True)
class _Found:
    """What the walk has found so far: Reading's fields, changed as the walk goes, then given out as a Reading
    (Reader.read). Its fields hold tuples, which the Reading takes as they are: most questions add one or two
    items to a few of them, and the rest stay the empty tuple, so nothing is copied at the end."""

    places: tuple[PlaceAt, ...] = ()
    aspects: tuple[Aspect, ...] = ()
    cold: bool = False
    hot: bool = False
    compare: bool = False
    asks_which: bool = False
    trend: str | None = None
    spread: bool = False
    place_count: int | None = None
    conjunction_at: tuple[int, ...] = ()
    leader_at: tuple[int, ...] = ()
    correction_at: tuple[int, ...] = ()
    negation_at: tuple[int, ...] = ()
    link_at: tuple[int, ...] = ()
    unknown: tuple[UnknownRun, ...] = ()
    threshold: Threshold | None = None
    # The walk's own state, not the Reading's: where the last word of how the weather feels (冷, 晒) was, for its
    # complements; where the last of an aspect other than temperature (湿度) was, for 高 and 低; how many
    # temperatures were named with a figure (30度).
    felt_at: int = -2
    measured_at: int = -2
    figures: int = 0


class Reader:
    """Segments and reads questions with the router's own vocabulary. Thread-safe after construction."""

    def __init__(self) -> None:
        self.gazetteer = Gazetteer()
        self.lexicon = Lexicon()
        self.tokenizer = Tokenizer(itertools.chain(self.gazetteer.words(), self.lexicon.words()))
        self._sound_alikes: SoundAlikes | None = None
        #: Each role of the lexicon's words → its handler (rules/lexicon.py names the roles).
        self._handlers: dict[str, Callable[[_Found, Tokens, int, str], int]] = {
            role: functools.partial(self._read_mark, _MARKS[role]) if role in _MARKS else getattr(self, f"_read_{role}")
            for role in ROLES
        }
        # Words with a role that are read as places first, where they are one (a place's name, a group of places,
        # a place's suffix): the few the lexicon and the gazetteer share.
        lexicon = self.lexicon
        self._places_first = frozenset(
            word
            for word in lexicon.role_of
            if self.gazetteer.is_place_word(word) or word in self.gazetteer.groups or word in lexicon.place_suffixes
        )
        self._date_characters: frozenset[str] | None = None

    @property
    def sound_alikes(self) -> SoundAlikes:
        """The vocabulary's pinyin index, built on the first word the router does not know."""
        if self._sound_alikes is None:  # a race only builds it twice; both copies are equal
            lexicon = self.lexicon
            function_words = itertools.chain(lexicon.fillers, lexicon.compare, lexicon.counts)
            content = itertools.chain(lexicon.aspect_of, lexicon.cold, lexicon.hot, date_words())
            self._sound_alikes = SoundAlikes(function_words, content=content, particles=lexicon.particle_chars)
        return self._sound_alikes

    def may_say_a_day(self, word: str) -> bool:
        """Whether WORD, not understood, may say a day the router cannot read (dec12, 第一个, 腊八): it holds a
        figure, a Latin letter, or a character of a date word (月, 号, 周, 初, 节)."""
        if self._date_characters is None:  # a race only builds it twice; both copies are equal
            self._date_characters = frozenset("".join(date_words())) | frozenset("一二三四五六七八九十廿卅两")
        return any(
            char.isdigit() or (char.isascii() and char.isalpha()) or char in self._date_characters for char in word
        )

    def names_weather(self, clean: str, today: dt.date) -> bool:
        """Whether CLEAN asks about the weather in words (天气, 下雨, 冷, 温差, 日出), not just names a place
        (or asks how far apart two are)."""
        reading = self.read(self.tokens(clean, self.dates(clean, today)))
        weather = [aspect for aspect in reading.aspects if aspect != "distance"]
        return bool(weather or reading.cold or reading.hot or reading.spread or reading.trend)

    def dates(self, clean: str, today: dt.date) -> list[DateSpan]:
        """The date spans of CLEAN, none starting inside a place's name: 昆明后天 is 昆明 and 后天, not
        昆 and 明后天 (the spans are found before the tokenizer sees the places)."""
        spans = find_dates(clean, today)
        for index, span in enumerate(spans):
            start, end = span.start, span.end
            if end - start < 2 or self._place_ends(clean, max(0, start - 4), start, start):
                continue  # nothing to cut, or a place ends where the date starts (浦东明天): nothing to take back
            for cut in range(start + 1, min(end, start + 3)):
                if self._place_ends(clean, max(0, cut - 4), start, cut):
                    # Read on past the span's end: the date after the place may be longer than what was left
                    # of the span (昆明后日: 明后 was found, 后日 is meant), though not into the next span.
                    limit = spans[index + 1].start if index + 1 < len(spans) else len(clean)
                    rest = [r for r in find_dates(clean[cut:limit], today) if r.start == 0][:1]
                    spans[index : index + 1] = [r._replace(start=cut, end=r.end + cut) for r in rest]
                    break
        return spans

    def _place_ends(self, clean: str, first: int, last: int, cut: int) -> bool:
        """Whether a place's name ends at CUT, beginning between FIRST and LAST (excluded). A loop, not
        any() over a generator: this runs for every date of every question."""
        for begin in range(first, last):  # noqa: SIM110 - any() over a generator is the cost this avoids
            if self.gazetteer.is_place_word(clean[begin:cut]):
                return True
        return False

    def tokens(self, clean: str, spans: list[DateSpan]) -> Tokens:
        """The tokens of normalised CLEAN, with one None standing where each date span was cut out."""
        tokens: Tokens = []
        position = 0
        for span in spans:
            tokens.extend(self.tokenizer.split(clean[position : span.start]))
            tokens.append(None)
            position = span.end
        tokens.extend(self.tokenizer.split(clean[position:]))
        return tokens

    def with_townships(self, tokens: Tokens, reading: Reading) -> Tokens | None:
        """TOKENS with the township named where a run was not understood made one token (下|塘|镇 → 下塘镇,
        城关|镇 → 城关镇, 长泰县 陈|巷|镇 → 长泰县 陈巷镇): the tokenizer knows the counties, not the 41,000
        townships, whose table loads only here. None when no run holds one. See _township_in."""
        runs = sorted({*reading.unknown, *self._misplaced(reading, tokens)}) if reading.places else reading.unknown
        replaced = False
        for first, last, _ in reversed(runs):
            found = self._township_in(tokens, first, last)
            if found is not None:
                start, end = found
                name = "".join(t for t in tokens[start : end + 1] if t is not None)
                tokens = [*tokens[:start], name, *tokens[end + 1 :]]
                replaced = True
        return tokens if replaced else None

    def with_slip_repaired(self, tokens: Tokens, reading: Reading) -> tuple[Tokens, str, str] | None:
        """TOKENS with a name said right after its parent with one character slipped to another of its sound
        (杭州 尚城区, 长丰县 下糖镇) written as the parent's child it means, and (what was said, what is meant);
        None unless exactly one such repair holds a run not understood (see Gazetteer.slip_within)."""
        found = set()
        places = {index: match for index, _, match in reading.places}
        for first, last, _ in reading.unknown:
            for start in range(max(1, first - 1), first + 1):
                outer = places.get(start - 1)
                if outer is None:
                    continue
                for end in range(last, min(len(tokens), last + _TOWNSHIP_REACH)):
                    part = tokens[start : end + 1]
                    if None in part:
                        break
                    said = "".join(part)  # type: ignore[arg-type]  # no None, checked above
                    repaired = self.gazetteer.slip_within(outer, said)
                    if repaired is not None:
                        found.add((start, end, said, repaired[1]))
        if len(found) != 1:
            return None
        start, end, said, meant = found.pop()
        return [*tokens[:start], meant, *tokens[end + 1 :]], said, meant

    def _misplaced(self, reading: Reading, tokens: Tokens) -> list[UnknownRun]:
        """Places said right after a county they do not lie in (突泉县太平乡: 平乡县 is in 河北), each as a run a
        township's name may hold, the tokens between them too (太, a word of degree). After a city or province
        a place is more often another one compared (广州深圳哪个热), and its townships are rarely said so. And
        a place's suffix right after a place (蓝田开发区, 平遥古城) and a character or two before one (大丰镇):
        a township may be named so in full."""
        around = self.gazetteer.townships_around_places
        # The reader joins a suffix to the place before it, at the suffix's index (蓝田 开发区: 蓝田开发区 at 1).
        runs = [(at, at, word) for at, word, _ in reading.places if word in around]
        # A character or two the tokenizer cut from the front of a township's name that ends as a place's (大丰镇).
        for at, word, _ in reading.places:
            for cut in (1, 2):
                said = tokens[at - cut : at + 1] if at - cut >= 0 else [None]
                if None not in said and "".join(said) in around:  # type: ignore[arg-type]  # no None, checked
                    runs.append((at - cut, at, word))
        for (before, _, outer), (at, word, match) in itertools.pairwise(reading.places):
            if (
                0 <= before < at <= before + 2
                and all(p.level == "county" for p in outer.candidates)
                and self.gazetteer.inside(outer, match.candidates) is None
            ):
                runs.append((before + 1, at, word))
        return runs

    def _township_in(self, tokens: Tokens, first: int, last: int) -> tuple[int, int] | None:
        """The tokens (start, end) of the longest township name that starts and ends on a token's edge, within
        _TOWNSHIP_REACH tokens of the run FIRST..LAST, and leaves of the run only places (长泰县, before a name
        made up with a unit's suffix: the county stays a place). A name without its suffix (下塘) takes in no
        place and no word of two characters besides the run: those were read as something already."""
        gazetteer = self.gazetteer
        best: tuple[int, int, int] | None = None  # (characters, start, end)
        low, high = max(0, first - _TOWNSHIP_REACH), min(len(tokens) - 1, last + _TOWNSHIP_REACH)
        for start in range(low, last + 1):
            for end in range(max(start, first), high + 1):
                part = tokens[start : end + 1]
                if None in part:
                    break
                name = "".join(part)  # type: ignore[arg-type]  # no None, checked above
                if (best is not None and len(name) <= best[0]) or not gazetteer.is_local_word(name):
                    continue
                left = [tokens[i] for i in range(first, last + 1) if not start <= i <= end]
                if any(t is not None and not gazetteer.is_place_word(t) for t in left):
                    continue
                besides = [t for i, t in enumerate(part, start) if not first <= i <= last]
                if any(t is not None and (len(t) > 1 or gazetteer.is_place_word(t)) for t in besides) and not (
                    gazetteer.is_township_name(name)
                ):
                    continue
                best = (len(name), start, end)
        return None if best is None else (best[1], best[2])

    def read(self, tokens: Tokens, clean: str = "") -> Reading:
        """Give every token its role; runs of tokens with none are collected as unknown. CLEAN, the normalised
        text of TOKENS, lets a made-up name with a unit's suffix be read as one (see _made_up_names). Each role
        has its handler (_ROLE_HANDLERS); a word with none may be a place, a group of places, a suffix, a
        figure with its unit, or not understood (_read_other)."""
        found = _Found()
        handlers, role_of, places_first = self._handlers, self.lexicon.role_of, self._places_first
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token is None:
                index += 1
            elif token.isascii() and token[0].isalpha():
                known = len(found.aspects)
                index = self._read_latin(tokens, index, found)
                if len(found.aspects) > known and found.aspects[-1] != "temperature":
                    found.measured_at = index - 1  # aqi高, pm2.5低
            elif (role := role_of.get(token)) is None or token in places_first:
                index = self._read_other(found, tokens, index, token)
            else:
                index = handlers[role](found, tokens, index, token)
        if (found.unknown or found.places) and not _UNIT_SUFFIX_SET.isdisjoint(clean):
            self._made_up_names(tokens, found, clean)  # a set check first: most questions say no suffix
        unknown = found.unknown
        if unknown:
            unknown = tuple([run for run in unknown if not self._is_wrapper(run, tokens)])
        # 超过30度还是低于20度, 20度到30度: more than one figure is not one temperature asked about.
        threshold = found.threshold if found.figures <= 1 else None
        return Reading(
            found.places,
            found.aspects,
            found.cold,
            found.hot,
            found.compare,
            found.asks_which,
            found.trend,
            found.spread,
            found.place_count,
            found.conjunction_at,
            found.leader_at,
            found.correction_at,
            found.negation_at,
            found.link_at,
            unknown,
            threshold,
        )

    def _read_other(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        """A word with no role of the lexicon's (or one that is also a place's name): a place, a group of places
        (北上广深), a place's suffix, the complement of a feeling, a verb of the weather word after it, a figure
        with its unit, particles, or a word not understood. Returns the index of the next token."""
        lexicon = self.lexicon
        match = self.gazetteer.lookup(token)
        if match is None and (group := self.gazetteer.groups.get(token)) is not None:
            for place in group:  # 北上广深: each of its places, as if named one by one
                found.places += ((index, place.display, PlaceMatch((place,), "group")),)
        elif token in lexicon.place_suffixes and _after_place(found.places, index):
            self._add_place(found, index, token, match)  # 平遥古城: the place itself, or a unit inside
        elif match is not None:
            self._add_place(found, index, token, match)
        elif token in lexicon.place_suffixes:
            pass  # 西塘古镇: the town is the unknown word before it
        elif (role := lexicon.role_of.get(token)) is not None:
            return self._handlers[role](found, tokens, index, token)  # a place's name the gazetteer gives no place
        elif index == found.felt_at + 1 and token in lexicon.complements:
            found.felt_at = index  # 冻死人了: part of the feeling before it, as 冷死了 is one word
        elif _verb_before_its_word(lexicon, tokens, index):
            pass  # 飘雪, 起雾, 转晴, 继续下雨: the verb of the word of the weather after it
        elif (value := _value_with_unit(lexicon, tokens, index + (token in lexicon.minus_signs))) is not None:
            end, aspect = value  # 30度, 二十五度, 零度, 5级, 负5度: is it that warm, or that windy
            if aspect == "temperature":
                found.figures += 1
                found.threshold = _threshold(lexicon, tokens, index, end)
            found.aspects += (aspect,)
            return end
        elif not lexicon.is_particles(token):
            _add_unknown(found, index, token)
        return index + 1

    def _read_filler(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        lexicon = self.lexicon
        if token == "会" and self._says_capital(found, tokens, index) and self._to_capital(found, tokens, index):
            pass  # 江苏省会和安徽省会: the tokenizer took 省 into the province, and 会 is its 省会
        elif token in lexicon.purposes and not _goes_to_the_place_before(lexicon, found.places, tokens, index):
            _add_unknown(found, index, token)  # 还能玩吗, 北京好玩吗: not why one goes there
        elif token in lexicon.place_leaders:
            if token in lexicon.whereabouts and _after_place(found.places, index):
                _add_unknown(found, index, token)  # 上海人在北京: a Shanghainese, not where one is
            else:
                found.leader_at += (index,)
        return index + 1

    def _read_aspect(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        lexicon = self.lexicon
        aspect = lexicon.aspect_of[token]
        if token in lexicon.feeling:
            found.felt_at = index
        elif aspect != "temperature":
            found.measured_at = index
        found.aspects += (aspect,)
        found.cold |= token in lexicon.cold
        found.hot |= token in lexicon.hot
        found.trend = lexicon.trend.get(token, found.trend)
        found.spread |= token in lexicon.spread
        return index + 1

    def _read_temperature(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        lexicon = self.lexicon
        if index == found.measured_at + 1 and token in lexicon.degrees:
            return index + 1  # 湿度高, 降水概率低: how much of the aspect before, not how warm
        found.felt_at = index
        found.aspects += ("temperature",)  # 好冷, 更暖和: said of the temperature
        found.cold |= token in lexicon.cold
        found.hot |= token in lexicon.hot
        return index + 1

    def _read_compare(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        found.compare = True
        found.asks_which |= token not in self.lexicon.comparatives
        return index + 1

    def _read_count(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        found.place_count = self.lexicon.counts[token]
        return index + 1

    def _read_capital(self, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        if not self._to_capital(found, tokens, index):
            _add_unknown(found, index, token)  # 公司首府, 日本首都: no province's capital
        return index + 1

    @staticmethod
    def _read_mark(field: str, found: _Found, tokens: Tokens, index: int, token: str) -> int:
        """A word that only marks where it stands (和, 不对, 不是, 离): its index, kept in FIELD of _MARKS."""
        setattr(found, field, (*getattr(found, field), index))
        return index + 1

    def _says_capital(self, found: _Found, tokens: Tokens, index: int) -> bool:
        """Whether the 会 at INDEX ends a 省会 whose 省 the province before took (江苏省会和…, 河北省会明天…): it
        comes right after a province said with 省 and before no verb (a conjunction, a date, 城市 or the end);
        before a verb it is the modal (江苏省会下雨吗: will it rain)."""
        if not found.places or found.places[-1][0] != index - 1 or not found.places[-1][1].endswith("省"):
            return False
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        return following is None or following in ("", "城市", "的") or following in self.lexicon.conjunctions

    def _to_capital(self, found: _Found, tokens: Tokens, index: int) -> bool:
        """Read the province said right before the capital word at INDEX (的 between or not) as its capital:
        湖南的省会 → 长沙. False when no province that holds cities is there."""
        if not found.places:
            return False
        at, word, match = found.places[-1]
        if at != index - 1 and not (at == index - 2 and tokens[index - 1] == "的"):
            return False
        # Every unit the word names: 吉林 is a city and a province, and only a province has a capital.
        capitals = {self.gazetteer.capital_of(p) for p in (*match.candidates, *self.gazetteer.units_named(word))}
        capitals.discard(None)
        if len(capitals) != 1:
            return False
        capital = capitals.pop()
        if capital is None:
            return False
        found.places = (*found.places[:-1], (at, word, PlaceMatch((capital,), match.via)))
        return True

    def _made_up_names(self, tokens: Tokens, found: _Found, clean: str) -> None:
        """Read a name said with a unit's suffix that no place has (某某市, 阿斯达斯县, 新北京市, 东海岸市, 大美丽市)
        as one word not understood, the whole name: never the place its longest known part names (新北, 东海).
        The name runs back from the suffix over words not understood, places and adjectives of size (大, 小),
        and holds two characters or more before the suffix, one at least of no place; a name of places only is
        a place inside another (深圳市南山区) or a unit said with another's suffix (邵东市)."""
        unknown_at = {i for first, last, _ in found.unknown for i in range(first, last + 1)}
        place_at = {index for index, _, _ in found.places}
        # 杭州市青禾镇: a county or a city before a township's suffix is where the township lies, not part of its
        # name (新北京市 is one made-up name; 杭州市 | 青禾镇 is a path, whose child no list holds).
        parent_at = {
            index for index, _, match in found.places if all(p.level in ABOVE_TOWNSHIP for p in match.candidates)
        }
        measures = self.lexicon.measures
        for end, token in enumerate(tokens):
            if token is None or not (
                token in UNIT_SUFFIXES or (end in place_at and len(token) > 2 and token.endswith(UNIT_SUFFIXES))
            ):
                continue
            first, unplaced = end, 0
            below_county = token in TOWNSHIP_SUFFIXES
            while (
                first > 0
                and (before := tokens[first - 1]) is not None
                and not (below_county and first - 1 in parent_at)
                and (first - 1 in unknown_at or first - 1 in place_at or (len(before) == 1 and before in measures))
            ):
                first -= 1
                unplaced += 0 if first in place_at else len(before)
            name = "".join(t for t in tokens[first : end + 1] if t is not None)
            if unplaced == 0 or len(name) - 1 < 2 or self.gazetteer.is_place_word(name) or name not in clean:
                continue  # 青山湖市, 深圳市南山区: places only; 本市: no name; 上海市: a place's own name
            found.places = tuple([place for place in found.places if not first <= place[0] <= end])
            runs = [run for run in found.unknown if run[1] < first or run[0] > end]
            found.unknown = tuple(sorted([*runs, (first, end, name)]))
            return

    def regions_written(self, text: str) -> frozenset[str]:
        """Where TEXT, a question as said, is written or spoken as: in traditional characters (Hong Kong, Macau,
        Taiwan), with Cantonese words (Hong Kong, Macau), both (Hong Kong, Macau); empty when in neither way."""
        said = SPEAKS_CANTONESE if self.lexicon.says_cantonese(to_simplified(text)) else None
        if writes_traditional(text):
            return WRITES_TRADITIONAL & said if said else WRITES_TRADITIONAL
        return said or frozenset()

    def is_filler(self, token: str | None) -> bool:
        """Whether TOKEN is a word that carries no meaning of its own here (的, 请问, 哈哈)."""
        if token is None:
            return False
        lexicon = self.lexicon
        return token in lexicon.fillers or lexicon.is_particles(token) or lexicon.latin_role.get(token) == "filler"

    def _is_wrapper(self, run: tuple[int, int, str], tokens: Tokens) -> bool:
        """An unknown run that only wraps the question: a stutter (嗯嗯, 那个那个) or an assistant's wake
        name said twice or with 同学 (小艺小艺, 小爱同学) before the question starts."""
        first, _, text = run
        half = len(text) // 2
        if len(text) % 2 == 0 and 1 <= half <= 3 and text[:half] == text[half:]:
            return True
        at_start = all(self.is_filler(t) for t in tokens[:first])
        return at_start and text.startswith("小") and (text.endswith("同学") and 3 <= len(text) <= 5)

    def resolve_place(self, text: str) -> PlaceMatch | None:
        """The one place TEXT names, as a question would read it (北京朝阳, 魔都, 杭洲, Tokyo); else None."""
        reading = self.read(list(self.tokenizer.split(normalize(text))))
        if len(reading.unknown) == 1 and not reading.places:
            repaired = self.gazetteer.repair(reading.unknown[0][2])
            return PlaceMatch((repaired,), "pinyin") if repaired else None
        if reading.unknown or len(reading.places) != 1:
            return None
        return reading.places[0][2]

    def _read_latin(self, tokens: Tokens, index: int, found: _Found) -> int:
        """Read English or pinyin words at INDEX; return the index after them."""
        words: list[str] = []
        for token in tokens[index : index + _LATIN_WINDOW]:
            if token is None or not token.isascii() or not token[0].isalpha():
                break
            words.append(token)
        size, match = self.gazetteer.lookup_latin(words)
        if match is not None:
            self._add_place(found, index, " ".join(words[:size]), match)
            return index + size
        lexicon, word = self.lexicon, words[0]
        role = lexicon.latin_role.get(word, "")
        if word in lexicon.aspect_of:  # pm2.5, aqi
            found.aspects += (lexicon.aspect_of[word],)
        elif word in lexicon.latin_aspect_of:
            found.aspects += (lexicon.latin_aspect_of[word],)
        elif role == "conjunction":
            found.conjunction_at += (index,)
        elif word in lexicon.place_leaders:  # in, at: a place follows in English
            found.leader_at += (index,)
        elif role != "filler":
            _add_unknown(found, index, word)
        return index + 1

    def _add_place(self, found: _Found, index: int, word: str, match: PlaceMatch | None) -> None:
        """Add the place WORD at INDEX; a name right after another place may be inside it (广东省广州市,
        北京朝阳, 上海张江, 香港九龙) or a suffix that names it again (平遥古城, 黄山景区)."""
        places = found.places
        if _after_place(places, index):
            _, outer_word, outer = places[-1]
            if match is not None and set(match.candidates) == set(outer.candidates):
                return  # 北京北京, 成都，成都: said twice
            inner = self.gazetteer.within(outer, word)
            if inner is not None:
                via = match.via if match is not None and inner in match.candidates else "local"
                found.places = (*places[:-1], (index, outer_word + word, PlaceMatch((inner,), via)))
                return
            if word in self.lexicon.place_suffixes:
                found.places = (*places[:-1], (index, outer_word + word, outer))
                return
        if match is not None:
            found.places = (*places, (index, word, match))

    def add_place(self, reading: Reading, index: int, word: str, match: PlaceMatch) -> Reading:
        """READING with a place found for an unknown word (a town, a repaired typo), joined as _add_place
        joins one."""
        places = reading.places
        if _after_place(places, index):
            _, outer_word, outer = places[-1]
            inner = self.gazetteer.inside(outer, match.candidates)
            if inner is not None:
                joined = (index, outer_word + word, PlaceMatch((inner,), match.via))
                return reading._replace(places=(*places[:-1], joined))
        return reading._replace(places=tuple(sorted([*places, (index, word, match)], key=lambda item: item[0])))


def _after_place(places: tuple[PlaceAt, ...], index: int) -> bool:
    return bool(places) and places[-1][0] == index - 1


def _add_unknown(found: _Found, index: int, token: str) -> None:
    unknown = found.unknown
    if unknown and unknown[-1][1] == index - 1:
        first, _, text = unknown[-1]
        found.unknown = (*unknown[:-1], (first, index, text + token))
    else:
        found.unknown = (*unknown, (index, index, token))


def _goes_to_the_place_before(lexicon: Lexicon, places: tuple[PlaceAt, ...], tokens: Tokens, index: int) -> bool:
    """Whether the token at INDEX follows a verb of going and a place (去北京出差, 到上海开会): why one goes."""
    return index >= 2 and _after_place(places, index) and tokens[index - 2] in lexicon.going_to


def _value_with_unit(lexicon: Lexicon, tokens: Tokens, index: int) -> tuple[int, Aspect] | None:
    """(the index after it, the unit's aspect) of a figure at INDEX and the unit after it (30度, 二十五度 —
    the tokenizer gives a Han numeral a character at a time —, 2.5度, 5级), or None."""
    end = index
    while end < len(tokens) and _is_numeral(tokens[end]):
        end += 1
    following = tokens[end] if index < end < len(tokens) else None
    aspect = lexicon.units.get(following) if following is not None else None
    return (end + 1, aspect) if aspect is not None else None


def _threshold(lexicon: Lexicon, tokens: Tokens, first: int, end: int) -> Threshold | None:
    """The temperature a figure at FIRST (its unit just before END) asks about, with the side a word says:
    before it (超过30度, 低于零下十度, 能到10度) or after its unit (零度以下); None without one, or where 到 joins
    two figures (20到30度: a range)."""
    minus = tokens[first] in lexicon.minus_signs  # 负5度: the minus sign read with the figure
    degrees = _number("".join(token for token in tokens[first + minus : end - 1] if token is not None))
    if degrees is None:
        return None
    before = first - 1
    if before >= 0 and tokens[before] in lexicon.minus_signs:  # 零下十度: a word of its own before the figure
        degrees, before = -degrees, before - 1
    elif minus:
        degrees = -degrees
    after = tokens[end] if end < len(tokens) else None
    side = lexicon.threshold_after.get(after) if after is not None else None
    if side is None and before >= 0 and (word := tokens[before]) is not None:
        side = lexicon.threshold_before.get(word)
        if side is not None and before >= 1 and _is_numeral(tokens[before - 1]):
            return None
        if side == "at_least" and degrees < 0 and not any(t and t.startswith("最高") for t in tokens[:before]):
            # 会到零下十度吗, 能到负5度吗: the low reaching down to it; not where the high is named (最高能到零下5度吗)
            side = "at_most"
    return Threshold(side, degrees) if side is not None else None


def _is_numeral(token: str | None) -> bool:
    return token is not None and _number(token) is not None


def _number(text: str) -> float | None:
    """The figure TEXT says (30, 2.5, 二十五), or None. Tokens are normalised, so their digits are ASCII (NFKC
    makes ² and ３ so); other digits, which float() and int() refuse, are no figure."""
    if text.replace(".", "", 1).isdigit():
        return float(text) if text.isascii() else None
    number = parse_number(text)
    return None if number is None else float(number)


def _verb_before_its_word(lexicon: Lexicon, tokens: Tokens, index: int) -> bool:
    """Whether the token at INDEX is a verb (飘, 起, 转) right before a word it goes with (雪 of 飘雪, 雾 of 起雾)."""
    aspects = lexicon.verb_before.get(tokens[index] or "")
    if aspects is None or index + 1 >= len(tokens):
        return False
    following = tokens[index + 1]
    return following is not None and lexicon.aspect_of.get(following) in aspects

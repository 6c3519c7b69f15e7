"""The router's word lists: aspects, fillers, comparisons, conjunctions, counts and open-ended markers."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Any, Literal, cast, get_args

from ._data import load_table
from .normalize import HAS_LATIN
from .trie import trie_pattern, words_pattern

#: What a weather question asks about; the Decision contract's `aspect` values.
Aspect = Literal["weather", "temperature", "rain", "snow", "wind", "humidity", "air", "distance", "sun", "uv"]
ASPECTS: tuple[Aspect, ...] = get_args(Aspect)
#: Which side of a temperature a yes-no question asks: above it, at it or above, below, at it or below.
ThresholdSide = Literal["above", "at_least", "below", "at_most"]
#: The roles a word of the lexicon plays in a question, in the order a word on two lists takes them (the first);
#: rules/reader.py reads each with a handler of its own.
ROLES = (
    "aspect",
    "compare",
    "conjunction",
    "count",
    "correction",
    "negation",
    "capital",
    "temperature",
    "filler",
    "link",
)
#: Open-ended questions whose answer rests on the weather (适合出游吗, 穿什么): without a model, their
#: weather part still helps. Any other kind (多远, 订机票, 行程) has a weather part only where it names one.
WEATHER_ADVICE = frozenset({"advice"})


class Lexicon:
    """Word → role tables built from rules/data/lexicon.json. Build once, share freely."""

    def __init__(self) -> None:
        data = load_table("lexicon")
        self._aspects(data)
        self._fillers(data)
        self._operators(data)
        self._weather_words(data)
        self._place_words(data)
        self._roles(data)
        self._open_ended_words(data)

    def _aspects(self, data: dict[str, Any]) -> None:
        """The aspects the words name (天气, 下雨, 湿度), Han and Latin, checked against the Decision's."""
        latin_aspects = {
            role.partition(":")[2]: words for role, words in data["latin"].items() if role.startswith("aspect:")
        }
        unknown = (set(data["aspects"]) | set(latin_aspects)) - set(ASPECTS)
        if unknown:  # a typo in the hand-kept table would otherwise become a new, undocumented aspect
            raise ValueError(f"lexicon.json names aspects the Decision contract lacks: {sorted(unknown)}")
        self.aspect_of: dict[str, Aspect] = {
            w: cast(Aspect, aspect) for aspect, words in data["aspects"].items() for w in words
        }
        #: English and pinyin aspect words (weather, xiayu); Han ones (and pm2.5, aqi) are in aspect_of.
        self.latin_aspect_of: dict[str, Aspect] = {
            w: cast(Aspect, aspect) for aspect, words in latin_aspects.items() for w in words
        }

    def _fillers(self, data: dict[str, Any]) -> None:
        """Words said around a question that ask nothing (请问, 帮我查), and the kinds of them that matter."""
        self.fillers = frozenset(w for words in data["fillers"].values() for w in words)
        #: 人在, 坐标, 住在: where the asker is (人在北京) — not right after a place (上海人在北京: a Shanghainese).
        self.whereabouts = frozenset(data["fillers"]["whereabouts"])
        #: 出差, 玩, 开会: why the asker goes; a filler only right after a verb of going and its place.
        self.purposes = frozenset(data["fillers"]["purpose"])
        #: Living, working, travelling (上班, 住, 上学): fillers beside a question of the weather, unless they
        #: are what is asked (明天还要去上班吗, 能上学吗).
        self.living = frozenset(data["fillers"]["living"])
        #: What says where someone is (在, 人在, 坐标): a date right before one is not the date asked.
        self.where_one_is = ("在", *data["fillers"]["whereabouts"])
        #: Modal particles and interjections: a token made only of these is a filler (哈哈哈, 嗯嗯, 喂喂).
        self.particle_chars = frozenset(data["particle_chars"])

    def _operators(self, data: dict[str, Any]) -> None:
        """Words that act on other words: corrections, negations, retractions, replacements, capitals."""
        #: 不对, 我是说: the places and dates after one replace those before it.
        self.corrections = frozenset(data["corrections"])
        #: 不是, 不要: the place or date that follows is excluded; with none after it, those said right before it
        #: (常州就不用了), where others stand.
        self.negations = frozenset(data["negations"])
        #: Negations that are nothing else (去掉, 跳过): one that takes nothing back leaves a question unread.
        self.retractions = frozenset(data["retractions"])
        #: Corrections that replace only the place or date right before them (烟台换成威海).
        self.replacements = frozenset(data["replacements"])
        #: 省会, 首府: right after a province, its capital (湖南的省会 → 长沙).
        self.capitals = frozenset(data["capitals"])

    def _weather_words(self, data: dict[str, Any]) -> None:
        """Conjunctions, comparisons and the words of how the weather feels and how much of it there is."""
        self.conjunctions = frozenset(data["conjunctions"])
        self.compare = frozenset(data["compare"])
        #: 更, 冷一点: compare words that compare with something unsaid (the others ask which: 哪个, 谁, 比).
        self.comparatives = frozenset(data["comparatives"])
        self.cold = frozenset(data["cold"])
        self.hot = frozenset(data["hot"])
        #: Words of how the weather feels: cold, hot, and the others (晒, 闷).
        self.feeling = self.cold | self.hot | frozenset(data["felt"])
        #: Right after a word of how it feels, how strongly or by whom (冻人, 冻死人, 冷得要命, 冻手); nothing else.
        self.complements = frozenset(data["complements"])
        #: 高, 低: right after a word of another aspect, how much of it (湿度高); elsewhere, of the temperature.
        self.degrees = frozenset(data["degrees"])
        #: 度, 级: right after a figure, a value of their aspect (30度, 零度, 5级); 度 alone is the temperature's.
        self.units: dict[str, Aspect] = {unit: cast(Aspect, aspect) for unit, aspect in data["units"].items()}
        #: 大, 多少: how much of an aspect (雨大吗); in a question that names none, of something unknown (北京大吗).
        self.measures = frozenset(data["measures"])
        #: Which side of a temperature a word asks (超过30度: above; 到10度: at_least; 零度以下: at_most), said
        #: before the figure, or (threshold_after) after its unit.
        sides = {word: side for side, words in data["threshold_sides"].items() for word in words}
        if not set(sides.values()) <= set(get_args(ThresholdSide)):  # a typo would be a side no answer knows
            raise ValueError(f"lexicon.json names threshold sides beyond {get_args(ThresholdSide)}")
        self.threshold_after: dict[str, ThresholdSide] = {
            word: cast(ThresholdSide, sides[word]) for word in data["threshold_after"]
        }
        self.threshold_before: dict[str, ThresholdSide] = {
            word: cast(ThresholdSide, side) for word, side in sides.items() if word not in self.threshold_after
        }
        #: 零下, 负: before a figure, below zero (零下十度, 负5度).
        self.minus_signs = frozenset(data["minus_signs"])
        #: Verbs that are part of the word of the weather right after them, and nothing elsewhere, with the
        #: aspects of the words they may go before: 飘, 落, 来 fall (飘雪, 落小雨), 起, 刮起 arise (起雾, 刮起大风),
        #: 转, 放, 继续 change or go on (转晴, 放晴, 继续下雨). A verb on two lists goes before the words of both.
        self.verb_before: dict[str, frozenset[Aspect]] = {}
        for kind, aspects in _VERBS_BEFORE.items():
            for verb in data[kind]:
                self.verb_before[verb] = self.verb_before.get(verb, frozenset()) | aspects

    def _place_words(self, data: dict[str, Any]) -> None:
        """Counts, and the words said about places: leaders, suffixes, landmarks, links, where to go."""
        #: 两个 → 2, 三个 → 3, 几个 → 0 (all of them): how many places a follow-up refers to.
        self.counts: dict[str, int] = dict(data["counts"])
        #: Fillers after which an unknown word stands where a place would (查一下杭洲的天气, 去纳尼亚).
        self.place_leaders = frozenset(data["place_leaders"])
        #: 古城, 景区, 古镇, 国家森林公园: after a place's name they mean the place itself (平遥古城, 黄山景区); after a
        #: word not known, that word is the place looked up (乌镇古镇 → 乌镇), as 市 and 区 are stripped from names.
        self.place_suffixes = frozenset(data["place_suffixes"])
        #: 塔, 寺, 公园, 大学, 路: what ends the name of a sight, a building or a street (大雁塔, 明孝陵, 南京路),
        #: longest first. Such a word right after a known place lies inside it and asks nothing of its own.
        self.landmark_suffixes = tuple(sorted(data["landmark_suffixes"], key=len, reverse=True))
        #: 公园, 广场, 火车站, 路: what ends the name of a feature every city has; said with no place (人民公园), a
        #: name in many cities, whose city is asked for (never geocoded: a geocoder would pick one of them).
        self.city_features = tuple(sorted(data["city_features"], key=len, reverse=True))
        #: 公园, 路, 广场: the city features named after places in city after city (中山公园, 北京路, 人民广场).
        self.named_after_places = frozenset(data["named_after_places"])
        self._cantonese_words: list[str] = data["cantonese"]
        self._cantonese: re.Pattern[str] | None = None  # compiled on the first question with a shared place name
        #: 离, 从, 之间: they join the two places of a distance question (广州离深圳多远) and nothing else.
        self.distance_links = frozenset(data["distance_links"])
        #: 温差: the day's range of temperature, or the difference between places.
        self.spread = frozenset(data["spread"])
        #: 去, 到 before places joined by 还是 (去北京还是上海): which place to go to, when no weather word is said.
        self.going_to = frozenset(data["where_to_go"]["verbs"])
        self.choice_ors = frozenset(data["where_to_go"]["ors"])
        #: 能, 会 before 到, 到达: whether one gets somewhere (明天三点能到上海吗), when no weather word is said.
        self.arriving = frozenset(data["where_to_go"]["arrives"])
        self.arriving_modals = frozenset(data["where_to_go"]["modals"])
        #: 吗, 么, 不, 没有: what ends a yes-no question (去北京吗: whether one goes).
        self.yes_no = frozenset(data["where_to_go"]["yes_no"])
        self.perfective = frozenset(data["where_to_go"]["perfective"])  #: 了, 过: 到了北京, 北京到了
        #: 去北京, 到上海, 在广州, 住在深圳: what, right before a place, says one goes or is there.
        self.going_or_being = self.going_to | frozenset(self.where_one_is)

    def _roles(self, data: dict[str, Any]) -> None:
        """Each word's role (ROLES) and the words that ask (吗, 多少)."""
        #: 降温 / 回暖: a change from today, so the asked day is compared with today.
        self.trend: dict[str, str] = {w: way for way, words in data["trend"].items() for w in words}
        #: Each word's role, in the order Reader.read tries them (a word on two lists takes the first): one
        #: look-up for a token instead of up to nine set lookups (a filler was the ninth).
        self.role_of: dict[str, str] = {}
        words_of: dict[str, Iterable[str]] = {
            "aspect": self.aspect_of, "compare": self.compare, "conjunction": self.conjunctions, "count": self.counts,
            "correction": self.corrections, "negation": self.negations, "capital": self.capitals,
            "temperature": self.cold | self.hot, "filler": self.fillers, "link": self.distance_links,
        }  # fmt: skip
        for role in ROLES:
            for word in words_of[role]:
                self.role_of.setdefault(word, role)
        #: Question words and a forecast's nouns (吗, 多少, 怎么样, 天气预报): a question that holds none asks
        #: nothing of the weather its words name (莫文蔚阴天, 帮我买一把雨伞: titles and things).
        #: The words that end in a question particle ask too (冷吗, 热吗: the tokenizer keeps them whole).
        particles = tuple(word for word in data["asking"] if len(word) == 1 and word in self.yes_no | {"呢", "嘛"})
        self.asking = frozenset(data["asking"]) | {word for word in self.role_of if word.endswith(particles)}

    def _open_ended_words(self, data: dict[str, Any]) -> None:
        """What asks more than a lookup: copulas, addressees, open-ended markers, the sun's time."""
        #: 是, 属于: with no word of the weather, they ask what a place is (成都是四川的省会吗), not its weather.
        self.copulas = frozenset(data["copulas"])
        #: 你, 您, and the verbs after them that ask the assistant to look something up (你知道, 你帮我查).
        self.addressees = frozenset(data["addressed"]["addressees"])
        self.lookup_verbs = frozenset(data["addressed"]["lookup_verbs"])
        self._open_category = {m: category for category, markers in data["open_ended"].items() for m in markers}
        # Whether to go out (能出门, 要不要出门 — 要出门 once the A-not-A fold has run —, 该不该出去): advice.
        going_out = data["going_out"]
        #: 能, 要, 该: before a verb of going out (能出门) or of living (要上班), they ask whether to.
        self.going_out_modals = frozenset(going_out["modals"])
        for modal, verb in itertools.product(going_out["modals"], going_out["verbs"]):
            self._open_category.setdefault(modal + verb, "advice")
        # Longest marker first, so the reason names the most specific marker.
        self._open_pattern = _longest_first(self._open_category)
        self._open_or_purpose: re.Pattern[str] | None = None  # strip_open_ended's
        # Aspect words that hold an open-ended marker (几点日出 holds 几点, which alone asks for knowledge):
        # inside them the marker asks nothing open.
        shielding = [w for w in self.aspect_of if self._open_pattern.search(w)]
        self._shielding = _longest_first(shielding) if shielding else None
        # 几点, 什么时候: in a question that names a sun event they ask its time (日落时间是几点), which the sun
        # answer gives; anywhere else they are knowledge markers (几点下雨: the hour of rain is not looked up).
        self._when = re.compile(words_pattern(data["when"]))
        self._sun = _longest_first(
            w for w, aspect in itertools.chain(self.aspect_of.items(), self.latin_aspect_of.items()) if aspect == "sun"
        )
        #: The other roles of English and pinyin words: filler or conjunction.
        self.latin_role: dict[str, str] = {
            w: role for role, words in data["latin"].items() if not role.startswith("aspect:") for w in words
        }

    def words(self) -> Iterable[str]:
        """Every Han word with a role, for the tokenizer's dictionary."""
        yield from self.question_words()
        yield from self.corrections
        yield from self.negations
        yield from self.capitals
        yield from self.place_suffixes
        yield from self.distance_links
        yield from self.complements
        yield from self.verb_before
        yield from self._open_category

    def question_words(self) -> Iterable[str]:
        """The words a plain weather question is made of (what a misheard word may be repaired to)."""
        yield from self.aspect_of
        yield from self.fillers
        yield from self.conjunctions
        yield from self.compare
        yield from self.counts
        yield from self.cold
        yield from self.hot

    def names_a_city_feature(self, word: str) -> bool:
        """Whether WORD names a feature every city has, by its ending (人民公园, 解放路): a name and the ending."""
        return any(word.endswith(end) and len(word) > len(end) for end in self.city_features)

    def landmark_suffix(self, word: str) -> str | None:
        """The longest landmark suffix WORD ends with (大雁塔: 塔), or None."""
        return next((suffix for suffix in self.landmark_suffixes if word.endswith(suffix)), None)

    def says_cantonese(self, simplified: str) -> bool:
        """Whether SIMPLIFIED (a question in simplified characters) holds a word only Cantonese uses (唔, 嘅, 听日,
        点样): the asker is from Hong Kong or Macau."""
        if self._cantonese is None:  # a race only compiles it twice
            self._cantonese = re.compile(words_pattern(self._cantonese_words))
        return self._cantonese.search(simplified) is not None

    def is_particles(self, token: str) -> bool:
        """Whether TOKEN is only modal particles and interjections (啊, 哈哈哈, 嗯嗯)."""
        return all(ch in self.particle_chars for ch in token)

    def strip_open_ended(self, text: str) -> str:
        """TEXT with every open-ended marker and every purpose removed (北京明天适合出游吗 → 北京明天吗), for
        degraded answers: what is left is the plain weather question, if there is one."""
        if self._open_or_purpose is None:  # compiled on first use: only a degraded answer needs it
            self._open_or_purpose = _longest_first([*self._open_category, *self.purposes])
        pattern = self._open_or_purpose
        if self._shielding is None:
            return pattern.sub(" ", text)
        # Markers inside aspect words stay: 几点日出 is the question, not a marker to strip.
        kept = [(m.start(), m.end()) for m in self._shielding.finditer(text)]
        return pattern.sub(lambda m: m.group(0) if any(a <= m.start() < b for a, b in kept) else " ", text)

    def open_ended_kinds(self, text: str) -> set[str]:
        """The categories of every open-ended marker in TEXT."""
        return {self._open_category[found.group(0)] for found in self._open_pattern.finditer(self._shielded(text))}

    def open_ended(self, text: str) -> tuple[str, str] | None:
        """(category, marker) of the first open-ended marker in TEXT, or None."""
        found = self._open_pattern.search(text)
        if found and self._shielding is not None:
            found = self._open_pattern.search(self._shielded(text))
        return (self._open_category[found.group(0)], found.group(0)) if found else None

    def asks_when_the_sun(self, text: str, marker: tuple[str, str] | None) -> str | None:
        """TEXT without its words of when (几点, 什么时候) if it names a sun event (日落时间是几点 → 日落时间是 ),
        else None. Looked for only where a word of when can be: an open-ended MARKER was found (几点 is one),
        or Latin letters (when, what time are no markers: English open questions are words not known)."""
        if marker is None and HAS_LATIN.search(text) is None:
            return None
        if self._sun.search(text) is None or self._when.search(text) is None:
            return None
        return self._when.sub(" ", text)

    def _shielded(self, text: str) -> str:
        return self._shielding.sub(" ", text) if self._shielding is not None else text


# lexicon.json's lists of verbs before a word of the weather, and the aspects of the words each may go
# before: what falls (雨, 雪), what arises (雾 — a word of the general weather —, 风, 沙尘), what changes.
_VERBS_BEFORE: dict[str, frozenset[Aspect]] = {
    "falls": frozenset({"rain", "snow"}),
    "rises": frozenset({"weather", "wind", "air"}),
    "turns": frozenset({"weather", "temperature", "rain", "snow", "wind", "humidity", "air"}),
}


def _longest_first(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern of WORDS that, where several start at one position, matches the longest: a trie, which
    the regex engine searches faster than one alternation of the hundreds of open-ended markers."""
    return re.compile(trie_pattern(list(words)))

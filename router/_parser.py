"""Read a question into a Decision: no I/O, no network, deterministic for a given `today`.

The router answers only what it fully understands. Every token must be a place, a date, an aspect,
a comparison, a conjunction or a filler word; anything else either looks like a place the gazetteer
lacks (→ clarify) or is content only a language model can handle (→ llm). That rule is what keeps a
wrong rule answer — the worst outcome — rare.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass, field

from hybrid_weather.rules.dates import find_dates
from hybrid_weather.rules.gazetteer import Gazetteer, Place, PlaceMatch
from hybrid_weather.rules.lexicon import Lexicon
from hybrid_weather.rules.normalize import normalize
from hybrid_weather.rules.tokenizer import Tokenizer

from ._decision import Comparison, Decision

#: Most places one question may name; more is asked to be split up.
MAX_PLACES = 5
#: Forecast horizon of the default provider: 16 forecast days (today and 15 ahead) and 92 past days.
MAX_DAYS_AHEAD = 15
MAX_DAYS_BACK = 92
_GENERAL_ASPECTS = {"weather", "temperature", "rain", "snow", "wind", "humidity"}
# Words after which an unknown word is where a place would stand (查一下杭洲的天气, 去纳尼亚).
_PLACE_LEADERS = {"查", "查查", "查询", "查一下", "查下", "看看", "看一下", "看下", "去", "在", "到", "请问", "帮我", "告诉我"}
_MAX_PLACE_ATTEMPT_CHARS = 6
_LATIN_WINDOW = 3


@dataclass(slots=True)
class _Reading:
    """What the walk over the tokens found."""

    places: list[tuple[int, str, PlaceMatch]] = field(default_factory=list)
    aspects: list[str] = field(default_factory=list)
    cold: bool = False
    hot: bool = False
    compare: bool = False
    trend: str | None = None  # "cold" for 降温, "hot" for 回暖
    conjunction_at: set[int] = field(default_factory=set)
    leader_at: set[int] = field(default_factory=set)
    unknown: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, text) token runs


class QueryParser:
    """Owns the tokenizer, gazetteer and lexicon; thread-safe after construction."""

    def __init__(self) -> None:
        self.gazetteer = Gazetteer()
        self.lexicon = Lexicon()
        self.tokenizer = Tokenizer(itertools.chain(self.gazetteer.words(), self.lexicon.words()))

    def parse(self, text: str, today: dt.date, context: Decision | None = None,
              recent_places: list[Place] | None = None) -> Decision:
        """Decide TEXT. CONTEXT is the last rule decision of a conversation and RECENT_PLACES the places it
        asked about, newest last, for follow-ups (那上海呢？ 后天呢？ 这两个城市哪个更热？)."""
        clean = normalize(text)
        if not clean:
            return _clarify("empty query", "请问您想查询哪个城市的天气？", clean)
        marker = self.lexicon.open_ended(clean)
        if marker:
            return _llm(f"open-ended ({marker[0]}): {marker[1]}", clean)

        spans = find_dates(clean, today)
        for span in spans:
            if not span.dates:
                return _clarify(f"invalid date: {span.text}", f"“{span.text}”不是有效的日期，请换一种说法。", clean)
        dates = sorted({d for span in spans for d in span.dates})
        tokens: list[str | None] = []  # None stands where a date was cut out
        position = 0
        for span in spans:
            tokens.extend(self.tokenizer.split(clean[position:span.start]))
            tokens.append(None)
            position = span.end
        tokens.extend(self.tokenizer.split(clean[position:]))

        reading = self._read(tokens)
        if len(reading.unknown) > 1:
            return _llm("unrecognised: " + " ".join(text for _, _, text in reading.unknown), clean)
        if reading.unknown:
            decided = self._place_attempt(reading, tokens, clean, dates, today)
            if decided is not None:
                return decided
        borrowed = ""
        if context is not None and context.route == "rule":
            dates, borrowed = _borrow_context(reading, dates, context, recent_places or list(context.places),
                                              follow_up="呢" in clean, several=3 if "三" in clean else 2)
        decision = self._decide(reading, dates, today, clean)
        if borrowed and decision.route == "rule":
            decision.reason += f"; from context: {borrowed}"
        return decision

    def resolve_place(self, text: str) -> PlaceMatch | None:
        """The one place TEXT names, as a question would read it (北京朝阳, 魔都, 杭洲, Tokyo); else None."""
        clean = normalize(text)
        tokens: list[str | None] = list(self.tokenizer.split(clean))
        reading = self._read(tokens)
        if len(reading.unknown) == 1 and not reading.places:
            repaired = self.gazetteer.repair(reading.unknown[0][2])
            return PlaceMatch((repaired,), "pinyin") if repaired else None
        if reading.unknown or len(reading.places) != 1:
            return None
        return reading.places[0][2]

    def _read(self, tokens: list[str | None]) -> _Reading:
        reading = _Reading()
        lexicon, gazetteer = self.lexicon, self.gazetteer
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token is None:
                index += 1
                continue
            if token.isascii() and token[0].isalpha():
                index = self._read_latin(tokens, index, reading)
                continue
            match = gazetteer.lookup(token)
            if match is not None:
                self._add_place(reading, index, token, match)
            elif token in lexicon.aspect_of:
                reading.aspects.append(lexicon.aspect_of[token])
                reading.cold |= token in lexicon.cold
                reading.hot |= token in lexicon.hot
                reading.trend = lexicon.trend.get(token, reading.trend)
            elif token in lexicon.compare:
                reading.compare = True
            elif token in lexicon.conjunctions:
                reading.conjunction_at.add(index)
            elif token in lexicon.fillers or token in lexicon.cold or token in lexicon.hot:
                reading.cold |= token in lexicon.cold
                reading.hot |= token in lexicon.hot
                if token in _PLACE_LEADERS:
                    reading.leader_at.add(index)
            else:
                _add_unknown(reading, index, token)
            index += 1
        return reading

    def _read_latin(self, tokens: list[str | None], index: int, reading: _Reading) -> int:
        """Read English or pinyin words at INDEX; return the index after them."""
        words: list[str] = []
        for token in tokens[index: index + _LATIN_WINDOW]:
            if token is None or not token.isascii() or not token[0].isalpha():
                break
            words.append(token)
        for size in range(len(words), 0, -1):
            match = self.gazetteer.lookup_latin(" ".join(words[:size]))
            if match is not None:
                self._add_place(reading, index, " ".join(words[:size]), match)
                return index + size
        role = self.lexicon.latin_role.get(words[0], "")
        if words[0] in self.lexicon.aspect_of:  # pm2.5, aqi
            reading.aspects.append(self.lexicon.aspect_of[words[0]])
        elif role.startswith("aspect:"):
            reading.aspects.append(role.partition(":")[2])
        elif role == "conjunction":
            reading.conjunction_at.add(index)
        elif role != "filler":
            _add_unknown(reading, index, words[0])
        return index + 1

    def _add_place(self, reading: _Reading, index: int, word: str, match: PlaceMatch) -> None:
        if reading.places and reading.places[-1][0] == index - 1:
            # Adjacent names: a unit inside the one before is the same place, spelled out
            # (广东省广州市, 北京朝阳, 上海浦东新区).
            _, outer_word, outer = reading.places[-1]
            inner = self.gazetteer.within(outer, word)
            if inner is not None:
                reading.places[-1] = (index, outer_word + word, PlaceMatch((inner,), match.via))
                return
        reading.places.append((index, word, match))

    def _place_attempt(self, reading: _Reading, tokens: list[str | None], clean: str,
                       dates: list[dt.date], today: dt.date) -> Decision | None:
        """Handle the one unknown run: a typo of a place, a place we lack, or content for the LLM."""
        first, last, word = reading.unknown[0]
        before = tokens[first - 1] if first > 0 else None
        next_to_conjunction = (first - 1) in reading.conjunction_at or (last + 1) in reading.conjunction_at
        if reading.places and not next_to_conjunction:
            return _llm(f"unrecognised: {word}", clean)
        first_aspect = next((i for i, t in enumerate(tokens) if t is not None and t in self.lexicon.aspect_of), None)
        in_place_slot = (
            first == 0 or before is None or next_to_conjunction or (first - 1) in reading.leader_at
            or first_aspect is None or first < first_aspect
        )
        weather_signal = bool(reading.aspects)
        is_han = not word.isascii()
        # Repair only in a weather question: outside one, a sound-alike is more likely another word.
        if is_han and in_place_slot and weather_signal and 2 <= len(word) <= _MAX_PLACE_ATTEMPT_CHARS:
            repaired = self.gazetteer.repair(word)
            if repaired is not None:
                reading.unknown.clear()
                reading.places.append((first, word, PlaceMatch((repaired,), "pinyin")))
                reading.places.sort(key=lambda item: item[0])
                return None
        if in_place_slot and weather_signal and (len(word) >= 2):
            decided = _clarify(f"unknown place: {word}", f"没有找到“{word}”这个地点，请换个说法，例如“上海”“北京朝阳区”或“东京”。", clean)
            decided.unknown_place = word
            # What the question would be with the word as a place: a geocoder may still find it.
            placeholder = Place(word, word, "geocoded", 0.0, 0.0, "UTC", "")
            reading.unknown.clear()
            reading.places.append((first, word, PlaceMatch((placeholder,), "geocoding")))
            reading.places.sort(key=lambda item: item[0])
            pending = self._decide(reading, dates, today, clean)
            if pending.route == "rule":
                decided.pending = pending
            return decided
        return _llm(f"unrecognised: {word}", clean)

    def _decide(self, reading: _Reading, dates: list[dt.date], today: dt.date, clean: str) -> Decision:
        for _, word, match in reading.places:
            if match.ambiguous:
                options = "、".join(p.display for p in match.candidates)
                return _clarify(f"ambiguous place: {word}", f"“{word}”可以指{options}，您想查哪一个？", clean)
        places = list(dict.fromkeys(match.candidates[0] for _, _, match in reading.places))
        if not places:
            if reading.aspects or dates:
                return _clarify("no place given", "请问您想查询哪个城市的天气？", clean)
            return _llm("no weather question recognised", clean)
        if len(places) > MAX_PLACES:
            return _clarify(f"too many places: {len(places)}", f"一次最多查询{MAX_PLACES}个地点，请分开提问。", clean)
        if not dates:
            dates = [today]
        for day in dates:
            offset = (day - today).days
            if offset > MAX_DAYS_AHEAD or offset < -MAX_DAYS_BACK:
                return _clarify(
                    f"date beyond forecast horizon: {day.isoformat()}",
                    f"天气预报只覆盖今天起{MAX_DAYS_AHEAD + 1}天内和过去{MAX_DAYS_BACK}天，"
                    f"{day.year}年{day.month}月{day.day}日不在范围内。",
                    clean,
                )
        aspects = set(reading.aspects) or {"weather"}
        if len(aspects) == 1:
            aspect = next(iter(aspects))
        elif aspects <= _GENERAL_ASPECTS:
            aspect = "weather"  # the general answer carries every one of these facts
        else:
            return _llm("several aspects including air quality: " + ",".join(sorted(aspects)), clean)
        compare: Comparison | None = None
        if reading.trend and not reading.compare and len(places) == 1 and len(dates) == 1 and dates[0] > today:
            # 明天会降温吗: a change from today, answered by comparing the two days.
            dates = [today, dates[0]]
            compare = reading.trend  # type: ignore[assignment]
        elif reading.compare:
            if len(places) < 2 and len(dates) < 2:
                return _llm("comparison with nothing to compare", clean)
            compare = _comparison(aspect, reading)
            if compare is None:
                return _llm("comparison without a measurable quantity", clean)
        cities = [p.name for p in places]
        how = f"; compare {compare}" if compare else ""
        vias = sorted({match.via for _, _, match in reading.places} - {"name"})
        via = f" via {','.join(vias)}" if vias else ""
        reason = f"rule: {len(places)} place(s){via}, {len(dates)} day(s), {aspect}{how}"
        return Decision("rule", cities, dates, aspect, reason, places=places, compare=compare, normalized=clean)


def _borrow_context(reading: _Reading, dates: list[dt.date], context: Decision, recent: list[Place],
                    follow_up: bool, several: int) -> tuple[list[dt.date], str]:
    """Fill what a follow-up leaves out from the last answer: 后天呢 keeps the place, 那上海呢 the day,
    这两个城市哪个更热 the last two places asked about."""
    if not (dates or reading.aspects or reading.compare or follow_up):
        return dates, ""  # 你好, 谢谢: not a weather follow-up at all
    borrowed = []
    if not reading.places:
        places = recent[-several:] if reading.compare and len(context.places) < 2 else context.places
        reading.places = [(-len(places) + i, p.display, PlaceMatch((p,), "context")) for i, p in enumerate(places)]
        borrowed.append("places")
        if not dates:
            dates = list(context.dates)
            borrowed.append("dates")
        if not reading.aspects and context.aspect:
            reading.aspects.append(context.aspect)
            borrowed.append("aspect")
    elif not dates and not reading.aspects and not reading.compare:
        dates = list(context.dates)
        if context.aspect:
            reading.aspects.append(context.aspect)
        borrowed.append("dates, aspect")
    return dates, ", ".join(borrowed)


def _comparison(aspect: str, reading: _Reading) -> Comparison | None:
    if reading.cold:
        return "cold"
    if reading.hot or aspect == "temperature":
        return "hot"
    if aspect in ("rain", "snow", "wind", "humidity", "air"):
        return aspect  # type: ignore[return-value]
    return None


def _add_unknown(reading: _Reading, index: int, token: str) -> None:
    if reading.unknown and reading.unknown[-1][1] == index - 1:
        first, _, text = reading.unknown[-1]
        reading.unknown[-1] = (first, index, text + token)
    else:
        reading.unknown.append((index, index, token))


def _clarify(reason: str, message: str, clean: str) -> Decision:
    return Decision("clarify", [], [], None, f"clarify: {reason}", clarification=message, normalized=clean)


def _llm(reason: str, clean: str) -> Decision:
    return Decision("llm", [], [], None, reason, normalized=clean)

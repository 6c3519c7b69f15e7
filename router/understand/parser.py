"""Decide a question: no I/O, no network, deterministic for a given `today`.

The router answers only what it fully understands. Every token must be a place, a date, an aspect,
a comparison, a conjunction or a filler word; anything else either looks like a place the gazetteer
lacks (→ clarify) or is content only a language model can handle (→ llm). That rule is what keeps a
wrong rule answer — the worst outcome — rare.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from hybrid_weather.agent.weather import Horizon
from hybrid_weather.rules import (
    ABOVE_TOWNSHIP,
    FIRST_DAY,
    LAST_DAY,
    TOWNSHIP_SUFFIXES,
    Aspect,
    DateSpan,
    Place,
    PlaceMatch,
    Reader,
    Reading,
    Tokens,
    asked_as_a_not_a,
    has_a_minus_sign,
    in_supported_range,
    normalize,
)
from hybrid_weather.rules.common_words import common_frequency
from hybrid_weather.rules.reader import PlaceAt

from .clauses import PlaceSpan, clauses, place_spans, question_starts
from .decision import Comparison, Decision, clarify, open_ended, to_llm
from .follow_up import Borrowed, borrow_context, is_follow_up, which_places

#: Most places one question may name; more is asked to be split up.
MAX_PLACES = 5
#: Aspects whose facts the general weather answer carries, so asking for several of them is one answer.
_GENERAL_ASPECTS: frozenset[Aspect] = frozenset({"weather", "temperature", "rain", "snow", "wind", "humidity"})
#: Aspects a comparison can measure directly.
_COMPARABLE: dict[Aspect, Comparison] = {
    "rain": "rain",
    "snow": "snow",
    "wind": "wind",
    "humidity": "humidity",
    "air": "air",
}
# Longest unknown word tried as a place (by typo repair or as a place to ask about); longer is content.
_MAX_PLACE_ATTEMPT_CHARS = 6
#: The places a clarify names when one name holds several (the rest are counted: 城关镇 names 80 towns).
_CANDIDATES_SHOWN = 3
# The levels of administrative divisions: said under a place that does not hold them, a path that disagrees.
_DIVISIONS = frozenset({"province", "prefecture", "county", "township"})
#: The place suffixes (lexicon place_suffixes) that name a zone of its own, not a site of the place before
#: (平遥古城 is in 平遥; 赣江新区 is no part of 赣州's 赣江街道): said after a name no unit holds, not proved.
_ZONE_SUFFIXES = frozenset({"新区", "开发区", "高新区"})
#: The recoveries of a question the reading does not decide, in the order tried (QueryParser._decide_text).
RECOVERIES = ("general_remark", "asked_in_context", "misheard_place", "sound_alike", "shared_character")
_ASK_FOR_PLACE = "请问您想查询哪个城市的天气？"
#: The reason of a weather question asked without its place.
NO_PLACE_REASON = "clarify: no place given"
# Sound-alike readings tried per unknown word before giving up (each is one more parse).
_MAX_REPAIRS = 24
#: Longest message (normalised) whose question is looked for among context: each place a question may start
#: is one more parse, and a longer message is more than a question with its context.
MAX_CONTEXT_CHARS = 300
#: Distinct (question, day) pairs whose Decision is kept, least recently used first out.
MEMO_SIZE = 4_096
#: (question, day) pairs remembered as asked once, before the next one clears them all.
SEEN_SIZE = 4 * MEMO_SIZE


class _Asked(NamedTuple):
    """A question as the recoveries see it: as said, normalised, its day and conversation, and what the reading
    made of it (its decision and the words it did not understand)."""

    text: str
    clean: str
    today: dt.date
    context: Decision | None
    recent: list[Place] | None
    found: Mapping[str, PlaceMatch]
    decision: Decision
    unknown: list[str]


class QueryParser:
    """Reads with the rules' Reader and decides. Thread-safe after construction."""

    def __init__(self, reader: Reader, horizon: Horizon, provider_label: str) -> None:
        self.reader = reader
        self.horizon = horizon  #: the configured provider's, so a date it cannot answer is a clarify here
        self.provider_label = provider_label
        self._regions = reader.gazetteer.regions
        # Questions repeat (a service hears 上海今天天气 all day): a question alone, without a conversation
        # or geocoded places, is kept per text and day from its second asking. lru_cache is thread-safe and
        # bounded.
        self._alone = functools.lru_cache(maxsize=MEMO_SIZE)(self._decide_text)
        # The hashes of the (question, day) pairs asked once. Most distinct questions are asked once: keeping
        # each would push an older one out of the memo and free it, and hand out a copy, on every new
        # question's path. A hash shared by two questions only keeps the second one early.
        self._seen: set[int] = set()
        #: Tried in this order where the reading leaves a question to the LLM or asks back (docs/reading.md,
        #: "When the reading does not decide", lists them so: tests/test_docs_reading.py holds the page to it).
        self._recoveries: tuple[tuple[str, Callable[[_Asked], Decision | str]], ...] = tuple(
            (name, getattr(self, f"_{name}")) for name in RECOVERIES
        )

    def parse(
        self,
        text: str,
        today: dt.date,
        context: Decision | None = None,
        recent_places: list[Place] | None = None,
        found_places: Mapping[str, PlaceMatch] | None = None,
        asked_which: tuple[str, Decision] | None = None,
    ) -> Decision:
        """Decide TEXT. CONTEXT is the last rule decision of a conversation and RECENT_PLACES the places it
        asked about, newest last, for follow-ups (那上海呢？ 后天呢？ 这两个城市哪个更热？). FOUND_PLACES are
        words the gazetteer lacks that a geocoder has since found (周庄). ASKED_WHICH: the question just before
        and its clarify asking which place of a name was meant, which TEXT may answer (甘肃那个)."""
        if asked_which is not None and (settled := self._settled(text, today, asked_which, context)) is not None:
            return _sure_of_the_sign(settled, text)
        if context is None and not found_places:
            key = hash((text, today))
            if key in self._seen:
                # Each caller gets lists of its own: the memo's Decision must not change under the next caller.
                return _sure_of_the_sign(self._alone(text, today).with_own_lists(), text)
            if len(self._seen) >= SEEN_SIZE:
                self._seen.clear()
            self._seen.add(key)
        return _sure_of_the_sign(self._decide_text(text, today, context, recent_places, found_places), text)

    def _settled(
        self, text: str, today: dt.date, asked_which: tuple[str, Decision], context: Decision | None
    ) -> Decision | None:
        """The question before, asked again of the one place its name meant that TEXT says where is (城关镇明天天气
        → 甘肃那个 → 兰州市榆中县城关镇…: the place TEXT names holds one of the places the clarify listed); a
        narrower clarify where it holds several; None where TEXT names no place, or asks something of its own
        (a date, a word of the weather, a word not understood): a new question."""
        question, clarified = asked_which
        if clarified.ambiguous is None:
            return None
        word, candidates = clarified.ambiguous
        clean = normalize(text)
        spans = self.reader.dates(clean, today)
        reading = self.reader.read(self.reader.tokens(clean, spans), clean)
        if not reading.places or spans or reading.unknown or reading.aspects or reading.compare:
            return None
        gazetteer = self.reader.gazetteer
        said = [p for _, _, match in reading.places for p in match.candidates]
        chosen = tuple(c for c in candidates if any(p == c or gazetteer.encloses(p, c) for p in said))
        if not chosen:
            return None
        if len(chosen) > 1:
            return self._decide(reading._replace(places=((0, word, PlaceMatch(chosen, "context")),)), [], today, [])
        answered = self._decide_text(question.replace(word, chosen[0].name, 1), today, context)
        if answered.route != "rule":
            return None
        return answered.with_reason(f"{answered.reason}; which {word}: {text}", "which_answered")

    def _decide_text(
        self,
        text: str,
        today: dt.date,
        context: Decision | None = None,
        recent_places: list[Place] | None = None,
        found_places: Mapping[str, PlaceMatch] | None = None,
    ) -> Decision:
        """Decide TEXT: read it (_parse); where the reading leaves it to the LLM or asks back, try RECOVERIES in
        order, and keep the first that decides; the decision says what was tried (Decision.tried)."""
        if not in_supported_range(today):
            return clarify(
                f"today out of range: {today.isoformat()}",
                f"只能按{FIRST_DAY.year}年到{LAST_DAY.year}年之间的日期理解问题，{today.isoformat()}不在其中。",
                code="out_of_range",
            )
        clean = normalize(text)
        found = found_places or {}
        decision, unknown = self._parse(clean, today, context, recent_places, found, said=text)
        if decision.route == "rule" and not unknown:
            return decision  # read whole: no recovery is needed (the hot path: most questions)
        asked = _Asked(text, clean, today, context, recent_places, found, decision, unknown)
        tried: list[tuple[str, str]] = []
        for name, recover in self._recoveries:
            verdict = recover(asked)
            if isinstance(verdict, Decision):
                return verdict.with_tried((*tried, (name, "decided")))
            tried.append((name, verdict))
        return decision.with_tried(tuple(tried))

    def _general_remark(self, asked: _Asked) -> Decision | str:
        """好想看雪啊, 下雪了: a wish or a remark about the weather in general, which no place would answer."""
        if asked.decision.reason != NO_PLACE_REASON:
            return "the reading did not stop for want of a place"
        if asked.context is not None:
            return "in a conversation, the place may be the one before"
        if self._asks_as_said(asked.text, asked.clean, asked.today):
            return "it asks (a question word, a date): a place is what it lacks"
        return to_llm("about the weather in general: nothing asked and no place", code="general_remark")

    def _asked_in_context(self, asked: _Asked) -> Decision | str:
        """Words not known may be context around the question (好的收到 明天杭州会下雨吗): the question read alone.
        A repair of a sound (below) is tried only where no such reading answers."""
        if asked.decision.route != "llm" or not asked.unknown:
            return "no words not understood that sent it to the LLM"
        if len(asked.clean) > MAX_CONTEXT_CHARS:
            return f"longer than {MAX_CONTEXT_CHARS} characters"
        found = self._question_in_context(asked)
        return found if found is not None else "no end of it asks a whole weather question after inert context"

    def _misheard_place(self, asked: _Asked) -> Decision | str:
        """A place's name misheard into words the tokenizer knows (城都, 呼和浩待): see _misheard_place_in."""
        if asked.decision.reason != NO_PLACE_REASON and not asked.unknown:
            return "a place was read, and every word understood"
        found = self._misheard_place_in(asked)
        return found if found is not None else "no repair by sound of where a place is said makes one"

    def _sound_alike(self, asked: _Asked) -> Decision | str:
        """One word not known may be one known, misheard or mistyped (天七 → 天气): the question read again with
        each sound-alike; a repair is kept only if it makes a complete weather question."""
        unknown = asked.unknown
        if (why := self._one_han_word(asked)) is not None:
            return why
        text, clean, today = asked.text, asked.clean, asked.today
        for start, end in _locate(clean, unknown):
            for attempts, (rewritten, window, word) in enumerate(self.reader.sound_alikes.rewrites(clean, start, end)):
                if attempts >= _MAX_REPAIRS:
                    break
                if len(window) == 1 and asked_as_a_not_a(text, window):
                    continue  # 广州今天贵不贵: a character asked as A-not-A is what is asked, not a particle
                if len(window) > 1 and common_frequency(window) is not None:
                    continue  # 泰国, 明珠: a word of everyday Chinese was said, not misheard (泰国首都 is no 太过)
                repaired, _ = self._parse(rewritten, today, asked.context, asked.recent, asked.found, said=text)
                # Only into a question of the weather: 浙江广厦 is no 浙江眼下, whatever it sounds like.
                if repaired.route == "rule" and (
                    repaired.aspect == "distance" or self.reader.names_weather(rewritten, today)
                ):
                    return repaired.with_reason(f"{repaired.reason}; sound-alike: {window}→{word}", "sound_alike")
        return f"no sound-alike of {unknown[0]} makes a weather question"

    def _shared_character(self, asked: _Asked) -> Decision | str:
        """明后天气, 这两天气怎么样: the 天 that ends a date is also the weather's, said once. After the repairs:
        合肥明天气问多少 is 气温 mistyped."""
        if (why := self._one_han_word(asked)) is not None:
            return why
        if asked.unknown != ["气"]:
            return "the word not understood is not 气"
        clean, today = asked.clean, asked.today
        for span in self.reader.dates(clean, today):
            if span.text.endswith("天") and clean.startswith("气", span.end):
                twice = f"{clean[: span.end]}天{clean[span.end :]}"
                shared, _ = self._parse(twice, today, asked.context, asked.recent, asked.found, said=asked.text)
                if shared.route != "llm":  # a clarify too (明后天气: which place?), as for 明后天天气
                    return shared.with_reason(
                        f"{shared.reason}; the date's last character read twice", "shared_character"
                    )
        return "no date ending in 天 before the 气"

    def _one_han_word(self, asked: _Asked) -> str | None:
        """Why a repair of one word does not apply (None when it does): one repair fixes one word, so two
        unknown words stay unknown; only Han words have a sound to repair by; a region (南方) is known, not
        misheard (南风)."""
        unknown = asked.unknown
        if asked.decision.route == "rule":
            return "decided by rules"
        if len(unknown) != 1:
            return f"{len(unknown)} words not understood, not one"
        if unknown[0].isascii():
            return "a Latin word has no sound to repair by"
        if unknown[0] in self._regions:
            return "a region, known, not misheard"
        return None

    def _parse(
        self,
        clean: str,
        today: dt.date,
        context: Decision | None,
        recent_places: list[Place] | None,
        found_places: Mapping[str, PlaceMatch],
        *,
        said: str = "",
    ) -> tuple[Decision, list[str]]:
        """Decide normalised CLEAN; also return the words it did not understand. SAID is the question as said,
        whose script and dialect normalize() does not keep (東區, 听日): they say which of two places of one name
        is meant. The steps, in order: open-ended markers, the reading, what makes it no lookup, the places'
        paths and the words that act on others, the decision."""
        if not clean:
            return clarify("empty query", _ASK_FOR_PLACE, code="empty"), []  # its reason is EMPTY_REASON
        clean, marker, spans, tokens = self._marked(clean, today)
        if marker and marker[0] == "media" and self._plays_the_forecast(clean, marker[1], today):
            # 播放明天的天气, 我要听天气预报: a command to read the forecast, said as to a speaker, not a song
            return self._parse(clean.replace(marker[1], " ", 1), today, context, recent_places, found_places, said=said)
        if marker:
            return open_ended(marker[0], marker[1], [marker[1]]), []
        tokens, reading, slip = self._reading(clean, spans, tokens, context, said)
        looked_up = self._as_a_lookup(reading, tokens, spans, found_places, context, said)
        if not isinstance(looked_up, Reading):
            return looked_up
        decision = self._decided(clean, today, looked_up, tokens, spans, context, recent_places)
        if slip is not None and decision.route == "rule":
            decision = decision.with_reason(f"{decision.reason}; slip in a path: {slip[1]}→{slip[2]}", "slip_in_path")
        return decision, []

    def _marked(self, clean: str, today: dt.date) -> tuple[str, tuple[str, str] | None, list[DateSpan], Tokens | None]:
        """CLEAN (without a question of the sun's time: 日落时间是几点 asks the sunset, not knowledge), its
        open-ended marker (kind, word) or None, its date spans, and its tokens where finding the marker took
        them. A marker counts outside the dates (听日落雨 holds no 日落) and outside places' names (长春天气
        holds no 春天)."""
        lexicon = self.reader.lexicon
        marker = lexicon.open_ended(clean)
        if (untimed := lexicon.asks_when_the_sun(clean, marker)) is not None:
            clean, marker = untimed, lexicon.open_ended(untimed)
        spans = self.reader.dates(clean, today)
        if marker:
            marker = lexicon.open_ended(_masked(clean, spans))
        tokens: Tokens | None = None
        if marker:  # read only for a question with a marker
            tokens = self.reader.tokens(clean, spans)
            places = place_spans(clean, tokens, spans, self.reader.read(tokens))
            marker = lexicon.open_ended(_masked(_masked(clean, spans), places))
        return clean, marker, spans, tokens

    def _reading(
        self, clean: str, spans: list[DateSpan], tokens: Tokens | None, context: Decision | None, said: str
    ) -> tuple[Tokens, Reading, tuple[Tokens, str, str] | None]:
        """The tokens and Reading of CLEAN, with the townships the tokenizer cut up made whole (下|塘|镇) and a
        slip inside a path repaired (杭州尚城区: the slip, said and meant, is the third value), and each name a
        place outside the mainland shares read as SAID is written (大埔 in traditional characters)."""
        if tokens is None:
            tokens = self.reader.tokens(clean, spans)
        reading = self.reader.read(tokens, clean)
        # Only in a question of the weather (or a follow-up) are words not understood looked for among the
        # townships, whose table a process loads the first time: 帮我写首诗 needs none of it.
        of_places = bool(reading.aspects) or context is not None
        townships = self.reader.with_townships(tokens, reading) if of_places else None
        if townships is not None:
            tokens, reading = townships, self.reader.read(townships, clean)
        slip = None
        if of_places and reading.unknown and reading.places:
            slip = self.reader.with_slip_repaired(tokens, reading)
        if slip is not None:
            tokens, reading = slip[0], self.reader.read(slip[0], clean)
        if said and any(match.beyond for _, _, match in reading.places):
            regions = self.reader.regions_written(said)
            gazetteer = self.reader.gazetteer
            reading = reading._replace(
                places=tuple([(i, word, gazetteer.as_written(m, regions)) for i, word, m in reading.places])
            )
        return tokens, reading, slip

    # Above ruff's complexity bound on purpose: what makes a reading no lookup, in order of precedence.
    def _as_a_lookup(  # noqa: C901
        self,
        reading: Reading,
        tokens: Tokens,
        spans: list[DateSpan],
        found_places: Mapping[str, PlaceMatch],
        context: Decision | None,
        said: str,
    ) -> Reading | tuple[Decision, list[str]]:
        """READING as a lookup (its word not understood found as a place), or the decision (and the words not
        understood) of what makes it none: a number that is no date, a doing asked about, words not understood,
        words of a distance in no distance question, a question of something else."""
        for span in spans:
            if not span.dates and not span.is_part_of_day:
                if not reading.says_weather:  # 92号汽油今天什么价: a number that is no date, in no weather question
                    return to_llm(f"no weather question: {span.text} is no date", code="not_weather"), []
                return clarify(
                    f"invalid date: {span.text}", f"“{span.text}”不是有效的日期，请换一种说法。", code="invalid_date"
                ), []
        if (doing := self._doing_asked(tokens)) is not None:
            return open_ended("advice", f"whether to {doing}", [doing]), []
        unknown = [text for _, _, text in reading.unknown]
        if len(unknown) > 1:
            return to_llm("unrecognised: " + " ".join(unknown), unknown, code="unrecognised"), unknown
        if reading.unknown:
            attempt = self._place_attempt(reading, tokens, found_places, asks=self._asks(tokens, spans, said))
            if isinstance(attempt, Decision):
                return attempt, unknown
            reading = attempt
        if reading.link_at and "distance" not in reading.aspects:
            # 离, 从, 之间 join the places of a distance question; in any other they are words not understood.
            links = [token for i, token in enumerate(tokens) if i in reading.link_at and token is not None]
            return to_llm("unrecognised: " + " ".join(links), links, code="unrecognised"), []
        choice = self._offers_a_choice(reading, tokens)
        if not reading.says_weather and (asked := self._asked_instead(reading, tokens, choice, context)) is not None:
            return asked
        weather_talk = context is not None and context.route == "rule"
        if reading.compare and not reading.places and not weather_talk and not _names_a_measure(reading):
            return to_llm("asks which day or thing, not its weather", code="not_weather"), []  # 中秋节是哪天
        if not reading.says_weather and not weather_talk and (not_weather := self._not_weather(tokens, spans)):
            return to_llm(not_weather, code="not_weather"), []
        if not reading.places and not weather_talk and (said_to := self._said_to_the_assistant(tokens)):
            return to_llm(f"said to the assistant, not of a place: {said_to}", code="said_to_assistant"), []
        return reading

    def _decided(
        self,
        clean: str,
        today: dt.date,
        reading: Reading,
        tokens: Tokens,
        spans: list[DateSpan],
        context: Decision | None,
        recent_places: list[Place] | None,
    ) -> Decision:
        """The decision of a lookup's READING: its places read as paths, the words that act on others applied
        (corrections, exclusions), its days, what a follow-up borrows from CONTEXT; the rule that decided in
        its reason code."""
        choice = self._offers_a_choice(reading, tokens)  # as said, before paths join or corrections drop places
        reading_or_question = self._read_paths(reading, tokens)
        if isinstance(reading_or_question, Decision):
            return reading_or_question
        reading = reading_or_question
        said_before = (reading.places, spans)
        reading, spans, excluded, unread = self._apply_corrections(reading, tokens, spans)
        reading = self._namesakes_beside_siblings(reading)
        corrected = (reading.places, spans) != said_before
        if unread is not None:
            return to_llm(f"takes back nothing it names: {unread}", [unread], code="unread_operator")
        if excluded and not reading.places and context is None:
            return to_llm("the question names a place only to exclude it", code="excluded_only")
        spans = _when_asked(spans, clean, self.reader.lexicon.where_one_is)
        # Sorted and without repeats; most questions name one date, whose days are in order already.
        dates = list(spans[0].dates) if len(spans) == 1 else sorted({d for span in spans for d in span.dates})
        borrowed: tuple[Borrowed, ...] = ()
        if context is not None and context.route == "rule":
            recent = recent_places or list(context.places)
            if (question := which_places(reading, context, recent)) is not None:
                return clarify(f"which {reading.place_count} of the places asked about", question, code="which_places")
            # The reading with what it borrowed in it; BORROWED names what, for the reason.
            reading, dates, borrowed = borrow_context(reading, dates, context, recent, follow_up=is_follow_up(clean))
        decision = self._decide(reading, dates, today, spans, choice=choice)
        if corrected and decision.route == "rule":
            decision = decision.with_reason(decision.reason, "correction")  # what was said was taken back in part
        if borrowed and decision.route == "rule":
            decision = decision.with_reason(f"{decision.reason}; from context: {', '.join(borrowed)}", "context")
        return decision

    def _plays_the_forecast(self, clean: str, marker: str, today: dt.date) -> bool:
        """Whether the media MARKER in CLEAN asks to play the forecast itself (播放明天的天气, 我要听天气预报): no
        marker of another kind is there, and after the marker come only a place, a date or 的 before a
        forecast's noun that ends the text; 播放好天气 is a song."""
        if self.reader.lexicon.open_ended_kinds(clean) != {"media"}:
            return False
        text = clean.rstrip(" 吧吗呢啊")
        noun = next((n for n in _FORECAST_NOUNS if text.endswith(n)), None)
        start = text.find(marker)
        if noun is None or start < 0:
            return False
        said = text[start + len(marker) : len(text) - len(noun)].strip().removesuffix("的")
        if not said:
            return True
        spans = self.reader.dates(said, today)
        rest = said[: spans[0].start] if spans and spans[-1].end == len(said) else said
        return not rest.strip() or self.reader.gazetteer.is_place_word(rest.strip())

    def _misheard_place_in(self, asked: _Asked) -> Decision | None:
        """The decision of CLEAN with a place's name repaired that was misheard or mistyped into characters the
        tokenizer cuts into words it knows (城都: 城 and 都, fillers; 呼和浩待: 呼, 和, 浩待), or None. The
        characters right before the first date or word of the weather, where a place is said, are read as one
        word and repaired by sound (rules/gazetteer.py repair), longest first; the repair must make a weather
        question about that place. A word the tokenizer keeps whole is no such cut (孩子明天冷吗)."""
        text, clean, today = asked.text, asked.clean, asked.today
        context, recent_places, found = asked.context, asked.recent, asked.found
        reader = self.reader
        spans = reader.dates(clean, today)
        end = spans[0].start if spans else len(clean)
        aspect_of = reader.lexicon.aspect_of
        weather = next((t for t in reader.tokenizer.split(clean[:end]) if t in aspect_of), None)
        if weather is not None:
            end = clean.find(weather)
        slot = clean[:end]
        for size in range(min(_MAX_PLACE_ATTEMPT_CHARS - 1, len(slot)), 1, -1):
            word = slot[-size:]
            if not all("\u4e00" <= ch <= "\u9fff" for ch in word) or reader.gazetteer.is_place_word(word):
                continue
            if any(
                len(t) > 1 and (t in reader.lexicon.role_of or reader.gazetteer.is_place_word(t))
                for t in reader.tokenizer.split(word)
            ):
                continue
            place = reader.gazetteer.repair(word)
            if place is None:
                continue
            rewritten = f"{clean[: end - size]}{place.display}{clean[end:]}"
            decision, _ = self._parse(rewritten, today, context, recent_places, found, said=text)
            # The repaired place must be the one place asked about: beside a known one (桂林漓江), a name is
            # inside it, a river or a sight, never a second city that sounds alike (丽江).
            if decision.route == "rule" and decision.places == [place] and reader.names_weather(rewritten, today):
                return decision.with_reason(f"{decision.reason}; misheard place: {word}→{place.display}", "misheard")
        return None

    def _question_in_context(self, asked: _Asked) -> Decision | None:
        """The decision of the end of CLEAN that asks a complete weather question, what comes before it being
        inert context, or None. Context is inert when it names no word of the weather and asks
        nothing (no clause of it ends as a question), and it may give the question the one place and the one
        date it leaves out (下周三飞成都 那边天气怎么样). Context that asks for something else (顺便帮我订个酒店)
        holds an open-ended marker, and such a message never gets here. The question must ask (吗, 多少, 冷不冷
        in TEXT as said): after context, a statement is told, not asked (负责人说北京明天冷)."""
        text, clean, today = asked.text, asked.clean, asked.today
        context, recent_places, found = asked.context, asked.recent, asked.found
        reader = self.reader
        for start in question_starts(clean):
            question, around = clean[start:].strip(), clean[:start].strip()
            if not question or not reader.names_weather(question, today) or not self._inert(around, today):
                continue
            asked_spans = reader.dates(question, today)
            if not self._asks_as_said(text, question, today, asked_spans, dates_ask=False):
                continue
            filled = self._filled_from(question, asked_spans, around, today)
            if filled is None:
                continue
            decision, _ = self._parse(filled, today, context, recent_places, found, said=text)
            if decision.route == "rule" or decision.reason == NO_PLACE_REASON:
                return decision.with_reason(
                    f"{decision.reason}; asked: {filled}; context: {around}", "asked_in_context"
                )
        return None

    def _asks_as_said(
        self, text: str, clean: str, today: dt.date, spans: list[DateSpan] | None = None, *, dates_ask: bool = True
    ) -> bool:
        """Whether CLEAN, said as TEXT, asks (_asks)."""
        spans = self.reader.dates(clean, today) if spans is None else spans
        return self._asks(self.reader.tokens(clean, spans), spans, text, dates_ask=dates_ask)

    def _asks(self, tokens: Tokens, spans: list[DateSpan], said: str, *, dates_ask: bool = True) -> bool:
        """Whether a question asks for something: it holds a question word or a forecast's noun (吗, 多少, 天气
        预报), an A-not-A as SAID (冷不冷, which normalize folds to 冷), or, where DATES_ASK, a date. A word of the
        weather alone does not (阴天, 东京不太热: titles and remarks)."""
        if dates_ask and any(span.dates for span in spans):
            return True
        lexicon = self.reader.lexicon
        if any(t in lexicon.asking for t in tokens if t):
            return True
        # Only a word of the weather is asked as A-not-A here (冷不冷, 下不下雨), each looked for once in SAID.
        weather = {t for t in tokens if t and lexicon.role_of.get(t) in ("aspect", "temperature")}
        return bool(said) and any(asked_as_a_not_a(said, word) for word in weather)

    def _inert(self, around: str, today: dt.date) -> bool:
        """Whether the context AROUND a question only tells (who, why, where, thanks): it names no word of the
        weather, takes nothing back (不在, 不是, 我是说: the place it names may be the one not meant) and no
        clause of it asks (ends in 吗, 呢)."""
        reader = self.reader
        lexicon = reader.lexicon
        if reader.names_weather(around, today):
            return False
        reading = reader.read(reader.tokens(around, reader.dates(around, today)))
        if reading.negation_at or reading.correction_at:
            return False
        return not any(clause.endswith(tuple(lexicon.yes_no | {"呢"})) for clause in clauses(around))

    def _filled_from(self, asked: str, asked_spans: list[DateSpan], around: str, today: dt.date) -> str | None:
        """The question ASKED with what it leaves out taken from the context AROUND: the one place the context
        names, if ASKED names none, and the one date to come that it says in words, if ASKED names none (孩子明天
        春游 杭州天气怎么样; a number alone, 房号1205, is no date; 昨天到的 says when one came, not what is
        asked). None when the context names several places, or one beside a question that names its own, or
        when neither says a day and the context holds words not understood that may say it."""
        reader = self.reader
        spans = reader.dates(around, today)
        reading = reader.read(reader.tokens(around, spans))
        words = {match.candidates[0]: word for _, word, match in reading.places if not match.ambiguous}
        if reader.read(reader.tokens(asked, asked_spans)).places:
            if words:
                return None  # 上海人在北京冷吗: a place told and a place asked; which one is meant, the LLM reads
        elif len(words) > 1:
            return None  # which of them: the LLM can ask
        else:
            asked = f"{next(iter(words.values()), '')}{asked}"  # none: the question is asked for its place
        if not any(span.dates for span in asked_spans):
            said = [span for span in spans if span.dates and not span.text.isascii() and span.dates[0] >= today]
            if len(said) == 1:
                asked = f"{said[0].text}{asked}"
            elif any(reader.may_say_a_day(word) for _, _, word in reading.unknown):
                return None  # no day said, and words not understood that may say it (Dec 12, 腊八)
        return asked

    def _not_weather(self, tokens: Tokens, spans: list[DateSpan]) -> str | None:
        """Why a question that names no word of the weather, outside a conversation about it, is no weather
        question, if it is none: without a date a place alone is a song, a title, a trip or a fact about the
        place (北京欢迎你, 杭州到宁波, 我男朋友在重庆), not its forecast; with one, a copula asks what the place is
        (洛杉矶现在是白天还是晚上), and a question put to the assistant asks about it (你明天在吗)."""
        if not any(span.dates for span in spans):
            return "no weather word and no date: a place alone is not a weather question"
        lexicon = self.reader.lexicon
        if (copula := next((t for t in tokens if t in lexicon.copulas), None)) is not None:
            return f"no weather word: {copula} asks what the place is, not its weather"
        return None

    def _said_to_the_assistant(self, tokens: Tokens) -> str | None:
        """The words, if a question with no place is about the one it is put to (你会下雨吗, 你冷不冷, 你是我的
        晴天): 你 right before anything but a verb of looking up or telling (你知道明天会下雨吗 asks the weather)."""
        lexicon = self.reader.lexicon
        for i, token in enumerate(tokens[:-1]):
            following = tokens[i + 1]
            if token in lexicon.addressees and following is not None and following not in lexicon.lookup_verbs:
                return f"{token}{following}"
        return None

    def _offers_a_choice(self, reading: Reading, tokens: Tokens) -> bool:
        """Whether the question offers places as alternatives (北京还是上海, 北京冷还是上海冷): it asks which."""
        ors = [i for i in reading.conjunction_at if tokens[i] in self.reader.lexicon.choice_ors]
        return any(
            any(place < i for place, _, _ in reading.places) and any(place > i for place, _, _ in reading.places)
            for i in ors
        )

    def _asked_instead(
        self, reading: Reading, tokens: Tokens, choice: bool, context: Decision | None
    ) -> tuple[Decision, list[str]] | None:
        """What a question that names nothing of the weather asks instead, if anything (a place, a date and
        fillers make a weather question, 北京明天): how much of something unnamed (北京大吗, 北京多大 — as a
        follow-up the measure is the last answer's aspect), which place to go to (去北京还是上海), whether one
        gets there (北京明天10点能到吗), whether one goes or is there (明天去北京吗), or why one goes, a plan
        told (明天去北京出差). With a word of the weather each of these asks about it (雨大吗, 去北京还是上海，哪边
        暖和, 能到20度吗, 明天去北京冷吗, 去北京出差，那边天气怎么样). Also returns the words not understood."""
        lexicon = self.reader.lexicon
        if context is None and (measure := next((t for t in tokens if t in lexicon.measures), None)) is not None:
            return to_llm(f"unrecognised: {measure}", [measure], code="unrecognised"), [measure]
        if choice and any(tokens[i] in lexicon.going_to for i in range(reading.places[0][0])):
            return open_ended("planning", "which place to go to", ["还是"]), []
        if any(
            token in lexicon.arriving and tokens[i - 1] in lexicon.arriving_modals
            for i, token in enumerate(tokens)
            if i > 0
        ):
            return open_ended("planning", "whether one gets there", ["到"]), []
        if (verb := self._going_or_being_asked(reading, tokens)) is not None:
            return open_ended("planning", "whether one goes or is there", [verb]), []
        if (purpose := next((t for t in tokens if t in lexicon.purposes), None)) is not None:
            return to_llm(f"unrecognised: {purpose}", [purpose], code="unrecognised"), [purpose]
        return None

    def _doing_asked(self, tokens: Tokens) -> str | None:
        """The verb of living, working or travelling, if the question asks whether to do it (明天还要去上班吗,
        北京暴雪能上学吗): a modal or a verb of going right before it, or a yes-no particle right after it.
        Said beside a question of the weather, such a verb is inert (我在保定上班，明天雾霾严重吗)."""
        lexicon = self.reader.lexicon
        before = lexicon.arriving_modals | lexicon.going_out_modals | lexicon.going_to
        for i, token in enumerate(tokens):
            if token in lexicon.living:
                after = tokens[i + 1] if i + 1 < len(tokens) else None
                if (i > 0 and tokens[i - 1] in before) or after in lexicon.yes_no:
                    return token
        return None

    def _going_or_being_asked(self, reading: Reading, tokens: Tokens) -> str | None:
        """The verb, if the question asks whether someone goes or is somewhere (明天去北京吗, 你在上海吗, 你住在
        广州吗, 后天到杭州不, 到了北京吗, 北京到了吗): it ends in a yes-no particle, and a verb of going or being
        comes right before a place (a perfective 了 may stand between) or one of arriving right after it with
        its 了 (我明天去北京, said, not asked, may want the weather there and gets it)."""
        lexicon = self.reader.lexicon
        last = next((token for token in reversed(tokens) if token is not None), None)
        if last not in lexicon.yes_no:
            return None
        for index, _, _ in reading.places:
            before = index - 2 if index > 1 and tokens[index - 1] in lexicon.perfective else index - 1
            if before >= 0 and tokens[before] in lexicon.going_or_being:
                return tokens[before]
            after = tokens[index + 1 : index + 3]
            if len(after) == 2 and after[0] in lexicon.arriving and after[1] in lexicon.perfective:
                return after[0]
        return None

    def _read_paths(self, reading: Reading, tokens: Tokens) -> Reading | Decision:
        """READING with each place said inside another read as that one place (吉林四平, 登封市 郑州 河南, 四平，
        吉林省的: a path, in any order): places said one after the other, with nothing but fillers between, of
        which exactly one unit lies inside all the others (a word's every unit counts: 吉林 is a province and a
        city). A province said beside a place that does not lie in it (江苏省杭州市) is a path whose parts
        disagree: a clarify that says so, never either of them."""
        places = reading.places
        if len(places) < 2 or "distance" in reading.aspects:  # 成都到重庆多远: two ends, not a path
            return reading
        gazetteer = self.reader.gazetteer
        joined: list[PlaceAt] = []
        for group in _runs_of_places(places, tokens, reading.conjunction_at, self.reader.is_filler):
            if len(group) == 1:
                joined.append(group[0])
                continue
            units = [(*match.candidates, *gazetteer.units_named(word)) for _, word, match in group]
            inner = _innermost(units, gazetteer.encloses)
            if inner is not None:
                at, word, match = next(p for p, found in zip(group, units, strict=True) if inner in found)
                joined.append((at, word, PlaceMatch((inner,), match.via)))
                continue
            provinces = [(word, m) for (_, word, m) in group if all(_holds_cities(c) for c in m.candidates)]
            for province_word, province in provinces:
                for _, word, match in group:
                    if (
                        all(c.level != "province" for c in match.candidates)
                        and gazetteer.inside(province, match.candidates) is None
                    ):
                        return clarify(
                            f"a path whose parts disagree: {province_word} {word}",
                            f"{province_word}没有叫“{word}”的地方：请说出完整、准确的地名。",
                            code="path_disagrees",
                        )
            paths = _paths_in_run(group, units, gazetteer.encloses)
            if all(len(path) == 1 for path in paths):
                joined.extend(group)  # 北京上海明天天气: a list said without a conjunction
                continue
            for n, path in enumerate(paths):
                (at, word, match), named = path[0]
                if len(path) > 1:
                    joined.append((at, word, match))  # 北京朝阳上海浦东: paths, one after the other
                    continue
                # A place said beside a path: its sibling under the path's parent (深圳南山福田), or, held by no
                # part of the path (余杭良渚古城: 丽江's 古城区, or a word of a site's name, 良渚古城?), asked.
                beside = [
                    u for other in paths[max(0, n - 1) : n + 2] if len(other) > 1 for _, own in other for u in own
                ]
                inside = [c for c in named if any(gazetteer.encloses(outer, c) for outer in beside)]
                if len(inside) != 1:
                    said = "".join(w for _, w, _ in group)
                    return clarify(
                        f"a path whose parts disagree: {said}",
                        f"“{said}”里的“{word}”不在前后说的地方里：请说出完整、准确的地名，几个地方请用“和”分开。",
                        code="path_disagrees",
                    )
                joined.append((at, word, PlaceMatch((inside[0],), match.via)))
        return reading._replace(places=tuple(joined))

    def _namesakes_beside_siblings(self, reading: Reading) -> Reading:
        """READING with a name read for one unit asked about (as a shared name is) when the other places said
        are districts or counties of one city and another unit of that name is their sibling: 朝阳和海淀 is
        朝阳市 by the name alone, but 海淀 is 北京's, and so is a 朝阳区. Which one is not guessed either way."""
        if len(reading.places) < 2:
            return reading
        gazetteer, places = self.reader.gazetteer, list(reading.places)
        for n, (at, word, match) in enumerate(places):
            others = [m.candidates for i, (_, _, m) in enumerate(places) if i != n]
            if match.ambiguous or any(len(c) != 1 or c[0].level != "county" for c in others):
                continue
            parents = {c[0].parent for c in others}
            chosen = match.candidates[0]
            if len(parents) != 1 or chosen.parent in parents:
                continue
            siblings = [u for u in gazetteer.units_named(word) if u.parent in parents and u != chosen]
            if len(siblings) == 1:
                places[n] = (at, word, PlaceMatch((siblings[0], chosen), match.via))
        return reading._replace(places=tuple(places))

    def _apply_corrections(
        self, reading: Reading, tokens: Tokens, spans: list[DateSpan]
    ) -> tuple[Reading, list[DateSpan], bool, str | None]:
        """Drop what the question takes back. A negation excludes the place or date right after it (不是北京,
        去掉无锡), or, with none there, those said right before it when others stand (常州就不用了, 青岛烟台不要);
        a correction (不对, 我是说) replaces whatever came before it with what follows, a replacement (换成) only
        the place or date right before it. Returns READING with the places that stand, the date spans that
        stand, whether a place was excluded, and a retraction (去掉, 跳过) that took nothing back, if one did:
        such a question is not read."""
        if not (reading.negation_at or reading.correction_at):
            return reading, spans, False, None
        lexicon = self.reader.lexicon
        span_at = dict(zip((i for i, t in enumerate(tokens) if t is None), spans, strict=True))
        place_at = {index: match.candidates[0] for index, _, match in reading.places}
        said = set(span_at) | set(place_at)
        excluded: set[int] = set()  # taken back: what they name is not asked anywhere in the question
        swapped: set[int] = set()  # replaced by what follows: what they name is not asked either
        replaced: set[int] = set()  # corrected: only this mention goes (what follows may say it again)
        for negation in reading.negation_at:
            after = self._said_after(tokens, negation, said)
            before = self._said_before(tokens, negation, said, reading.conjunction_at)
            if after is not None and (not before or after == negation + 1):
                excluded.add(after)
            elif before and self._others_stand(before, excluded, place_at, span_at):
                excluded |= set(before)
            elif tokens[negation] in lexicon.retractions:
                return reading, spans, False, tokens[negation]
        for correction in reading.correction_at:
            before = self._said_before(tokens, correction, said, reading.conjunction_at)
            after = self._said_after(tokens, correction, said)
            if tokens[correction] in lexicon.replacements:
                if before and after is not None:
                    swapped |= set(before)
                continue
            if after is None:
                continue
            # What follows the correction replaces the same kind of thing said before it: a place a place, a
            # date a date (周五，不对，周六 keeps the place asked).
            kinds = {after in place_at for after in range(correction + 1, len(tokens)) if after in said}
            replaced |= {i for i in said if i < correction and (i in place_at) in kinds}
        excluded_places = {place_at[i] for i in excluded if i in place_at}
        places, kept = _standing(reading, place_at, span_at, excluded | swapped, replaced)
        return reading._replace(places=places), kept, bool(excluded_places), None

    def _said_after(self, tokens: Tokens, at: int, said: set[int]) -> int | None:
        """The index of the place or date right after the word at AT (fillers between), or None."""
        target = next((i for i in range(at + 1, len(tokens)) if not self.reader.is_filler(tokens[i])), None)
        return target if target in said else None

    def _said_before(self, tokens: Tokens, at: int, said: set[int], conjunction_at: tuple[int, ...]) -> list[int]:
        """The places and dates said right before the word at AT: a run of them joined by conjunctions, with
        fillers between (开封、洛阳都不要了 → 开封, 洛阳)."""
        run = []
        for i in range(at - 1, -1, -1):
            if i in said:
                run.append(i)
            elif i not in conjunction_at and not self.reader.is_filler(tokens[i]):
                break
        return run

    @staticmethod
    def _others_stand(
        taken: list[int], excluded: set[int], place_at: Mapping[int, Place], span_at: Mapping[int, DateSpan]
    ) -> bool:
        """Whether places and dates stand when TAKEN (and EXCLUDED before) are taken back: a word like 不用 takes
        back one of several (常州就不用了), never the only place or day asked (明天不用带伞吧)."""
        gone = excluded | set(taken)
        gone_places = {place_at[i] for i in gone if i in place_at}
        gone_days = {d for i in gone if i in span_at for d in span_at[i].dates}
        places_left = any(place not in gone_places for i, place in place_at.items() if i not in gone)
        days_left = any(set(span.dates) - gone_days for i, span in span_at.items() if i not in gone)
        takes_places = any(i in place_at for i in taken)
        takes_days = any(i in span_at for i in taken)
        return (places_left or not takes_places) and (days_left or not takes_days)

    # Above ruff's complexity bound on purpose: the ways a place is found, tried in order.
    def _place_attempt(
        self, reading: Reading, tokens: Tokens, found: Mapping[str, PlaceMatch], *, asks: bool
    ) -> Decision | Reading:
        """Handle the one unknown run: a typo of a place, a place found elsewhere, one we lack, or content.
        ASKS: the question asks for something (a date, a question word, a forecast's noun); a word of the
        weather alone beside an unknown word is more likely a title (莫文蔚阴天, 帮我买一把雨伞) than a place
        to look up.

        Returns the decision when the run decides it, or else READING with the run become a place (or read as a
        landmark inside the place before it).
        """
        first, last, word = reading.unknown[0]
        next_to_conjunction = (first - 1) in reading.conjunction_at or (last + 1) in reading.conjunction_at
        next_to_place = any(index in (first - 1, last + 1) for index, _, _ in reading.places)
        # 北京到纳尼亚多远, 广州离周庄多远: the second place of a distance question follows 到, 去 or 离.
        after_link = "distance" in reading.aspects and (
            (first - 1) in reading.leader_at or (first - 1) in reading.link_at
        )
        if reading.places and not (next_to_conjunction or next_to_place or after_link):
            landmark = self._landmark_inside(reading, tokens, first, word)
            return landmark if landmark is not None else to_llm(f"unrecognised: {word}", [word], code="unrecognised")
        # Only inside a weather question: outside one, a sound-alike is more likely another word.
        if not (self._in_place_slot(reading, tokens, first, next_to_conjunction) and reading.aspects):
            return to_llm(f"unrecognised: {word}", [word], code="unrecognised")
        beside = next_to_place and not next_to_conjunction  # right beside a place, which it must lie inside
        match = self._match_of_run(reading, tokens, found, beside=beside, next_to_place=next_to_place)
        if isinstance(match, Decision):
            return match
        if match is not None and beside:
            # Right beside a known place a name must lie inside it (上海张江); anything else is content.
            inner = self.reader.gazetteer.inside(self._place_beside(reading, first, last), match.candidates)
            if inner is None:
                return self._not_inside(reading, tokens, match)
            match = PlaceMatch((inner,), match.via)
        if match is None:
            return self._no_place_for(reading, tokens, beside=beside, next_to_place=next_to_place, asks=asks)
        return self.reader.add_place(reading._replace(unknown=()), first, word, match)

    def _in_place_slot(self, reading: Reading, tokens: Tokens, first: int, next_to_conjunction: bool) -> bool:
        """Whether the run at FIRST stands where a place is said: first, after a conjunction or a leader (在,
        in), or before the question's first word of the weather."""
        aspect_words = self.reader.lexicon.aspect_of
        first_aspect = next((i for i, t in enumerate(tokens) if t is not None and t in aspect_words), None)
        return (
            first == 0
            or tokens[first - 1] is None
            or next_to_conjunction
            or (first - 1) in reading.leader_at
            or first_aspect is None
            or first < first_aspect
        )

    def _match_of_run(
        self, reading: Reading, tokens: Tokens, found: Mapping[str, PlaceMatch], *, beside: bool, next_to_place: bool
    ) -> PlaceMatch | Decision | None:
        """The places the run not understood may name: a region's districts, the one of its name inside the place
        BESIDE it, one FOUND by a geocoder, an area or township (a township's short name that also sounds like a
        city is both), a repair by sound, a minor town; or the decision a region makes; or None."""
        first, last, word = reading.unknown[0]
        gazetteer = self.reader.gazetteer
        if word in gazetteer.regions:
            # 江南, 中原, 北疆: a region, whose weather differs from place to place; beside its city the
            # district of that name is meant (南宁江南 → 南宁市江南区).
            if reading.asks_which and not reading.places:
                # 中国雨都是哪个城市, 中国哪里最冷: which place of a region, a question of knowledge.
                return to_llm(f"asks which place of a region: {word}", [word], code="region_which")
            units = gazetteer.units_named(word)
            if not next_to_place or not units:
                return clarify(
                    f"a region, not a place: {word}",
                    f"“{word}”是一片地区，各地天气不同：请说出其中的城市或区县。",
                    code="region",
                )
            return PlaceMatch(units, "name")
        if beside and (inner := gazetteer.within(self._place_beside(reading, first, last), word)) is not None:
            return PlaceMatch((inner,), "local")  # 长丰县下塘镇: of the towns of that name, the one in 长丰县
        match = found.get(word) or gazetteer.lookup_local(word, minor=False)
        zone = tokens[last + 1] if last + 1 < len(tokens) and tokens[last + 1] in _ZONE_SUFFIXES else None
        if zone is not None and not (match and any(p.name.endswith(word + zone) for p in match.candidates)):
            # 赣江新区, 湘江新区: a zone named after a river or a region, not the township of that stem (赣州's
            # 赣江街道) nor a sound-alike; one no list holds is asked about, and the geocoder may find it.
            return clarify(
                f"unknown place: {word}{zone}",
                f"没有找到“{word}{zone}”这个地点，请换个说法，例如它所在的城市或区县。",
                unknown_place=word + zone,
                code="unknown_place",
            )
        if match is None:
            return self._repair_place(word, tokens, first, last) or gazetteer.lookup_local(word)
        if all(p.level == "township" and not p.name.endswith(word) for p in match.candidates):
            # 深镇: a township's name without its suffix (高州's 深镇镇), and a slip of 深圳: neither is proved.
            repaired = gazetteer.sounds_like(word)
            if repaired is not None:
                return PlaceMatch((repaired, *match.candidates), "local")
        return match

    def _not_inside(self, reading: Reading, tokens: Tokens, match: PlaceMatch) -> Decision | Reading:
        """The run, whose places (MATCH) all lie outside the place beside it: a landmark of that place (广州北京路),
        a path whose parts disagree where it names divisions (长丰县良渚街道: neither is guessed), else content."""
        first, last, word = reading.unknown[0]
        landmark = self._landmark_inside(reading, tokens, first, word)
        if landmark is not None:
            return landmark
        if all(p.level in _DIVISIONS for p in match.candidates):
            outer_word = next(w for index, w, _ in reading.places if index in (first - 1, last + 1))
            return clarify(
                f"a path whose parts disagree: {outer_word} {word}",
                f"{outer_word}没有叫“{word}”的地方：请说出完整、准确的地名。",
                code="path_disagrees",
            )
        return to_llm(f"unrecognised: {word}", [word], code="unrecognised")

    def _no_place_for(
        self, reading: Reading, tokens: Tokens, *, beside: bool, next_to_place: bool, asks: bool
    ) -> Decision | Reading:
        """The run names no place: a landmark of the place beside it, content, or a place we lack (a clarify that
        says so, which the facade may still geocode)."""
        first, _, word = reading.unknown[0]
        if beside and (landmark := self._landmark_inside(reading, tokens, first, word)) is not None:
            return landmark
        said = next((w for index, w, _ in reading.places if index == first - 1), "") + word
        from_nowhere = "distance" in reading.aspects and not reading.places  # 万达广场离我多远: navigation
        if asks and not from_nowhere and len(reading.places) <= 1 and self.reader.lexicon.names_a_city_feature(said):
            # 人民公园, 万达广场, 中山公园 (a place's name and 公园): in many cities; which one is asked, and no
            # geocoder is asked to pick one.
            return clarify(
                f"a feature many cities have: {said}",
                f"很多城市都有“{said}”：请说出城市，例如“上海{said}”。",
                code="feature_without_city",
            )
        if beside and (parent := self._parent_before(reading, first, word)) is not None:
            # 杭州市青禾镇, 余杭区青禾街道: a township no list holds, said after where it lies. Not the nearest real
            # place: a clarify that says what was not found, which the facade may geocode inside that place.
            return clarify(
                f"unknown place: {word} in {parent.name}",
                f"{parent.name}没有找到叫“{word}”的地方：请说出完整、准确的地名。",
                unknown_place=word,
                within=parent,
                code="unknown_place",
            )
        if len(word) < 2 or next_to_place:
            return to_llm(f"unrecognised: {word}", [word], code="unrecognised")
        if not asks:
            return to_llm(f"unrecognised: {word}; nothing asked of the weather", [word], code="unrecognised")
        if "distance" in reading.aspects and not reading.places:
            # 万达广场离我多远, 一海里是多少公里: from where the asker is, or no place at all: not a place to ask about.
            return to_llm(f"unrecognised: {word}; a distance from no known place", [word], code="unrecognised")
        return clarify(
            f"unknown place: {word}",
            f"没有找到“{word}”这个地点，请换个说法，例如“上海”“北京朝阳区”或“东京”。",
            unknown_place=word,
            code="unknown_place",
        )

    @staticmethod
    def _parent_before(reading: Reading, first: int, word: str) -> Place | None:
        """The one county, city or province said right before WORD, a township's name by its suffix (镇, 乡, 街道)
        and one character at least: where the question says it lies. None for any other word or place."""
        if not word.endswith(TOWNSHIP_SUFFIXES) or len(word.removesuffix("街道")) < 2:
            return None
        match = next((m for index, _, m in reading.places if index == first - 1), None)
        if match is None or match.ambiguous or match.candidates[0].level not in ABOVE_TOWNSHIP:
            return None
        return match.candidates[0]

    def _place_beside(self, reading: Reading, first: int, last: int) -> PlaceMatch:
        """The place said right before or after the run FIRST..LAST (the caller knows there is one)."""
        return next(m for index, _, m in reading.places if index in (first - 1, last + 1))

    def _landmark_inside(self, reading: Reading, tokens: Tokens, first: int, word: str) -> Reading | None:
        """Whether WORD, not understood, at FIRST, names a landmark inside the place before it (西安大雁塔,
        北京天安门广场, 南京明孝陵): if so READING with the word read as part of that place (matched via
        "landmark", no word left unknown), else None. The landmark is what follows the
        place (one-character words the tokenizer cut from its name too: 北京天坛公园) and, where that place
        follows another, begins with its name (上海南京路, 上海东方明珠塔: streets and sights named after places,
        inside the first). It ends with a landmark's suffix (塔, 公园, 路), and a one-character suffix has a
        name of two characters or more before it (明孝陵, not 爬山): a word of its own asks nothing."""
        places, lexicon = reading.places, self.reader.lexicon
        at = next((n for n in range(len(places) - 1, -1, -1) if places[n][0] < first), None)
        if at is None or not any(
            t is not None
            and t not in lexicon.degrees
            and (t in lexicon.aspect_of or t in lexicon.cold or t in lexicon.hot)
            for t in tokens
        ):
            return None  # 深圳平安大厦多高: 高 alone asks how tall the landmark is, not how warm the place
        index = places[at][0]
        between = tokens[index + 1 : first]
        if len(between) > 2 or any(
            token is None or len(token) != 1 or i in reading.conjunction_at
            for i, token in enumerate(between, index + 1)
        ):
            return None
        landmark = "".join(t for t in between if t is not None) + word
        named_after = at > 0 and places[at - 1][0] == index - 1
        if named_after:
            landmark = places[at][1] + landmark
        suffix = lexicon.landmark_suffix(landmark)
        if suffix is None or (len(suffix) == 1 and len(landmark) < 3) or (len(word) == 1 and not named_after):
            return None  # 爬山: a verb and its object; 南京路 alone: whose street it is, the question does not say
        if not named_after and landmark in lexicon.named_after_places:
            return None  # 中山公园, 北京路: the place names the feature, which many cities have; not one inside it
        if named_after:
            places = places[:at] + places[at + 1 :]
            at -= 1
        index, outer_word, outer = places[at]
        inside = (index, outer_word, PlaceMatch(outer.candidates, "landmark", outer.beyond))
        return reading._replace(places=(*places[:at], inside, *places[at + 1 :]), unknown=())

    def _repair_place(self, word: str, tokens: Tokens, first: int, last: int) -> PlaceMatch | None:
        """The place WORD is a homophone typo of; a typo can also turn a character into a word the router
        knows (重亲: 亲 is a filler), so the one-character token on either side is tried with it."""
        if word.isascii():
            repaired = self.reader.gazetteer.repair_latin(word)
            return PlaceMatch((repaired,), "spelling") if repaired is not None else None
        after = tokens[last + 1] if last + 1 < len(tokens) else None
        before = tokens[first - 1] if first > 0 else None
        candidates = [word]
        if isinstance(after, str) and len(after) == 1 and not after.isascii():
            candidates.append(word + after)
        if isinstance(before, str) and len(before) == 1 and not before.isascii():
            candidates.append(before + word)
        for candidate in candidates:
            if len(candidate) <= _MAX_PLACE_ATTEMPT_CHARS:
                repaired = self.reader.gazetteer.repair(candidate)
                if repaired is not None:
                    return PlaceMatch((repaired,), "pinyin")
        return None

    # Above ruff's complexity bound on purpose: the decision's rules in their order of precedence, which a split would
    # hide.
    def _decide(  # noqa: C901
        self, reading: Reading, dates: list[dt.date], today: dt.date, spans: list[DateSpan], *, choice: bool = False
    ) -> Decision:
        """The decision READING makes; CHOICE: it offers its places as alternatives (北京冷还是上海冷), which
        asks how they compare in any measurable aspect."""
        for _, word, match in reading.places:
            if match.ambiguous:
                # Up to three, each with its parents (城关镇（兰州市榆中县）): dozens of towns share a name.
                shown = match.candidates[:_CANDIDATES_SHOWN]
                options = "、".join(p.display for p in shown)
                if len(match.candidates) > len(shown):
                    options += f"等{len(match.candidates)}处"
                asked = clarify(
                    f"ambiguous place: {word}", f"“{word}”可以指{options}，您想查哪一个？", code="ambiguous_place"
                )
                asked.ambiguous = (word, match.candidates)
                return asked
        places = [match.candidates[0] for _, _, match in reading.places]
        if len(places) > 1:
            places = list(dict.fromkeys(places))  # 北京和北京市: one place
        if "distance" in reading.aspects:
            return _distance(places, reading)
        if not places:
            if reading.says_weather:  # 周一了不想上班: a day and no word of the weather is no question of it
                return clarify(NO_PLACE_REASON.removeprefix("clarify: "), _ASK_FOR_PLACE, code="no_place")
            return to_llm("no weather question recognised", code="not_weather")
        if len(places) > MAX_PLACES:
            return clarify(
                f"too many places: {len(places)}",
                f"一次最多查询{MAX_PLACES}个地点，请分开提问。",
                code="too_many_places",
            )
        aspects = set(reading.aspects) or {"weather"}
        aspect: Aspect
        if len(aspects) == 1:
            aspect = next(iter(aspects))
        elif aspects <= _GENERAL_ASPECTS:
            aspect = "weather"  # the general answer carries every one of these facts
        else:
            return to_llm("several aspects answered apart: " + ",".join(sorted(aspects)), code="several_aspects")
        dates = dates or [today]
        hours = _hours(spans)
        if hours is not None and hours[0] >= 24:  # 后半夜: the night's hours after midnight, the next day's
            dates, hours = [day + dt.timedelta(days=1) for day in dates], (hours[0] - 24, hours[1] - 24)
        outside = self.horizon.first_outside(dates, today, air=aspect == "air")
        if outside is not None:
            name = next((span.name for span in spans if span.name and outside in span.dates), None)
            return clarify(
                f"beyond the forecast horizon: {outside.isoformat()}",
                self.horizon.explain(outside, self.provider_label, air=aspect == "air", name=name),
                code="beyond_horizon",
            )
        compare: Comparison | None = None
        if reading.spread and aspect == "temperature":
            compare = "spread"  # 温差: one place's range, or the difference between places
        elif reading.trend and not reading.compare and len(places) == 1 and len(dates) == 1 and dates[0] > today:
            # 明天会降温吗: a change from today, answered by comparing the two days.
            dates = [today, dates[0]]
            compare = "cold" if reading.trend == "cold" else "hot"
        elif reading.compare or (choice and aspect != "weather"):
            if len(places) < 2 and len(dates) < 2:
                if reading.asks_which or dates[0] <= today:
                    return to_llm("comparison with nothing to compare", code="no_comparison")
                dates = [today, dates[0]]  # 北京明天更冷吗, 会冷一点吗: the day to come, than today
            compare = _comparison(aspect, reading)
            if compare is None:
                return to_llm("comparison without a measurable quantity", code="no_comparison")
        how = f"; compare {compare}" if compare else ""
        vias = [match.via for _, _, match in reading.places if match.via != "name"]
        via = f" via {','.join(sorted(set(vias)))}" if vias else ""
        when = f" ({hours[0]:02d}-{hours[1]:02d}h)" if hours else ""
        reason = f"rule: {len(places)} place(s){via}, {len(dates)} day(s){when}, {aspect}{how}"
        # A yes-no question about a temperature is answered from the day's high or low that the answer shows.
        threshold = reading.threshold if aspect == "temperature" and compare is None else None
        return Decision(
            "rule", [p.name for p in places], dates, aspect, reason, places, compare, None, hours, (), None, threshold
        )


def _distance(places: list[Place], reading: Reading) -> Decision:
    """北京到上海多远: the straight-line distance between exactly two places, and nothing else asked."""
    asked = set(reading.aspects)
    if asked != {"distance"} or reading.compare or reading.cold or reading.hot:
        return to_llm(
            "distance together with something else: " + ",".join(sorted(asked - {"distance"}) or ["compare"]),
            code="distance_unread",
        )
    if len(places) != 2:
        # 到北京多远, 距离春节还有几天: from where the asker is, or no places at all; navigation, not weather,
        # so not a "which places?" either.
        return to_llm(f"distance needs two places, {len(places)} given", code="distance_unread")
    return Decision(
        "rule",
        [p.name for p in places],
        [],
        "distance",
        "rule: 2 place(s), distance",
        places=places,
        reason_code="distance",
    )


def _locate(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Where each of WORDS stands in TEXT (unknown runs are contiguous text), as (start, end)."""
    found = []
    for word in words:
        start = text.find(word)
        if start >= 0:
            found.append((start, start + len(word)))
    return found


def _sure_of_the_sign(decision: Decision, text: str) -> Decision:
    """DECISION, without its threshold where TEXT has a minus sign: normalize drops it (-5度以下吗 reads as
    5度以下), so the figure read may not be the one asked about, and no yes or no is given to it."""
    if decision.threshold is None or not has_a_minus_sign(text):  # most decisions: no threshold to doubt
        return decision
    return dataclasses.replace(decision, threshold=None)


def _masked(text: str, spans: Sequence[DateSpan | PlaceSpan]) -> str:
    """TEXT with every span (a date expression, a place's name) blanked out."""
    for span in spans:
        text = text[: span.start] + " " * (span.end - span.start) + text[span.end :]
    return text


def _hours(spans: list[DateSpan]) -> tuple[int, int] | None:
    """The hours asked about: the part of the day (今晚, 明天早上), when the question names exactly one; the
    hour of a clock time, read within it (下午3点: 15 to 16 h; 3pm says its half itself); or from one clock
    time to the next (3点到5点)."""
    parts: set[tuple[int, int]] = set()
    times: list[tuple[str, int, int]] = []  # (kind, first and last hour as said) of each clock time
    for span in spans:  # a loop, not comprehensions: most questions name no hours, and this runs for each
        if span.hours is not None:
            if span.is_clock_time:
                times.append((span.kind, span.hours[0], span.hours[1] - 1))  # 七八点: 7 and 8; 3点: 3 and 3
            else:
                parts.add(span.hours)
    part = parts.pop() if len(parts) == 1 else None
    if not times:
        return part
    # 3pm says its half; 3点 is read within the part of the day.
    # An approximate one (五六点) reads its first hour so, and the last as many hours on (17 to 18, not 6), within
    # its day (晚上十一二点: 23 h, the day's last).
    clocks = [
        (hour, min(hour + last - first, 23) if hour < 24 else hour + last - first)
        for kind, first, last in times
        for hour in [first if kind == "hour" else _on_the_clock(first, part)]
    ]
    if len(clocks) == 1:
        (first, last), kind = clocks[0], times[0][0]
        if kind == "clock_until":  # 早上8点前: from the part of the day's start (or midnight) until 8
            first, last = (part[0] if part else 0), first - 1
        elif kind == "clock_from":  # 下午5点以后: from 17 h to the day's end
            last = 23
        return (first, last + 1) if first <= last else part
    if len(clocks) == 2 and clocks[0][0] < clocks[1][0]:
        return clocks[0][0], clocks[1][0]
    return part


def _on_the_clock(said: int, part: tuple[int, int] | None) -> int:
    """The hour (0-23) of a clock time said as SAID (0-24): within PART (下午3点 is 15, 晚上8点 20, 凌晨3点 3,
    晚上12点 the day's last hour); without one, 1 to 5 are the afternoon's (明天3点 is 15) and the rest as said.
    Within the night's hours after midnight (后半夜3点) it is the next day's hour, past 24 as that part is."""
    if part is not None and part[0] >= 24 and said <= 12:
        return said % 12 + 24
    if said >= 12:
        return 23 if said == 24 or (said == 12 and part is not None and part[0] >= 18) else said
    if part is None:
        return said + 12 if 1 <= said <= 5 else said
    first, end = part
    # Of the morning's hour and the afternoon's, the one inside the part, else the nearer (早上9点: 9).
    return min((said, said + 12), key=lambda hour: max(first - hour, hour - (end - 1), 0))


def _when_asked(spans: list[DateSpan], clean: str, where_one_is: tuple[str, ...]) -> list[DateSpan]:
    """SPANS without those that say when someone is somewhere (我现在在杭州，明天下雨吗; 我今天人在北京，后天呢):
    a date right before one of WHERE_ONE_IS, where another date says when the weather is asked. Alone, such a
    date is the one asked (北京现在在下雨吗)."""
    if len(spans) < 2:
        return spans
    asked = [span for span in spans if not clean.startswith(where_one_is, span.end)]
    return asked if asked and len(asked) < len(spans) else spans


def _comparison(aspect: Aspect, reading: Reading) -> Comparison | None:
    if reading.cold:
        return "cold"
    if reading.hot or aspect == "temperature":
        return "hot"
    return _COMPARABLE.get(aspect)


def _standing(
    reading: Reading,
    place_at: Mapping[int, Place],
    span_at: Mapping[int, DateSpan],
    taken_back: set[int],
    corrected: set[int],
) -> tuple[tuple[PlaceAt, ...], list[DateSpan]]:
    """The places and date spans that stand: none of the mentions at CORRECTED, nor any mention of what
    TAKEN_BACK names (a range keeps its other days: 明天到周五，周四不用看)."""
    gone = taken_back | corrected
    gone_places = {place_at[i] for i in taken_back if i in place_at}
    gone_days = {d for i in taken_back if i in span_at for d in span_at[i].dates}
    places = tuple(p for p in reading.places if p[0] not in gone and place_at[p[0]] not in gone_places)
    kept = []
    for i, span in span_at.items():
        if i in gone:
            continue
        if gone_days.intersection(span.dates):
            span = span._replace(dates=tuple(d for d in span.dates if d not in gone_days))
            if not span.dates:
                continue
        kept.append(span)
    return places, kept


def _runs_of_places(
    places: Sequence[PlaceAt], tokens: Tokens, conjunction_at: tuple[int, ...], is_filler: Callable[[str | None], bool]
) -> list[list[PlaceAt]]:
    """PLACES in runs said one after the other: nothing but fillers between two of a run (no conjunction, no
    date, no other word)."""
    runs: list[list[PlaceAt]] = []
    for place in places:
        if runs:
            last = runs[-1][-1][0]
            between = range(last + 1, place[0])
            if all(i not in conjunction_at and is_filler(tokens[i]) for i in between):
                runs[-1].append(place)
                continue
        runs.append([place])
    return runs


def _paths_in_run(
    run: list[PlaceAt], units: list[tuple[Place, ...]], encloses: Callable[[Place, Place], bool]
) -> list[list[tuple[PlaceAt, tuple[Place, ...]]]]:
    """RUN (with each word's UNITS) cut into paths, left to right, each as long as one of its units still lies
    inside all the others; a path of two or more starts with its innermost place, alone in its match."""
    paths: list[list[tuple[PlaceAt, tuple[Place, ...]]]] = []
    start = 0
    while start < len(run):
        end, inner = start + 1, None
        while (
            end < len(run)
            and run[end][0] != run[end - 1][0]  # one word for several places (京津冀) is a list, not a path
            and (found := _innermost(units[start : end + 1], encloses)) is not None
        ):
            end, inner = end + 1, found
        said = list(zip(run[start:end], units[start:end], strict=True))
        if inner is not None:
            at, word, match = next(place for place, own in said if inner in own)
            said.insert(0, ((at, word, PlaceMatch((inner,), match.via)), (inner,)))
        paths.append(said)
        start = end
    return paths


def _innermost(units: list[tuple[Place, ...]], encloses: Callable[[Place, Place], bool]) -> Place | None:
    """The one unit of UNITS (each word's units) that lies inside a unit of every other word, or None."""
    found = {
        unit
        for at, own in enumerate(units)
        for unit in own
        if all(
            any(outer == unit or encloses(outer, unit) for outer in other) for n, other in enumerate(units) if n != at
        )
    }
    return next(iter(found)) if len(found) == 1 else None


def _holds_cities(place: Place) -> bool:
    """Whether PLACE is a province that holds cities (江苏省), not a city of a province's level (北京市, 香港)."""
    return place.level == "province" and not place.name.endswith(("市", "特别行政区"))


#: What a command to read the forecast ends with (播放明天的天气, 我要听天气预报).
_FORECAST_NOUNS = ("天气预报", "天气情况", "天气")


def _names_a_measure(reading: Reading) -> bool:
    """Whether READING names something of the weather to compare beside its compare word (哪天更冷, 哪个风大)."""
    return bool(reading.aspects or reading.cold or reading.hot or reading.trend or reading.spread)

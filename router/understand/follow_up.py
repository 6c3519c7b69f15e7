"""Follow-ups in a conversation: fill what a question leaves out from the last rule answer."""

from __future__ import annotations

import datetime as dt
from typing import Literal, NamedTuple

from hybrid_weather.rules import Place, PlaceMatch, Reading

from .decision import Decision

#: How many recent places a comparison without a count word means (这些城市哪个更热 → the last two).
DEFAULT_FOLLOW_UP_PLACES = 2
#: Words that make a question a follow-up even when it names only a place: 那上海呢, 深圳也是吗,
#: 苏州也一样吗, 杭州同样吗 (ask the last question again, about that place).
_FOLLOW_UP_WORDS = ("呢", "也", "一样", "同样")


def is_follow_up(clean: str) -> bool:
    """Whether normalised CLEAN says it asks the last question again (呢, 也, 一样, 同样)."""
    return any(word in clean for word in _FOLLOW_UP_WORDS)


#: How a count is said in a clarifying question (两个, not 二个).
_COUNT_WORDS = {2: "两", 3: "三", 4: "四", 5: "五"}


def which_places(reading: Reading, context: Decision, recent: list[Place]) -> str | None:
    """The question to ask back when READING counts the places it means (这两个城市, 这俩, 三地) and the
    conversation gives no one set of that many: three places asked about last and "these two", or four
    asked for where only three were ever named. None when the count fits, or none was said."""
    count = reading.place_count
    if reading.places or not count or len(context.places) < 2 or count == len(context.places):
        return None
    if count > len(context.places) and len(recent) >= count:
        return None  # 这三个城市 after 北京, then 上海和广州: the last three asked about (borrow_context)
    names = "、".join(place.display for place in context.places)
    said = _COUNT_WORDS.get(count, str(count))
    if count < len(context.places):
        return f"您说的{said}个地方是{names}中的哪{said}个？请说出地名。"
    return f"上次只问了{names}，您说的{said}个地方还有哪里？请说出地名。"


#: What a follow-up may take from the last answer, in the order taken.
Borrowed = Literal["places", "dates", "aspect", "comparison"]


class FollowUp(NamedTuple):
    """A question of a conversation, with what it leaves out filled from the last rule answer. READING is a new
    Reading: the Reader's, which stays as found, with the borrowed parts added (borrowed places match via
    "context" and stand at negative token indexes); BORROWED names those parts, so what the question said
    itself is READING less them."""

    reading: Reading
    dates: list[dt.date]
    #: Empty when nothing was borrowed (你好 is no follow-up).
    borrowed: tuple[Borrowed, ...] = ()


def borrow_context(
    reading: Reading, dates: list[dt.date], context: Decision, recent: list[Place], follow_up: bool
) -> FollowUp:
    """Fill what READING and DATES leave out from CONTEXT: 后天呢 keeps the place, 那上海呢 the day, 这两个城市哪个更热
    the last two places asked about (the count comes from the words 两个/三个/几个, never from a character)."""
    if not (dates or reading.aspects or reading.compare or follow_up):
        return FollowUp(reading, dates)
    if not reading.places:
        if (reading.compare and len(context.places) < 2) or (reading.place_count or 0) > len(context.places):
            count = DEFAULT_FOLLOW_UP_PLACES if reading.place_count is None else reading.place_count
            places = recent[-count:] if count else list(recent)
        else:
            places = list(context.places)
        reading = reading._replace(
            places=tuple((-len(places) + i, p.display, PlaceMatch((p,), "context")) for i, p in enumerate(places))
        )
        borrowed: tuple[Borrowed, ...] = ("places",)
        if not dates:
            dates = list(context.dates)
            borrowed = ("places", "dates")
        if not reading.aspects and context.aspect:
            # 北京和上海明天哪个冷 → 后天呢: the same question of another day, comparison and all.
            return _borrow_question(FollowUp(reading, dates, borrowed), context, comparison=True)
        return FollowUp(reading, dates, borrowed)
    if not dates and (follow_up or not (reading.aspects or reading.compare)):
        # 那上海 keeps the day and the question; 上海也冷吗 keeps the day (its own question says the rest).
        asked = FollowUp(reading, list(context.dates), ("dates",))
        if not reading.aspects and not reading.compare and context.aspect:
            return _borrow_question(asked, context, comparison=False)
        return asked
    if follow_up and not reading.aspects and not reading.compare and context.aspect:
        # 北京明天会下雨吗 → 那广州后天呢: another place and another day, the same question (and, of places
        # compared, the same comparison: 广州和深圳后天呢).
        return _borrow_question(FollowUp(reading, dates), context, comparison=len(reading.places) > 1)
    return FollowUp(reading, dates)


def _borrow_question(asked: FollowUp, context: Decision, *, comparison: bool) -> FollowUp:
    """ASKED with CONTEXT's aspect, with the temperature it asked about (会超过30度吗 → 那后天呢: above 30 on
    that day too) and, where COMPARISON, its comparison. Only for a CONTEXT that has an aspect."""
    reading = asked.reading
    if context.aspect is None:
        return asked
    aspects = (*reading.aspects, context.aspect)
    compare = context.compare
    if not comparison or compare is None or reading.compare:
        borrowed = reading._replace(aspects=aspects, threshold=context.threshold)
        return FollowUp(borrowed, asked.dates, (*asked.borrowed, "aspect"))
    borrowed = reading._replace(
        aspects=aspects,
        threshold=context.threshold,
        compare=True,
        cold=reading.cold or compare == "cold",
        hot=reading.hot or compare == "hot",
        spread=reading.spread or compare == "spread",
    )
    return FollowUp(borrowed, asked.dates, (*asked.borrowed, "aspect", "comparison"))

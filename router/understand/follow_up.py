"""Follow-ups in a conversation: fill what a question leaves out from the last rule answer."""

from __future__ import annotations

import datetime as dt

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
    count = reading.count
    if reading.places or not count or len(context.places) < 2 or count == len(context.places):
        return None
    if count > len(context.places) and len(recent) >= count:
        return None  # 这三个城市 after 北京, then 上海和广州: the last three asked about (borrow_context)
    names = "、".join(place.display for place in context.places)
    said = _COUNT_WORDS.get(count, str(count))
    if count < len(context.places):
        return f"您说的{said}个地方是{names}中的哪{said}个？请说出地名。"
    return f"上次只问了{names}，您说的{said}个地方还有哪里？请说出地名。"


def borrow_context(
    reading: Reading, dates: list[dt.date], context: Decision, recent: list[Place], follow_up: bool
) -> tuple[list[dt.date], str]:
    """Fill READING and DATES from CONTEXT: 后天呢 keeps the place, 那上海呢 the day, 这两个城市哪个更热 the
    last two places asked about (the count comes from the words 两个/三个/几个, never from a character).

    Returns the dates to use and what was borrowed ("" when nothing was: 你好 is no follow-up).
    """
    if not (dates or reading.aspects or reading.compare or follow_up):
        return dates, ""
    borrowed = []
    if not reading.places:
        if (reading.compare and len(context.places) < 2) or (reading.count or 0) > len(context.places):
            count = DEFAULT_FOLLOW_UP_PLACES if reading.count is None else reading.count
            places = recent[-count:] if count else list(recent)
        else:
            places = list(context.places)
        reading.places = [(-len(places) + i, p.display, PlaceMatch((p,), "context")) for i, p in enumerate(places)]
        borrowed.append("places")
        if not dates:
            dates = list(context.dates)
            borrowed.append("dates")
        if not reading.aspects and context.aspect:
            # 北京和上海明天哪个冷 → 后天呢: the same question of another day, comparison and all.
            _borrow_question(reading, context, borrowed, comparison=True)
    elif not dates and (follow_up or not (reading.aspects or reading.compare)):
        # 那上海 keeps the day and the question; 上海也冷吗 keeps the day (its own question says the rest).
        dates = list(context.dates)
        borrowed.append("dates")
        if not reading.aspects and not reading.compare and context.aspect:
            _borrow_question(reading, context, borrowed, comparison=False)
    elif follow_up and not reading.aspects and not reading.compare and context.aspect:
        # 北京明天会下雨吗 → 那广州后天呢: another place and another day, the same question (and, of places
        # compared, the same comparison: 广州和深圳后天呢).
        _borrow_question(reading, context, borrowed, comparison=len(reading.places) > 1)
    return dates, ", ".join(borrowed)


def _borrow_question(reading: Reading, context: Decision, borrowed: list[str], *, comparison: bool) -> None:
    """CONTEXT's aspect for READING, with the temperature it asked about (会超过30度吗 → 那后天呢: above 30 on
    that day too) and, where COMPARISON, its comparison. Only for a CONTEXT that has an aspect."""
    if context.aspect is None:
        return
    reading.aspects.append(context.aspect)
    reading.threshold = context.threshold
    borrowed.append("aspect")
    if comparison and context.compare is not None and not reading.compare:
        reading.compare = True
        reading.cold |= context.compare == "cold"
        reading.hot |= context.compare == "hot"
        reading.spread |= context.compare == "spread"
        borrowed.append("comparison")

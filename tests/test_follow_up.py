"""What the Reader found and what a follow-up borrowed from the last answer are kept apart."""

import datetime as dt

import pytest

from hybrid_weather.router import HybridRouter
from hybrid_weather.router.session import Session
from hybrid_weather.router.understand.follow_up import borrow_context, is_follow_up

TODAY = dt.date(2026, 11, 29)


@pytest.fixture(scope="module")
def router():
    with HybridRouter(provider="demo", ledger="off") as router:
        yield router


def _reading(router, text):
    reader = router.parts.parser.reader
    return reader.read(reader.tokens(text, reader.dates(text, TODAY)), text)


def _session_after(router, question):
    session = Session()
    router.ask(question, today=TODAY, session=session)
    return session


def test_a_reading_cannot_be_changed_once_read(router):
    reading = _reading(router, "北京和上海明天哪个冷")
    assert isinstance(reading.places, tuple) and isinstance(reading.aspects, tuple)
    with pytest.raises(AttributeError):
        reading.places = ()


@pytest.mark.parametrize(
    "first, again, borrowed",
    [
        ("北京和上海明天哪个冷", "后天呢", ("places", "aspect", "comparison")),
        ("北京明天会下雨吗", "那上海呢", ("dates", "aspect")),
        ("北京明天会下雨吗", "那广州后天呢", ("aspect",)),
        ("北京和上海明天天气", "这两个城市哪个更热", ("places", "dates")),
    ],
)
def test_a_follow_up_names_what_it_borrowed_and_leaves_what_was_found(router, first, again, borrowed):
    context = router.route(first, today=TODAY)
    found = _reading(router, again)
    before = found._replace()
    spans = router.parts.parser.reader.dates(again, TODAY)
    dates = [day for span in spans for day in span.dates]
    asked = borrow_context(found, dates, context, list(context.places), follow_up=is_follow_up(again))
    assert asked.borrowed == borrowed
    assert found == before  # the Reader's reading, as found
    if "places" in borrowed:
        assert not found.places and [m.via for _, _, m in asked.reading.places] == ["context"] * len(context.places)
    if "aspect" in borrowed:
        assert asked.reading.aspects == (*found.aspects, context.aspect)
    decision = router.route(again, today=TODAY, session=_session_after(router, first))
    assert decision.reason.endswith(f"from context: {', '.join(borrowed)}")


def test_nothing_is_borrowed_by_a_question_that_is_no_follow_up(router):
    context = router.route("北京明天会下雨吗", today=TODAY)
    found = _reading(router, "你好")
    asked = borrow_context(found, [], context, list(context.places), follow_up=False)
    assert asked.borrowed == () and asked.reading is found

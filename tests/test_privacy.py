"""Masking personal data: a table of positive and negative cases (rules/privacy.py)."""

import pytest

from hybrid_weather.rules import contains_personal_data, mask_personal_data

from personal_data import CASES, EMAIL_QUESTIONS


@pytest.mark.parametrize("text,masked", CASES)
def test_masking_table(text, masked):
    assert mask_personal_data(text) == masked
    assert contains_personal_data(text) == (text != masked)


def test_the_table_is_large_and_has_both_kinds():
    assert len(CASES) >= 40
    assert sum(1 for t, m in CASES if t == m) >= 15 and sum(1 for t, m in CASES if t != m) >= 25


@pytest.mark.parametrize("question", EMAIL_QUESTIONS)
def test_no_part_of_an_e_mail_address_reaches_the_geocoder_or_the_ledger(question, weather_server, tmp_path):
    import contextlib
    import sqlite3

    from hybrid_weather.router import HybridRouter, LLMUnavailable, Settings

    from support import TODAY

    ledger = tmp_path / "l.db"
    with HybridRouter(settings=Settings(open_meteo_url=weather_server.url), ledger=str(ledger)) as router:
        decision = router.route(question, today=TODAY)
        with contextlib.suppress(LLMUnavailable):  # no LLM here: a failed row, kept all the same
            router.ask(question, today=TODAY)
    searched = [params["name"] for params in weather_server.params["/v1/search"]]
    local_parts = ["zhang", "brien", "user", "li.wei", "tag", "example", "qq", "163"]
    for word in [*searched, *decision.unknown_words, decision.unknown_place or ""]:
        assert not any(part in word for part in local_parts), (question, word)
    with sqlite3.connect(ledger) as db:
        stored = db.execute("SELECT query, COALESCE(unknown_words, '') FROM requests").fetchall()
    assert len(stored) == 1
    query, words = stored[0]
    assert "[email]" in query and "@" not in query and "＠" not in query
    assert not any(part in query.lower() or part in words for part in local_parts), stored

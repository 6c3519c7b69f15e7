"""A router whose LLM is the scripted OpenAI-compatible server on 127.0.0.1, and its ledger's rows: what
the tests of the LLM loop, its streaming and its tools build on."""

from hybrid_weather.router import HybridRouter, Settings

from support import FAST_HTTP, FAST_LLM

KEY = "sk-test-secret-key-0123456789"


QUESTION = "北京明天适合出游吗"


def make_router(weather_server, llm_server, *, model="gpt-4o-mini", ledger=":memory:", key=KEY, **llm):
    settings = Settings(
        open_meteo_url=weather_server.url, openai_api_key=key, openai_base_url=llm_server.base_url, model=model
    )
    return HybridRouter(settings=settings, ledger=ledger, http_options=FAST_HTTP, llm_options={**FAST_LLM, **llm})


def ledger_rows(router):
    router.ledger.flush()
    db = router.ledger.connect()
    rows = [dict(r) for r in db.execute("SELECT * FROM requests ORDER BY id")]
    db.close()
    return rows

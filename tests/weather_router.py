"""A router over the fake Open-Meteo/AMap server on 127.0.0.1 with fast retries, and a question asked of it
on the fake server's today: what the weather tests build on."""

from hybrid_weather.router import HybridRouter, Settings

from support import FAST_HTTP, TODAY


def make_router(url, *, provider="open-meteo", cache_ttl=600, deadline=5.0, amap_key=None, ledger="off", **http):
    settings = Settings(provider=provider, open_meteo_url=url, amap_url=url, amap_key=amap_key)
    return HybridRouter(
        provider=provider,
        settings=settings,
        cache_ttl=cache_ttl,
        deadline=deadline,
        ledger=ledger,
        http_options={**FAST_HTTP, **http},
    )


def ask(router, text):
    return router.ask(text, today=TODAY, emoji=False)

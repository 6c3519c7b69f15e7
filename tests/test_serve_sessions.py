"""Conversations of /v1/ask across the fleet (router/serve/sessions.py): with HYBRID_WEATHER_CACHE_URL
they live in the real Redis, so a follow-up on another host is answered in context; concurrent follow-ups
each keep their turn (in Redis and in the SQLite file alike); an unreachable Redis makes a follow-up a new
question, never an error."""

import threading
import urllib.error

import pytest
from live_server import post, serving

from hybrid_weather.agent.weather.shared_cache import SharedCache
from hybrid_weather.router.serve.sessions import RedisSessions, SqliteSessions

from fake_weather import refused_url
from support import REDIS_URL, TODAY


def _stores(kind, tmp_path, prefix):
    if kind == "sqlite":
        return [SqliteSessions(tmp_path / "sessions.db") for _ in range(2)], []
    caches = [SharedCache(REDIS_URL, keep_s=60, prefix=prefix) for _ in range(2)]
    return [RedisSessions(cache) for cache in caches], caches


@pytest.mark.parametrize("kind", ["redis", "sqlite"])
def test_concurrent_follow_ups_from_two_processes_each_keep_their_turn(kind, tmp_path, request):
    prefix = request.getfixturevalue("redis_prefix") if kind == "redis" else ""
    stores, caches = _stores(kind, tmp_path, prefix)  # two stores: two workers, or two hosts
    stores[0].add("key:a", "conversation", "北京明天天气", "晴")
    start = threading.Barrier(8)

    def follow_up(i):
        start.wait()
        stores[i % 2].add("key:a", "conversation", f"那城市{i}呢？", f"答{i}")

    threads = [threading.Thread(target=follow_up, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    turns = stores[1].turns("key:a", "conversation")
    assert turns[0] == ("北京明天天气", "晴") and sorted(turns[1:]) == sorted(
        (f"那城市{i}呢？", f"答{i}") for i in range(8)
    )
    stores[0].add("key:a", "private", "我的电话13812345678，上海明天天气", "晴")
    assert stores[1].turns("key:a", "private") == [("我的电话[phone]，上海明天天气", "晴")]
    for store in stores:
        store.close()
    for cache in caches:
        cache.close()


def test_redis_sessions_keep_their_newest_turns_and_expire_when_idle(redis_prefix):
    import time

    cache = SharedCache(REDIS_URL, keep_s=60, prefix=redis_prefix)
    store = RedisSessions(cache, idle_s=0.3, max_turns=3)
    for i in range(5):
        store.add("-", "s", f"问{i}", f"答{i}")
    assert store.turns("-", "s") == [("问2", "答2"), ("问3", "答3"), ("问4", "答4")]
    time.sleep(0.5)
    assert store.turns("-", "s") == []  # idle too long: a new conversation
    cache.close()


def test_an_unreachable_redis_makes_a_follow_up_a_new_question(caplog):
    cache = SharedCache(refused_url().replace("http://", "redis://"), keep_s=60)
    store = RedisSessions(cache)
    store.add("-", "s", "北京明天天气", "晴")  # lost, with one warning, never an error
    assert store.turns("-", "s") == []
    assert "unreachable" in caplog.text
    cache.close()


def test_a_follow_up_on_another_host_is_answered_in_context(tmp_path, llm_server, redis_prefix):
    def host(name):  # a serve process with a home of its own, sharing only the Redis
        return serving(tmp_path / f"host-{name}", llm_server, HYBRID_WEATHER_HOME=str(tmp_path / f"home-{name}"),
                       HYBRID_WEATHER_CACHE_URL=REDIS_URL, HYBRID_WEATHER_CACHE_PREFIX=redis_prefix)  # fmt: skip

    with host("a") as a, host("b") as b:
        day = TODAY.isoformat()
        first = post(
            f"{a.url}/v1/ask", {"query": "广州后天会下雨吗", "session_id": "fleet-conversation-1", "today": day}
        )[1]
        follow = post(f"{b.url}/v1/ask", {"query": "那北京呢？", "session_id": "fleet-conversation-1", "today": day})[1]
        again = post(f"{a.url}/v1/ask", {"query": "大后天呢？", "session_id": "fleet-conversation-1", "today": day})[1]
        # A session nobody began continues nothing: 那北京呢 alone is no lookup, and goes to the model
        # (whose script is spent here: 503).
        with pytest.raises(urllib.error.HTTPError) as alone:
            post(f"{b.url}/v1/ask", {"query": "那北京呢？", "session_id": "fleet-conversation-2", "today": day})
    assert follow["route"] == "rule" and follow["decision"]["cities"] == ["北京市"]
    assert follow["decision"]["dates"] == first["decision"]["dates"] and follow["decision"]["aspect"] == "rain"
    assert again["route"] == "rule" and again["decision"]["cities"] == ["北京市"]  # host a read host b's turn
    assert alone.value.code == 503
    assert not (tmp_path / "home-a" / "serve-sessions.db").exists()  # nothing kept on the host

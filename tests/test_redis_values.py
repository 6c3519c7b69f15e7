"""Values of the wrong type or shape in the fleet's Redis (issue 49, item 7): whatever sits under one key —
planted by hand, left by another program under our prefix, nested deeper than a parser goes — is a miss
for that key alone. Never a 500, and never the whole cache marked down: every other session, budget and
rate limit goes on being counted in Redis. Tested against the real Redis and real serve processes."""

import json
import logging

import pytest
import redis
from live_server import post, serving

from hybrid_weather.agent.weather.shared_cache import SharedCache
from hybrid_weather.router.serve.sessions import RedisSessions

from support import REDIS_URL, TODAY

DAY = TODAY.isoformat()
#: Long enough to be a private session id under any rule the service sets.
SESSION = "poisoned-session-4f1c2a9e8b7d6c5e"
NEIGHBOUR = "healthy-session-9a8b7c6d5e4f3a2b"


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _plant(client: redis.Redis, key: bytes, poison: str) -> None:
    """Replace KEY (a session's list) with POISON: a value of another type, or a list of bad turns."""
    client.delete(key)
    if poison == "hash":
        client.hset(key, "turns", "[]")
    elif poison == "string":
        client.set(key, "not a list")
    elif poison == "deep":
        client.rpush(key, _deep(100_000))
    elif poison == "shapes":
        client.rpush(key, "{}", "42", '["only one"]', "[1, 2]", "not json", '["广州", "晴"]', b"\xff\xfe")


def keys_of(client: redis.Redis, prefix: str) -> list[bytes]:
    return list(client.scan_iter(match=f"{prefix}*session*"))


@pytest.mark.parametrize("poison", ["hash", "string", "deep", "shapes"])
def test_a_poisoned_session_is_a_new_conversation_and_the_rest_of_redis_stays_in_use(
    poison, tmp_path, llm_server, redis_prefix
):
    client = redis.Redis.from_url(REDIS_URL)
    with serving(
        tmp_path, llm_server, HYBRID_WEATHER_CACHE_URL=REDIS_URL, HYBRID_WEATHER_CACHE_PREFIX=redis_prefix
    ) as server:
        post(f"{server.url}/v1/ask", {"query": "广州后天会下雨吗", "session_id": SESSION, "today": DAY})
        (key,) = keys_of(client, redis_prefix)
        _plant(client, key, poison)
        post(f"{server.url}/v1/ask", {"query": "杭州后天会下雨吗", "session_id": NEIGHBOUR, "today": DAY})

        status, answer = post(f"{server.url}/v1/ask", {"query": "上海明天天气", "session_id": SESSION, "today": DAY})
        # Right after the poison was read, another session's follow-up is still answered from Redis: had the
        # poison marked Redis down, 那北京呢 would be a new question, which alone is no lookup.
        _, follow = post(f"{server.url}/v1/ask", {"query": "那北京呢？", "session_id": NEIGHBOUR, "today": DAY})
        # The poisoned session itself goes on: its new turn is kept, and a follow-up reads it.
        _, own = post(f"{server.url}/v1/ask", {"query": "那北京呢？", "session_id": SESSION, "today": DAY})
    client.close()
    assert status == 200 and answer["route"] == "rule" and answer["decision"]["cities"] == ["上海市"]
    assert follow["route"] == "rule" and follow["decision"]["cities"] == ["北京市"]
    assert follow["decision"]["aspect"] == "rain"  # the neighbour's context, read from Redis
    assert own["route"] == "rule" and own["decision"]["cities"] == ["北京市"]


def test_sessions_read_only_the_turns_of_the_right_shape(redis_prefix):
    cache = SharedCache(REDIS_URL, keep_s=60, prefix=redis_prefix)
    sessions = RedisSessions(cache)
    sessions.add("key:test", SESSION, "广州后天会下雨吗", "有雨")
    client = redis.Redis.from_url(REDIS_URL)
    (key,) = keys_of(client, redis_prefix)
    client.rpush(key, _deep(50_000), '["a", "b", "c"]', '[null, "x"]', json.dumps(["上海明天天气", "晴"]))
    assert sessions.turns("key:test", SESSION) == [("广州后天会下雨吗", "有雨"), ("上海明天天气", "晴")]
    # A list grown past what a session keeps (by another writer) is read only at its end.
    client.rpush(key, *[json.dumps([f"q{i}", "a"]) for i in range(100_000)])
    assert len(sessions.turns("key:test", SESSION)) == sessions.max_turns
    assert not cache.down
    client.close()
    cache.close()


@pytest.mark.parametrize("planted", ["list", "hash", "nan", "inf", "word"])
def test_counters_and_buckets_of_the_wrong_shape_are_a_miss_for_their_key_alone(planted, redis_prefix, caplog):
    cache = SharedCache(REDIS_URL, keep_s=60, prefix=redis_prefix)
    client = redis.Redis.from_url(REDIS_URL)
    for name in ("budget:key:a:usd:day", "rate:key:a"):
        key = f"{redis_prefix}{name}"
        if planted == "list":
            client.rpush(key, "1")
        elif planted == "hash":
            client.hset(key, "tokens", "x")
        else:
            client.set(key, planted)
    with caplog.at_level(logging.WARNING, logger="hybrid_weather"):
        assert cache.read_float("budget:key:a:usd:day") == 0.0  # counts nothing: the worker's own count stands
        assert cache.add_float("budget:key:a:usd:day", 1.5, 60) is None  # counted by the worker meanwhile
        cache.take_token("rate:key:a", 10.0, 10.0)
    # The rest of Redis is in use: another key's counter is counted there, not in the worker.
    assert not cache.down
    assert cache.add_float("budget:key:b:usd:day", 2.0, 60) == 2.0
    assert cache.take_token("rate:key:b", 10.0, 10.0) == 0.0
    assert "unreachable" not in caplog.text
    client.close()
    cache.close()


def test_a_lock_key_that_never_expires_does_not_hold_every_fetch(redis_prefix):
    """A fetch lock is always taken with an expiry: a value without one under its name is no lock, and must
    not make every worker wait for a holder that does not exist."""
    cache = SharedCache(REDIS_URL, keep_s=60, prefix=redis_prefix)
    client = redis.Redis.from_url(REDIS_URL)
    key = ("forecast", 31.23, 121.47, 0)
    client.set(cache._name("lock", key), "planted")
    assert cache.acquire(key, hold_s=5) is not None
    taken = cache.acquire(("forecast", 39.9, 116.4, 0), hold_s=5)
    assert taken is not None and cache.acquire(("forecast", 39.9, 116.4, 0), hold_s=5) is None  # a real lock holds
    assert not cache.down
    client.close()
    cache.close()

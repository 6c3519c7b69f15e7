"""Failed authentication is slowed, and the dashboard's cookie needs the server's secret (issue 49, item 3),
over real serve processes: 2,000 wrong keys (the login form and Bearer, two processes sharing Redis) get
429 with retry-after past the first few, while the right key from another address is still let in; an
attacker spread over many addresses who fails with the prefix of someone's key gets one guess from each,
and never locks the key's owner out; a cookie forged from the key's SHA-256, as the key file allows, is
refused, and a cookie from one host opens another only when both hold the same secret."""

import hashlib
import hmac
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse

import pytest
from live_server import serving

from hybrid_weather.router.serve.access import (
    COOKIE,
    FAILURE_WINDOW_S,
    FAILURES_PER_ADDRESS,
    FAILURES_PER_PREFIX,
    SECRET_FILE,
)

from support import REDIS_URL, subprocess_env

KEY = "team-alpha-7f3a9c2e51d84b06"


class Client:
    """One keep-alive HTTP connection to URL from the loopback address SOURCE (127.0.0.x)."""

    def __init__(self, url, source="127.0.0.1"):
        parts = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10,
                                                     source_address=(source, 0))  # fmt: skip

    def request(self, method, path, body=None, headers=None):
        self.connection.request(method, path, body=body, headers=headers or {})
        response = self.connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    def login(self, key):
        form = urllib.parse.urlencode({"key": key})
        return self.request("POST", "/login", form, {"content-type": "application/x-www-form-urlencoded"})

    def savings(self, key=None, cookie=None):
        headers = {"authorization": f"Bearer {key}"} if key else {}
        if cookie:
            headers["cookie"] = f"{COOKIE}={cookie}"
        return self.request("GET", "/v1/savings", headers=headers)

    def close(self):
        self.connection.close()


def test_two_thousand_wrong_keys_get_429_and_the_right_key_elsewhere_still_gets_in(
    tmp_path, llm_server, redis_prefix
):  # fmt: skip
    def host(name):
        return serving(tmp_path / name, llm_server, HYBRID_WEATHER_HOME=str(tmp_path / f"home-{name}"),
                       HYBRID_WEATHER_API_KEYS=KEY, HYBRID_WEATHER_CACHE_URL=REDIS_URL,
                       HYBRID_WEATHER_CACHE_PREFIX=redis_prefix)  # fmt: skip

    with host("a") as a, host("b") as b:
        to_a, to_b = Client(a.url), Client(b.url)
        statuses = []
        for n in range(1000):
            status, headers, _ = to_a.login(f"wrong-key-{n:05d}")
            statuses.append(status)
            if status == 429:
                assert 1 <= int(headers["retry-after"]) <= 60
            status, headers, body = to_b.savings(key=f"wrong-key-{n:05d}")
            statuses.append(status)
            if status == 429:
                assert 1 <= int(headers["retry-after"]) <= 60
                assert json.loads(body)["error"]["code"] == "too_many_failed_authentications"
        # The two processes count one address's failures together (Redis); a window that ends midway
        # lets one more round through.
        assert set(statuses) == {401, 429} and statuses.count(401) <= 2 * FAILURES_PER_ADDRESS, statuses[:40]
        # Past the limit even the right key is refused from that address: what it sees says nothing.
        assert to_a.savings(key=KEY)[0] == 429
        # The right key from another address is let in, on either host, and its cookie is made.
        for url in (a.url, b.url):
            elsewhere = Client(url, source="127.0.0.2")
            assert elsewhere.savings(key=KEY)[0] == 200
            status, headers, _ = elsewhere.login(KEY)
            assert status == 303 and COOKIE in headers["set-cookie"]
            elsewhere.close()
        to_a.close()
        to_b.close()


def test_a_guessed_prefix_slows_every_failing_address_but_never_locks_the_keys_owner_out(tmp_path, llm_server):
    with serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS=KEY) as server:
        if time.time() % FAILURE_WINDOW_S > FAILURE_WINDOW_S - 10:  # the run is a second or two: one window
            time.sleep(FAILURE_WINDOW_S - time.time() % FAILURE_WINDOW_S)
        prefix = KEY[:8]
        statuses = []
        for n in range(FAILURES_PER_PREFIX + 20):  # many addresses, each failing with the key's prefix
            client = Client(server.url, source=f"127.0.1.{n + 1}")
            statuses.append(client.savings(key=f"{prefix}-guess-{n:04d}")[0])
            statuses.append(client.savings(key=f"{prefix}-again-{n:04d}")[0])
            client.close()
        firsts, seconds = statuses[0::2], statuses[1::2]
        assert set(firsts) == {401}  # an address with no failure of its own is always looked at
        # Once the prefix has failed FAILURES_PER_PREFIX times, a second guess from a failing address is refused.
        assert seconds[-10:] == [429] * 10 and seconds[: FAILURES_PER_PREFIX // 2 - 1].count(401) > 0
        owner = Client(server.url, source="127.0.2.1")
        assert owner.savings(key=KEY)[0] == 200  # the owner, from an address that never failed
        assert owner.login(KEY)[0] == 303
        owner.close()
        attacker = Client(server.url, source=f"127.0.1.{FAILURES_PER_PREFIX + 20}")
        assert attacker.savings(key=KEY)[0] == 429  # a failing address presenting the prefix, right or wrong
        attacker.close()


def _forged_from_the_key_file(key):
    """The cookie anyone holding the key file's SHA-256 could make before the server had a secret."""
    until = int(time.time()) + 3600
    digest = hashlib.sha256(key.encode()).hexdigest()
    signature = hmac.new(bytes.fromhex(digest), b"hybrid-weather dashboard until " + str(until).encode(),
                         hashlib.sha256).hexdigest()  # fmt: skip
    return f"{until}.{signature}"


def test_a_cookie_needs_the_servers_secret_not_the_key_file(tmp_path, llm_server):
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    (tmp_path / "keys.txt").write_text(digest + "\n")
    shared_secret = "s" * 40

    def host(name, **env):
        return serving(tmp_path / name, llm_server, HYBRID_WEATHER_HOME=str(tmp_path / f"home-{name}"),
                       HYBRID_WEATHER_API_KEYS_FILE=str(tmp_path / "keys.txt"), **env)  # fmt: skip

    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    with host("a") as a, host("b", HYBRID_WEATHER_COOKIE_SECRET=shared_secret) as b, \
            host("c", HYBRID_WEATHER_COOKIE_SECRET=shared_secret) as c:  # fmt: skip
        for server in (a, b):
            client = Client(server.url)
            assert client.savings(cookie=_forged_from_the_key_file(KEY))[0] == 401
            status, headers, _ = client.login(KEY)
            cookie = headers["set-cookie"].split(f"{COOKIE}=", 1)[1].split(";", 1)[0]
            assert status == 303 and client.savings(cookie=cookie)[0] == 200
            client.close()
        secret_file = tmp_path / "home-a" / SECRET_FILE
        assert secret_file.stat().st_mode & 0o777 == 0o600 and len(secret_file.read_text().strip()) == 64
        assert not (tmp_path / "home-b" / SECRET_FILE).exists()  # configured: no file made
        # b's cookie opens c (the same secret), not a (its own).
        assert Client(c.url).savings(cookie=cookie)[0] == 200
        assert Client(a.url).savings(cookie=cookie)[0] == 401
    # The secret made at first start is kept: a's cookies outlive a restart.
    first = secret_file.read_text()
    with host("a"):
        assert secret_file.read_text() == first


@pytest.mark.parametrize("problem", ["short", "readable"])
def test_a_secret_that_is_no_secret_stops_serve_at_start_in_one_line(tmp_path, problem):
    home = tmp_path / "home"
    env = {"HYBRID_WEATHER_HOME": str(home), "HYBRID_WEATHER_API_KEYS": KEY}
    if problem == "short":
        env["HYBRID_WEATHER_COOKIE_SECRET"] = "too-short"
    else:
        home.mkdir()
        (home / SECRET_FILE).write_text("x" * 64)
        os.chmod(home / SECRET_FILE, 0o644)
    result = subprocess.run([sys.executable, "-m", "hybrid_weather.router", "serve", "--port", "0"],
                            capture_output=True, text=True, timeout=30, env=subprocess_env(**env))  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert ("HYBRID_WEATHER_COOKIE_SECRET" if problem == "short" else "chmod 600") in result.stderr

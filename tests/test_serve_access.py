"""Who may ask `serve` what, in-process through Starlette's test client: a key for every route in the app's
table but the open ones, the dashboard's cookie, readiness and errors that keep the operator's addresses,
and pass-through that is off until the operator turns it on and leaves a ledger row when on."""

import sqlite3
import time

import pytest
from starlette.routing import Route

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.serve import create_app
from hybrid_weather.router.serve.access import Failures

from fake_openai import answer
from serve_client import KEY, client_for, error_of

#: What anyone may ask without a key: the health checks and the dashboard's login form.
OPEN_PATHS = {"/healthz", "/readyz", "/login"}
#: The dashboard's cookie (HttpOnly, SameSite=Strict) and its lifetime: a working day.
COOKIE, COOKIE_MAX_AGE_S = "hybrid_weather_dashboard", 12 * 3600
#: A body every POST route reads without spending anything: not a question it answers.
PROBE = {"query": 1}


def _requests(app):
    """(method, path) of every route in APP's table (HEAD rides with GET)."""
    return [(method, route.path) for route in app.routes if isinstance(route, Route)
            for method in sorted(route.methods - {"HEAD"})]  # fmt: skip


def test_every_route_but_the_health_checks_and_the_login_form_needs_a_key(tmp_path):
    client, router = client_for(tmp_path, api_keys="k1,k2")
    routes = _requests(client.app)
    assert {path for _, path in routes} >= {"/v1/savings", "/v1/misses", "/openapi.json", "/metrics", "/"}
    refused = [
        {},
        {"headers": {"authorization": "Bearer wrong"}},
        {"headers": {"authorization": "k1"}},  # no scheme
        {"headers": {"authorization": "Basic k1"}},
        {"headers": {"x-api-key": "k1"}},
        {"params": {"api_key": "k1"}},  # a key in a URL ends up in logs and histories: never accepted
        {"params": {"key": "k1", "token": "k1"}},
    ]
    with client:
        for method, path in routes:
            if path in OPEN_PATHS:
                continue
            # Each route's guesses counted afresh: this test is that every route refuses them, and a dozen
            # routes' guesses from one address pass the limit on failed authentications (access.Failures).
            client.app.state.service.access.failures = Failures(None)
            body = {"json": PROBE} if method == "POST" else {}
            for attempt in refused:
                response = client.request(method, path, **attempt, **body)
                error = error_of(response, 401, "invalid_api_key")
                assert error["type"] == "authentication_error" and "Authorization: Bearer" in error["message"]
                assert response.headers["www-authenticate"] == "Bearer"
            allowed = client.request(method, path, headers={"authorization": "Bearer k2"}, **body)
            assert allowed.status_code not in (401, 403), (method, path, allowed.text)
        error_of(client.get("/no/such/path"), 401, "invalid_api_key")  # the table is not shown to strangers
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
    router.close()
    # Opening a route is a decision made in one place, and seen here.
    from hybrid_weather.router.serve import access, guard

    assert guard.OPEN_PATHS == OPEN_PATHS and (access.COOKIE, access.COOKIE_MAX_AGE_S) == (COOKIE, COOKIE_MAX_AGE_S)


def test_a_route_added_to_the_table_is_guarded_without_a_line_of_its_own(tmp_path):
    from starlette.responses import PlainTextResponse

    client, router = client_for(tmp_path, api_keys="k1")
    client.app.router.routes.append(Route("/v1/new", lambda request: PlainTextResponse("secret")))
    with client:
        error_of(client.get("/v1/new"), 401, "invalid_api_key")
        assert client.get("/v1/new", headers={"authorization": "Bearer k1"}).text == "secret"
    router.close()


def _login(client, key):
    return client.post("/login", data={"key": key}, follow_redirects=False)


def test_the_login_form_gives_a_browser_a_signed_cookie_for_reading(tmp_path):
    client, router = client_for(tmp_path, api_keys="team-key-1")
    browser = {"accept": "text/html,application/xhtml+xml"}
    with client:
        form = client.get("/", headers=browser)
        assert form.status_code == 401 and 'action="/login"' in form.text and "What routing saved" not in form.text
        wrong = _login(client, "team-key-2")
        assert (
            wrong.status_code == 401
            and "not accepted" in wrong.text
            and COOKIE not in wrong.headers.get("set-cookie", "")
        )
        signed_in = _login(client, "team-key-1")
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        cookie = signed_in.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and f"Max-Age={COOKIE_MAX_AGE_S}" in cookie
        value = client.cookies[COOKIE]
        assert "team-key-1" not in value and "team-key-1" not in cookie  # a signature, never the key
        page = client.get("/", headers=browser)
        assert page.status_code == 200 and "What routing saved" in page.text
        assert client.get("/v1/savings").status_code == 200 and client.get("/metrics").status_code == 200
        # The cookie reads; it never spends: a page another site opens cannot ask questions on it.
        error_of(client.post("/v1/ask", json={"query": "上海今天天气"}), 401, "invalid_api_key")
        until, _, signature = value.partition(".")
        flipped = signature[:-1] + ("1" if signature.endswith("0") else "0")
        for forged in (f"{int(until) + 60}.{signature}", f"{until}.{flipped}", "", "x.y", value + "0", signature):
            client.cookies.clear()
            client.cookies.set(COOKIE, forged)
            error_of(client.get("/v1/savings"), 401, "invalid_api_key")
    router.close()
    # A cookie of a key that is no longer accepted opens nothing, nor one past its time.
    other, router = client_for(tmp_path / "b", api_keys="another-key")
    with other:
        other.cookies.set(COOKIE, value)
        error_of(other.get("/v1/savings"), 401, "invalid_api_key")
        old = other.app.state.service.access.cookie_for("another-key", now=time.time() - COOKIE_MAX_AGE_S - 1)
        other.cookies.set(COOKIE, old)
        error_of(other.get("/v1/savings"), 401, "invalid_api_key")
    router.close()


def test_readyz_tells_a_stranger_ok_or_not_and_nothing_of_where(tmp_path):
    pytest.importorskip("psycopg")
    secret = "postgresql://hw_secret_user:pw@127.0.0.1:1/hw_secret_db"  # nothing listens on port 1
    router = HybridRouter(settings=Settings(provider="demo", api_keys="k1"), ledger=secret)
    router.parts.ledger  # noqa: B018 - built, so readiness can judge it
    with TestClientFor(router) as client:
        stranger = client.get("/readyz")
        member = client.get("/readyz", headers={"authorization": "Bearer k1"})
    router.close()
    assert stranger.status_code == member.status_code == 503
    assert stranger.json() == {"status": "not ready", "checks": {"ledger": {"ok": False}}}
    for word in ("hw_secret_user", "hw_secret_db", "127.0.0.1", "postgresql", str(tmp_path)):
        assert word not in stranger.text
    assert "hw_secret_db" in member.json()["checks"]["ledger"]["location"]  # the operator's view
    assert "pw" not in member.json()["checks"]["ledger"]["location"].split("@")[0].split(":")[-1]
    # SQLite: its path is told to a key's holder only, and with keys off to nobody.
    for keys in ("k1", None):
        router = HybridRouter(settings=Settings(provider="demo", api_keys=keys), ledger=str(tmp_path / "l.db"))
        router.parts.ledger  # noqa: B018
        with TestClientFor(router) as client:
            ready = client.get("/readyz")
        router.close()
        assert ready.status_code == 200 and ready.json()["checks"]["ledger"] == {"ok": True}
        assert str(tmp_path) not in ready.text


def TestClientFor(router):
    from starlette.testclient import TestClient

    return TestClient(create_app(router))


def test_the_drop_in_endpoints_503_does_not_tell_where_the_upstreams_are(tmp_path, weather_server):
    # Nothing listens on port 9: the model cannot be reached, and the message must not say where it is.
    client, router = client_for(tmp_path, openai_api_key=KEY, openai_base_url="http://127.0.0.1:9/llm-secret/v1",
                                model="gpt-4o-mini")  # fmt: skip
    with client:
        response = client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "北京明天适合出游吗"}]}
        )
    router.close()
    error = error_of(response, 503, "llm_unavailable")
    assert "127.0.0.1" not in error["message"] and "llm-secret" not in error["message"] and ":9" not in error["message"]
    assert "LLM" in error["message"]  # still says what failed
    weather_server.fail("/v1/forecast", *["500"] * 10)
    client, router = client_for(tmp_path / "w", provider="open-meteo", open_meteo_url=weather_server.url)
    with client:
        response = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "上海今天天气"}]})
    router.close()
    error = error_of(response, 503, "weather_unavailable")
    assert weather_server.url.split("//")[1] not in error["message"] and "127.0.0.1" not in error["message"]


TOOLS = [{"type": "function", "function": {"name": "my_tool", "parameters": {"type": "object"}}}]


def test_pass_through_is_off_until_the_operator_turns_it_on(tmp_path, llm_server):
    client, router = client_for(tmp_path, llm_server)
    with client:
        for body in (
            {"messages": [{"role": "user", "content": "上海今天天气"}], "tools": TOOLS},
            {"messages": [{"role": "user", "content": "上海今天天气"}], "functions": [{"name": "f"}]},
            {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "prefix"}]},
        ):
            error = error_of(client.post("/v1/chat/completions", json=body), 403, "pass_through_off")
            assert "HYBRID_WEATHER_PASS_THROUGH=1" in error["message"]
    router.close()
    assert llm_server.requests == []  # the model key was not spent


def test_each_pass_through_leaves_an_llm_row_that_savings_counts_as_saving_nothing(tmp_path, llm_server):
    from hybrid_weather.router.ledger import savings_report

    client, router = client_for(tmp_path, llm_server, pass_through=True)
    llm_server.then(answer("用你的工具", prompt=1000, completion=200), {"status": 400})
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "帮我订明天去上海的票"}], "tools": TOOLS}
    with client:
        assert client.post("/v1/chat/completions", json=body).json()["usage"]["prompt_tokens"] == 1000
        assert client.post("/v1/chat/completions", json=body).status_code == 400
    router.close()
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM requests ORDER BY id")]
        report = savings_report(db, 30)
    assert [(r["route"], r["outcome"], r["reason"]) for r in rows] == [
        ("llm", "ok", "pass-through: the request's own tools"),
        ("llm", "http_400", "pass-through: the request's own tools"),
    ]
    assert (rows[0]["prompt_tokens"], rows[0]["completion_tokens"], rows[0]["model"]) == (1000, 200, "gpt-4o-mini")
    assert rows[0]["cost_usd"] > 0 and rows[0]["query"] == "帮我订明天去上海的票"
    assert report["by_route"]["llm"] == 2 and report["by_outcome"]["failed"] == 1
    assert report["actual_cost_usd"] == pytest.approx(rows[0]["cost_usd"])
    assert report["saved_usd"] == pytest.approx(0.0)  # an all-LLM design pays the same for it


@pytest.mark.parametrize("value", ["maybe", "2", "enabled"])
def test_a_pass_through_setting_that_is_neither_on_nor_off_is_refused(value):
    with pytest.raises(ConfigurationError, match="HYBRID_WEATHER_PASS_THROUGH"):
        Settings.from_env({"HYBRID_WEATHER_PASS_THROUGH": value})
    assert Settings.from_env({"HYBRID_WEATHER_PASS_THROUGH": "1"}).pass_through is True
    assert Settings.from_env({}).pass_through is False


@pytest.mark.parametrize(
    ("host", "keys", "warned"),
    [("0.0.0.0", None, True), ("0.0.0.0", "k", False), ("127.0.0.1", None, False), ("localhost", None, False)],
)
def test_serve_warns_once_when_anyone_can_spend_the_model_key(monkeypatch, tmp_path, host, keys, warned):
    import uvicorn
    from click.testing import CliRunner

    from hybrid_weather.router.cli import cli

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: setattr(self, "started", True))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    if keys:
        monkeypatch.setenv("HYBRID_WEATHER_API_KEYS", keys)
    else:
        monkeypatch.delenv("HYBRID_WEATHER_API_KEYS", raising=False)
    result = CliRunner().invoke(cli, ["serve", "--host", host, "--port", "0"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning")]
    if warned:
        assert len(warnings) == 1 and "anyone" in warnings[0] and "OPENAI_API_KEY" in warnings[0]
        assert "HYBRID_WEATHER_API_KEYS" in warnings[0] and host in warnings[0]
    else:
        assert warnings == []


def test_browsers_on_the_configured_origins_may_call_and_no_other(tmp_path):
    page, stranger = "https://app.example.com", "https://evil.example.net"
    preflight = {"access-control-request-method": "POST",
                 "access-control-request-headers": "authorization,content-type"}  # fmt: skip
    closed, closed_router = client_for(tmp_path / "closed", api_keys="k1")
    with closed:  # nothing is allowed until the operator names an origin
        answer_ = closed.post("/v1/ask", json={"query": "上海今天天气"},
                              headers={"origin": page, "authorization": "Bearer k1"})  # fmt: skip
        assert answer_.status_code == 200 and "access-control-allow-origin" not in answer_.headers
        asked = closed.options("/v1/ask", headers={"origin": page, **preflight})
        assert "access-control-allow-origin" not in asked.headers
    closed_router.close()
    client, router = client_for(tmp_path, api_keys="k1", cors_origins=(page, "http://localhost:3000"))
    with client:
        # The preflight carries no key (a browser never sends one there) and is answered before the guard.
        allowed = client.options("/v1/ask", headers={"origin": page, **preflight})
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == page
        assert {"authorization", "content-type"} <= set(allowed.headers["access-control-allow-headers"].split(", "))
        assert "access-control-allow-credentials" not in allowed.headers  # keys travel as headers, not cookies
        refused = client.options("/v1/ask", headers={"origin": stranger, **preflight})
        assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
        answer_ = client.post("/v1/ask", json={"query": "上海今天天气"},
                              headers={"origin": page, "authorization": "Bearer k1"})  # fmt: skip
        assert answer_.status_code == 200 and answer_.headers["access-control-allow-origin"] == page
        assert "x-hybrid-weather-route" in answer_.headers["access-control-expose-headers"]
        # The page can read why it was refused, too: a 401 carries the origin's headers.
        unauthorised = client.post("/v1/ask", json={"query": "上海今天天气"}, headers={"origin": page})
        error_of(unauthorised, 401, "invalid_api_key")
        assert unauthorised.headers["access-control-allow-origin"] == page
        other = client.post("/v1/ask", json={"query": "上海今天天气"},
                            headers={"origin": stranger, "authorization": "Bearer k1"})  # fmt: skip
        assert "access-control-allow-origin" not in other.headers  # answered, but the stranger's page cannot read it
    router.close()


@pytest.mark.parametrize(
    ("value", "origins"),
    [
        ("", ()),
        ("https://app.example.com", ("https://app.example.com",)),
        (" https://a.example.com/ , http://localhost:3000 ", ("https://a.example.com", "http://localhost:3000")),
        ("*", ("*",)),
    ],
)
def test_cors_origins_are_read_as_a_browser_writes_them(value, origins):
    assert Settings.from_env({"HYBRID_WEATHER_CORS_ORIGINS": value}).cors_origins == origins


@pytest.mark.parametrize(
    "value",
    ["app.example.com", "https://app.example.com/path", "ftp://files.example.com", "https://:80", "https://a:b"],
)
def test_a_cors_origin_that_is_not_one_is_refused_naming_the_variable(value):
    with pytest.raises(ConfigurationError, match="HYBRID_WEATHER_CORS_ORIGINS") as error:
        Settings.from_env({"HYBRID_WEATHER_CORS_ORIGINS": f"https://ok.example.com,{value}"})
    assert "scheme://host[:port]" in str(error.value)


def test_get_login_serves_the_form_a_bookmark_opens(tmp_path):
    # A browser that opens /login itself (a bookmark, a link from the docs) got 405.
    client, router = client_for(tmp_path, api_keys="team-key-1")
    with client:
        form = client.get("/login", headers={"accept": "text/html"})
        assert form.status_code == 200 and 'action="/login"' in form.text and 'name="key"' in form.text
        assert form.headers["cache-control"] == "no-store" and "What routing saved" not in form.text
        assert _login(client, "team-key-1").status_code == 303  # the form it serves is the one POST takes
    router.close()
    open_, router = client_for(tmp_path / "open")  # keys off: nothing to sign in to
    with open_:
        went = open_.get("/login", follow_redirects=False)
        assert went.status_code == 303 and went.headers["location"] == "/"
    router.close()

"""The ASGI application: one HybridRouter per worker process behind Starlette.

    POST /v1/ask                 the `--json` object           POST /v1/route     the Decision
    POST /v1/chat/completions    OpenAI-compatible              GET  /v1/savings   GET /v1/misses
    POST /v1/responses           the Responses API, the same questions
    GET  /v1/models  /v1/models/{id}   the models a request may name (OpenAI's shape)
    GET  /healthz  /readyz  /metrics  /openapi.json  /  (the savings dashboard)   GET and POST /login

Every route needs a key when keys are set but those guard.OPEN_PATHS names. Every error is an OpenAI-style
JSON body with the right status; nothing the service raises reaches the client as a stack trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from hybrid_weather.agent.errors import (
    HybridWeatherError,
    InvalidQuestion,
    LedgerUnavailable,
    RequestNotFound,
    WeatherUnavailable,
)
from hybrid_weather.rules import FIRST_DAY, LAST_DAY, in_supported_range, today_in_china
from hybrid_weather.rules import MAX_QUESTION_CHARS as MAX_QUERY_CHARS

from .._lazy import built
from ..answer import TextPiece
from ..facade import HybridRouter
from ..session import Session
from ..settings import Settings
from . import chat, responses, tenants
from .access import COOKIE, COOKIE_MAX_AGE_S, Access, Rate, cookie_secret, load_keys
from .budgets import Budgets, Cost, Hold
from .encoding import JSONResponse, loads
from .errors import ApiError, from_library, hide_addresses, invalid
from .guard import HEADER_TIMEOUT_STATE, BodyDeadline, Guard
from .metrics import Metrics
from .openapi import OPENAPI
from .sessions import TurnWriter, open_sessions

logger = logging.getLogger("hybrid_weather")

T = TypeVar("T")

#: Bytes a request body may hold; past this the answer is 413.
MAX_BODY_BYTES = 64 * 1024
#: Bytes of the login form's body (one key) at the most.
MAX_LOGIN_BYTES = 4 * 1024
#: Ledger rows a worker holds in memory at the most. An asyncio worker that waits for room in the queue
#: stalls every request it is serving, so it gets more room than a library caller (1,000): at the rule
#: path's peak rate that is a few seconds of rows — what a SIGKILL of a worker can
#: lose; SIGTERM loses none — where several workers share one SQLite file and wait for its write lock.
LEDGER_QUEUE = 10_000
#: Headers a page on an allowed origin may send, and read, across origins (HYBRID_WEATHER_CORS_ORIGINS).
CORS_REQUEST_HEADERS = ["authorization", "content-type"]
CORS_EXPOSED_HEADERS = ["x-hybrid-weather-route", "x-request-id", "retry-after"]
#: Days a report may cover.
MAX_REPORT_DAYS = 3_650


class Service:
    """What one worker holds: its router, the access rules, the sessions and the metrics."""

    def __init__(self, router: HybridRouter | None, settings: Settings | None) -> None:
        self._given = router
        self.settings = settings or (router.settings if router else Settings.from_env())
        self.router: HybridRouter = router or HybridRouter(settings=self.settings, ledger_queue=LEDGER_QUEUE)
        self.metrics = Metrics()
        self.router.weather.on_drop = self.metrics.dropped_copy
        shared = self.router.weather.shared
        self._own_shared = None
        if shared is None and self.settings.cache_url:  # rate limits are shared even where forecasts are not (demo)
            from hybrid_weather.agent.weather.shared_cache import SharedCache

            shared = self._own_shared = SharedCache(
                self.settings.cache_url, keep_s=60, prefix=self.settings.cache_prefix
            )
        keys = load_keys(self.settings.api_keys, self.settings.api_keys_file)
        secret = cookie_secret(self.settings.cookie_secret, self.settings.home_dir()) if keys else None
        self.access = Access(keys, Rate.parse(self.settings.rate_limit), shared, secret)
        self.budgets = Budgets.parse(self.settings.key_budgets, shared, self.settings.key_concurrency)
        self.admins = tenants.admins(self.settings.admin_keys, self.access.keys)  # keys that see every key's rows
        # The fleet's conversations are where its cache is (Redis), so a follow-up may reach any host.
        self.sessions = open_sessions(self.router.parts.settings.home_dir(), shared)
        self._turns = TurnWriter(self.sessions)  # where the answers' turns are appended, in batches
        self._upstream: Any = None  # httpx.AsyncClient for pass-through requests, made on first use
        self._answering: set[asyncio.Task[Any]] = set()  # streamed answers in flight
        # The upstreams' host names, kept out of what clients read (errors.hide_addresses).
        self.hidden_hosts = tuple(
            host
            for url in (
                self.settings.openai_base_url,
                self.settings.open_meteo_url,
                self.settings.amap_url,
                self.settings.cache_url,
                self.settings.ledger,
            )
            if url and "://" in url and (host := urlsplit(url).hostname)
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[dict[str, Any]]:
        # The LLM client (its `openai` import, most of a second) is built before the first request, not
        # inside it: the first LLM answer's time is the model's and the answer's, not an import's.
        await run_in_threadpool(self.router.connect_llm)
        # The server's connections read their header timeout here (connection.py): the app's settings,
        # whichever process or test built it.
        yield {HEADER_TIMEOUT_STATE: self.settings.header_timeout}
        # Shutdown (SIGTERM, SIGINT): uvicorn has stopped accepting and finished the requests in flight;
        # the router flushes its ledger, so no row is lost.
        if self._upstream is not None:
            await self._upstream.aclose()
        if self._own_shared is not None:
            self._own_shared.close()
        self.sessions.close()
        if self._given is None:
            await run_in_threadpool(self.router.close)

    # -- the endpoints -----------------------------------------------------------------------------------

    async def ask(self, request: Request) -> Response:
        body = await self._json(request)
        query = _query(body)
        today = _today(body)
        caller, given = _caller(request), body.get("session_id")
        if given is None:  # a new conversation: nothing stored under the id made for it, nothing to read
            session = Session(id=tenants.session_id(None))
        else:
            session = await self._session(caller, tenants.session_id(given), today or today_in_china())
        try:
            answer = await self._answer("ask", query, today, session, emoji=False, caller=caller)
        except ApiError as error:
            if error.code in ("llm_unavailable", "llm_timeout"):
                # As the CLI's --json: what the rules can say of the question's weather, beside the error.
                partial = await run_in_threadpool(self.router.weather_part, query, today=today, emoji=False)
                if partial is not None:
                    error.extra["partial"] = partial.to_json(query)
            raise
        owner = tenants.owner(caller) or tenants.OPEN
        await self._turns.add(owner, session.id, query, answer.text)
        # The session the client continues with: its own, or the one made for it.
        return JSONResponse(
            {**answer.to_json(query), "session_id": session.id}, headers=_request_id_header(answer.request_id)
        )

    async def route(self, request: Request) -> Response:
        body = await self._json(request)
        query = _query(body)
        decision = self.router.route(query, today=_today(body))
        self.metrics.requests.labels("route", decision.route, "ok").inc()
        return JSONResponse(decision.to_json(query))

    async def chat_completions(self, request: Request) -> Response:
        body = await self._json(request)
        messages = chat.check_messages(body)
        if chat.wants_upstream(body, messages):
            if not self.settings.pass_through:
                raise chat.pass_through_off()
            return await self._pass_through(body, messages, _caller(request))
        today = _today(body)
        question = chat.text_of(messages[-1].get("content"))
        if len(question) > MAX_QUERY_CHARS:
            raise invalid(f"the last message is longer than {MAX_QUERY_CHARS} characters", "query_too_long")
        model, sampling = chat.requested_model(body, self.router), chat.requested_sampling(body)
        session = chat.session_from(self.router, messages, today or today_in_china())
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        if body.get("stream") and self.router.route(question, today=today, session=session).route == "llm":
            chunks = functools.partial(chat.Chunks, include_usage=include_usage)
            return await self._stream(
                "chat",
                question,
                today,
                session,
                model,
                sampling,
                _caller(request),
                lambda first: chunks(first.request_id, first.model),
            )
        answer = await self._answer("chat", question, today, session, model, sampling=sampling, caller=_caller(request))
        headers = {"x-hybrid-weather-route": answer.route, **_request_id_header(answer.request_id)}
        if body.get("stream"):
            # A rule answer is whole at once: one body, not a StreamingResponse, which runs a plain generator's
            # every step on a worker thread (1,000 streamed answers/s a worker, not 5,400).
            return Response(
                chat.chunks(answer, include_usage),
                media_type="text/event-stream",
                headers={**headers, "cache-control": "no-cache"},
            )
        return JSONResponse(chat.completion(answer), headers=headers)

    async def responses(self, request: Request) -> Response:
        """The Responses API: the questions /v1/chat/completions answers, asked as `input` (text or messages),
        a follow-up naming the response it follows (`previous_response_id`: that conversation, the caller's)."""
        body = await self._json(request)
        messages, caller = responses.read_input(body), _caller(request)
        if responses.wants_upstream(body, messages):
            if not self.settings.pass_through:
                raise chat.pass_through_off()
            return await self._pass_through(body, messages, caller, path="responses")
        today = _today(body)
        question = messages[-1]["content"]
        if len(question) > MAX_QUERY_CHARS:
            raise invalid(f"the last message is longer than {MAX_QUERY_CHARS} characters", "query_too_long")
        model, sampling = chat.requested_model(body, self.router), chat.requested_sampling(body, responses.SAMPLING)
        previous = responses.previous_id(body)
        session = Session()
        if previous is not None:
            session = await self._session(caller, previous, today or today_in_china())
            if not session.turns:
                raise responses.not_found(previous)
        chat.session_from(self.router, messages, today or today_in_china(), session)
        # The conversation up to this response, kept under its id for a follow-up (unless `store` is false).
        keep = None if body.get("store") is False else functools.partial(self._keep, caller, session)
        if body.get("stream") and self.router.route(question, today=today, session=session).route == "llm":
            return await self._stream(
                "responses",
                question,
                today,
                session,
                model,
                sampling,
                caller,
                lambda first: responses.Events(first.request_id, first.model, body),
                keep,
            )
        created_at = time.time()
        answer = await self._answer("responses", question, today, session, model, sampling=sampling, caller=caller)
        if keep is not None:
            await keep(answer)
        headers = {"x-hybrid-weather-route": answer.route, **_request_id_header(answer.request_id)}
        if body.get("stream"):  # a rule answer, whole at once: one body of its events
            events = responses.Events(answer.request_id, responses.model_of(answer), body)
            return Response(
                events.whole(answer), media_type="text/event-stream", headers={**headers, "cache-control": "no-cache"}
            )
        return JSONResponse(responses.response(answer, body, created_at), headers=headers)

    async def _keep(self, caller: str, session: Session, answer: Any) -> None:
        """SESSION's turns (ANSWER's the last) kept under ANSWER's response id, CALLER's, for a follow-up."""
        owner, kept = tenants.owner(caller) or tenants.OPEN, responses.response_id(answer.request_id)
        await _off_loop(self.sessions.add_many, [(owner, kept, question, reply) for question, reply in session.turns])

    async def _stream(
        self,
        endpoint: str,
        question: str,
        today: dt.date | None,
        session: Session | None,
        model: str | None,
        sampling: dict[str, Any] | None,
        caller: str,
        events_for: Callable[[TextPiece], Any],
        after: Callable[[Any], Awaitable[None]] | None = None,
    ) -> Response:
        """An LLM answer streamed as the model writes it: tool rounds first, then its text, event by event —
        written by EVENTS_FOR(the first piece): chat.Chunks or responses.Events (start, text, end, failed).
        AFTER, given, runs on the answer before the stream's last events (a response's conversation kept).

        The status is sent with the first piece of text: a failure before it is an error response like any
        other (429, 503, 504); after it, an error event ends the stream. The answer runs to its end and
        is recorded even when the client leaves midway (its tokens were spent)."""
        started, loop = time.perf_counter(), asyncio.get_running_loop()
        pieces: asyncio.Queue[TextPiece | None] = asyncio.Queue()
        answering = asyncio.ensure_future(
            self._answer(
                endpoint,
                question,
                today,
                session,
                model,
                sampling=sampling,
                caller=caller,
                on_text=lambda piece: loop.call_soon_threadsafe(pieces.put_nowait, piece),
            )
        )
        self._answering.add(answering)  # held: a task only the loop refers to may be collected midway
        answering.add_done_callback(self._answering.discard)
        answering.add_done_callback(lambda _: pieces.put_nowait(None))  # after every piece the worker queued
        first = await pieces.get()
        if first is None:
            await answering  # its error, as any other request's
            raise AssertionError("an answer ended without its text")  # on_text always gets the text
        self.metrics.first_token.observe(time.perf_counter() - started)
        events = events_for(first)

        async def stream() -> AsyncIterator[bytes]:
            yield events.start()
            piece: TextPiece | None = first
            while piece is not None:
                yield events.text(piece.text)
                piece = await pieces.get()
            try:
                answer = await answering
            except ApiError as error:
                yield events.failed(error)
                return
            if after is not None:
                await after(answer)
            yield events.end(answer)

        headers = {"x-hybrid-weather-route": "llm", "cache-control": "no-cache", **_request_id_header(first.request_id)}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def models(self, request: Request) -> Response:
        return JSONResponse(chat.model_list(self.router))

    async def model(self, request: Request) -> Response:
        return JSONResponse(chat.model_named(request.path_params["model"], self.router))

    async def feedback(self, request: Request) -> Response:
        """A user's verdict on an answer: {"request_id", "verdict": "wrong"|"right", "comment"}."""
        body = await self._json(request)
        request_id, verdict, comment = body.get("request_id"), body.get("verdict"), body.get("comment")
        if not isinstance(request_id, str) or not isinstance(verdict, str):
            raise invalid(
                'give "request_id" (the one an answer carried) and "verdict": "wrong" or "right"', "invalid_feedback"
            )
        if comment is not None and not isinstance(comment, str):
            raise invalid('"comment" must be text', "invalid_feedback")
        request_id = request_id.strip().removeprefix(responses.PREFIX)  # a response's id names its row too
        caller = tenants.scope(_caller(request), self.admins)
        try:
            kept = await run_in_threadpool(
                functools.partial(self.router.feedback, request_id, verdict, comment, caller=caller)
            )
        except RequestNotFound:
            # The same for an id nobody was given and another key's: which ids exist is not this key's to
            # learn, and the library's message names the ledger's address.
            raise ApiError(
                404,
                "invalid_request_error",
                "no answer of yours has this request id; give the request_id one of your answers carried",
                "request_not_found",
            ) from None
        except InvalidQuestion as error:
            raise ApiError(422, "invalid_request_error", str(error), "invalid_feedback") from None
        except HybridWeatherError as error:
            raise from_library(error, self.hidden_hosts) from None
        said = {"request_id": request_id.strip().removeprefix("chatcmpl-"), "verdict": verdict}
        # Its row is not stored yet (another worker's queue, the spool): kept, and applied when it lands.
        return JSONResponse(said) if kept else JSONResponse({**said, "pending": True}, status_code=202)

    async def savings(self, request: Request) -> Response:
        from ..ledger import savings_report

        days, caller, demo = _days(request), tenants.scope(_caller(request), self.admins), _include_demo(request)
        return JSONResponse(
            await run_in_threadpool(self._report, lambda db: savings_report(db, days, caller=caller, include_demo=demo))
        )

    async def misses(self, request: Request) -> Response:
        from ..ledger import misses_report

        days, caller, demo = _days(request), tenants.scope(_caller(request), self.admins), _include_demo(request)
        return JSONResponse(
            await run_in_threadpool(self._report, lambda db: misses_report(db, days, caller=caller, include_demo=demo))
        )

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        checks = await run_in_threadpool(self._readiness)
        ready = all(check["ok"] for check in checks.values())
        if request.state.caller is None:  # anyone may ask: ok or not, never where the database lives
            checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
        return JSONResponse(
            {"status": "ready" if ready else "not ready", "checks": checks}, status_code=200 if ready else 503
        )

    async def metrics_text(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=self.metrics.content_type)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def dashboard(self, request: Request) -> Response:
        from ..ledger import misses_report, savings_report
        from .dashboard import render

        days, caller, demo = _days(request), tenants.scope(_caller(request), self.admins), _include_demo(request)
        savings, misses = await run_in_threadpool(
            self._report,
            lambda db: (
                savings_report(db, days, caller=caller, include_demo=demo),
                misses_report(db, days, caller=caller, include_demo=demo),
            ),
        )
        return HTMLResponse(render(savings, misses))

    async def login_form(self, request: Request) -> Response:
        """The dashboard's login form, for a browser that opens /login itself (a bookmark, a link); with
        keys off there is nothing to sign in to, and the browser goes to the dashboard."""
        from .dashboard import login_page

        root = request.scope.get("root_path", "")
        if not self.access.keys:
            return RedirectResponse(f"{root}/", status_code=303)
        return HTMLResponse(login_page(root=root), headers={"cache-control": "no-store"})

    async def login(self, request: Request) -> Response:
        """The dashboard's login form posts a key here: an accepted one becomes the cookie (access.py) and
        the browser goes to the dashboard; another gets the form again."""
        from .dashboard import login_page

        root = request.scope.get("root_path", "")
        if not self.access.keys:
            return RedirectResponse(f"{root}/", status_code=303)
        raw = await self._body(request, MAX_LOGIN_BYTES)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            raise invalid("send the login form: application/x-www-form-urlencoded with a 'key' field", "invalid_form")
        key = (parse_qs(raw.decode("utf-8", "replace")).get("key") or [""])[0]
        client = request.client.host if request.client else "-"
        try:
            self.access.attempt(client, key.strip() or None)  # before the key is looked at
        except ApiError as error:
            wait = error.headers["retry-after"]
            return HTMLResponse(
                login_page(f"Too many failed attempts from here; try again in {wait} s.", root),
                status_code=429,
                headers={"cache-control": "no-store", **error.headers},
            )
        token = self.access.cookie_for(key)
        if token is None:
            self.access.failures.record(client, key.strip() or None)
            return HTMLResponse(
                login_page("That key is not accepted.", root), status_code=401, headers={"cache-control": "no-store"}
            )
        response = RedirectResponse(f"{root}/", status_code=303)
        response.set_cookie(
            COOKIE,
            token,
            max_age=COOKIE_MAX_AGE_S,
            path=f"{root}/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    # -- the parts ---------------------------------------------------------------------------------------

    async def _body(self, request: Request, limit: int) -> bytes:
        """The request's body; 413 past LIMIT bytes."""
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise ApiError(413, "invalid_request_error", f"the body is over {limit} bytes", "body_too_large")
        if declared and declared.isdigit():
            return await request.body()  # its length is known and within the cap
        raw = bytearray()  # chunked: counted as it comes
        async for piece in request.stream():
            raw += piece
            if len(raw) > limit:
                raise ApiError(413, "invalid_request_error", f"the body is over {limit} bytes", "body_too_large")
        return bytes(raw)

    async def _json(self, request: Request) -> dict[str, Any]:
        """The request's JSON object; 413 past MAX_BODY_BYTES."""
        raw = await self._body(request, MAX_BODY_BYTES)
        try:
            body = loads(raw)
        except ValueError:
            raise invalid("the body is not JSON", "invalid_json", status=400) from None
        if not isinstance(body, dict):
            raise invalid("the body must be a JSON object", "invalid_body")
        return body

    async def _session(self, caller: str, session_id: str, today: dt.date) -> Session:
        """CALLER's conversation SESSION_ID (tenants.py), rebuilt from its stored turns (each routed again, no
        I/O), so any worker can continue it."""
        session = Session(id=session_id)
        owner = tenants.owner(caller) or tenants.OPEN
        for question, reply in await _off_loop(self.sessions.turns, owner, session_id):
            session.remember(question, reply, self.router.route(question, today=today, session=session))
        return session

    async def _answer(
        self,
        endpoint: str,
        query: str,
        today: dt.date | None,
        session: Session | None,
        model: str | None = None,
        *,
        emoji: bool = True,
        sampling: dict[str, Any] | None = None,
        caller: str = "-",
        on_text: Callable[[TextPiece], object] | None = None,
    ) -> Any:
        started = time.perf_counter()
        hold = None
        # A key over its budget may still ask what the rules answer: only a question bound for the model
        # (routing is microseconds, no I/O) reserves, or is refused.
        if self.budgets is not None and self.router.route(query, today=today, session=session).route == "llm":
            hold = await run_in_threadpool(self.budgets.reserve, caller, self._worst(model))
        asking = self.router.aask(
            query,
            today=today,
            session=session,
            model=model,
            emoji=emoji,
            sampling=sampling,
            on_text=on_text,
            caller=tenants.owner(caller),
        )
        try:
            answer = await (asking if hold is None else self._settled(hold, asking))
        except HybridWeatherError as error:
            self.metrics.failed(endpoint, "-", type(error).__name__, time.perf_counter() - started)
            if isinstance(error, WeatherUnavailable):
                self.metrics.upstream.labels(self.settings.provider, "error").inc()
            raise from_library(error, self.hidden_hosts) from None
        self.metrics.answered(endpoint, answer, self._saved(answer))
        return answer

    async def _settled(self, hold: Hold, asking: Awaitable[Any]) -> Any:
        """ASKING's answer, with HOLD settled when it ends: at its real cost, or given back when it failed. In
        a task of its own, shielded: a request cancelled midway (its client gone) still settles what its
        model spent once the model is done."""
        budgets = self.budgets
        assert budgets is not None

        async def settle() -> Any:
            try:
                answer = await asking
            except BaseException:
                await run_in_threadpool(budgets.settle, hold, 0, 0.0)
                raise
            usage = answer.llm.usage if answer.route == "llm" and answer.llm is not None else None
            tokens = (None if usage.invalid else usage.prompt_tokens + usage.completion_tokens) if usage else 0
            await run_in_threadpool(budgets.settle, hold, tokens, answer.cost_usd if usage else 0.0)
            return answer

        settling = asyncio.ensure_future(settle())
        self._answering.add(settling)
        settling.add_done_callback(self._answering.discard)
        return await asyncio.shield(settling)

    def _worst(self, model: str | None) -> Cost:
        """The most one LLM answer can cost: the tokens the loop lets a request spend, at the dearest price
        of the models that may answer it (the one the caller named, else the configured one and its
        fallbacks: one of them answers, the others' failed calls are not counted)."""
        parts = self.router.parts
        tokens = parts.request_tokens
        return Cost(tokens, tokens * parts.models.dearest([model] if model else parts.model_chain))

    def _saved(self, answer: Any) -> float | None:
        """What answering without a model saved: the all-LLM baseline of this answer (rule and clarify)."""
        return None if answer.route == "llm" else self._baseline_cost(len(answer.decision.cities))

    @functools.cached_property
    def _baseline_cost(self) -> Callable[[int], float | None]:
        """default_baseline_cost for the configured table and model, by number of places: bound once, not
        imported and looked up again for every answer."""
        from ..ledger import default_baseline_cost

        parts = self.router.parts
        return functools.partial(default_baseline_cost, parts.models, parts.model)

    def _report(self, read: Any) -> Any:
        ledger = self.router.ledger
        if ledger is None:
            raise ApiError(404, "invalid_request_error", "the ledger is off (HYBRID_WEATHER_LEDGER=off)", "ledger_off")
        ledger.flush()  # this worker's latest rows are in the report (at most one batch interval's wait)
        try:
            db = ledger.connect()
        except LedgerUnavailable as error:
            raise ApiError(
                503, "service_unavailable", hide_addresses(str(error), self.hidden_hosts), "ledger_unavailable"
            ) from None
        try:
            return read(db)
        finally:
            db.close()

    def _readiness(self) -> dict[str, dict[str, Any]]:
        checks: dict[str, dict[str, Any]] = {}
        ledger = self.router.ledger
        if ledger is not None:
            # Reachable now (a PostgreSQL server that came back is ready again; `problem` keeps the first
            # one for the record), and not a stand-in that spools every row.
            from ..ledger import SpoolLedger

            reachable, problem = False, ledger.problem
            if not isinstance(ledger, SpoolLedger):
                # Within a second, even from a server that stopped answering (ledger.CHECK_TIMEOUT).
                failure = ledger.check()
                reachable, problem = failure is None, failure or problem
            checks["ledger"] = {
                "ok": reachable,
                "location": ledger.location,
                "problem": problem,
                "pending": ledger.pending,
                "spooled": ledger.spool.count(),
            }
        breaker = getattr(getattr(self.router.weather.provider, "http", None), "breaker", None)
        if breaker is not None:
            checks["provider"] = {"ok": breaker.state != "open", "circuit": breaker.state}
        shared = self.router.weather.shared
        if shared is not None:
            checks["cache"] = {"ok": not shared.down, "down": shared.down}
        return checks

    async def _pass_through(
        self, body: dict[str, Any], messages: list[dict[str, Any]], caller: str, path: str = "chat/completions"
    ) -> Response:
        """A request the router does not answer, sent to the configured OpenAI-compatible endpoint as it
        came (with the service's key), its answer returned as it came — scrubbed of that key — and its
        ledger row written: an llm row, its tokens and cost as the endpoint reported them. Against the
        caller's budget and cap like any request to the model: its worst cost reserved first, settled at
        what the endpoint reported (a stream's, whose usage is not read, at its reservation)."""
        from .upstream import forward

        hold = None
        if self.budgets is not None:
            named = body.get("model") if isinstance(body.get("model"), str) else None
            tokens = chat.pass_through_tokens(body)
            price = self.router.parts.models.dearest([named or self.router.parts.model])
            hold = await run_in_threadpool(self.budgets.reserve, caller, Cost(tokens, tokens * price))

        if self._upstream is None:
            import httpx2 as httpx

            self._upstream = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=5.0), follow_redirects=False)
        arrived, started = time.time(), time.perf_counter()
        outcome, usage, model = "ok", None, body.get("model") if isinstance(body.get("model"), str) else None
        try:
            response, reply = await forward(self._upstream, self.settings, body, self.metrics, path)
        except ApiError as error:
            outcome = error.code or "failed"
            raise
        except BaseException as error:  # the client went away (CancelledError) or worse: nothing came back
            outcome = "Cancelled" if isinstance(error, asyncio.CancelledError) else type(error).__name__
            raise
        else:
            if response.status_code >= 400:
                outcome = f"http_{response.status_code}"
            elif reply is not None:
                usage, model = (
                    chat.usage_of(reply),
                    reply.get("model") if isinstance(reply.get("model"), str) else model,
                )
            return response
        finally:
            if hold is not None:
                self._settle_pass_through(hold, response if outcome == "ok" else None, model, usage)
            row = functools.partial(
                self._record_pass_through,
                chat.last_user_text(messages)[:MAX_QUERY_CHARS],
                chat.pass_through_reason(body),
                arrived=arrived,
                latency_ms=(time.perf_counter() - started) * 1000,
                model=model,
                usage=usage,
                outcome=outcome,
                caller=tenants.owner(caller),
            )
            if built(self.router.parts, "recorder") is not None:
                row()  # queues the row: no I/O
            else:  # the first row opens the ledger (a file, a database connection): not on the event loop
                await run_in_threadpool(row)

    def _settle_pass_through(self, hold: Hold, response: Response | None, model: str | None, usage: Any) -> None:
        """Settle a pass-through's HOLD, off the event loop: given back when no answer came (RESPONSE None:
        an error, a refusal, the client gone), at USAGE's cost when the answer reported it, and at its
        reservation otherwise — for a stream, when it ends."""
        budgets, loop = self.budgets, asyncio.get_running_loop()
        assert budgets is not None
        if response is None:
            loop.run_in_executor(None, budgets.settle, hold, 0, 0.0)
        elif isinstance(response, StreamingResponse):
            relayed = response.body_iterator

            async def relay() -> AsyncIterator[Any]:
                try:
                    async for piece in relayed:
                        yield piece
                finally:  # ended, or the client left: settled either way, without waiting on it here
                    loop.run_in_executor(None, budgets.settle, hold, None, None)

            response.body_iterator = relay()
        else:
            known = usage is not None and not usage.invalid
            cost = self.router.parts.models.cost(model, usage) if known and model else None
            tokens = usage.prompt_tokens + usage.completion_tokens if known else None
            loop.run_in_executor(None, budgets.settle, hold, tokens, cost)

    def _record_pass_through(
        self,
        query: str,
        reason: str,
        *,
        model: str | None,
        usage: Any,
        outcome: str,
        caller: str | None,
        **timing: float,
    ) -> None:
        recorder = self.router.parts.recorder
        if recorder is not None:
            cost = self.router.parts.models.cost(model, usage) if usage is not None and model else None
            recorder.passed_through(
                query,
                reason,
                model=model,
                usage=usage,
                outcome=outcome,
                cost_usd=cost if outcome == "ok" else 0.0,
                caller=caller,
                **timing,
            )


async def _off_loop(work: Callable[..., T], *args: Any) -> T:
    """WORK(*ARGS), which blocks (a file, a database), on the loop's executor. A conversation's store is read
    or written by most answers: Starlette's run_in_threadpool takes about three times the CPU for the same
    hop (anyio's limiter and cancel scope; 140-160 µs against 45-55 µs a hop, 32 at a time, on 2 cores)."""
    return await asyncio.get_running_loop().run_in_executor(None, work, *args)


def _caller(request: Request) -> str:
    """Who asked, as the guard named them (a key's hash prefix, or the client's address without keys)."""
    return str(getattr(request.state, "caller", None) or "-")


def _query(body: dict[str, Any]) -> str:
    query = body.get("query")
    if not isinstance(query, str):
        raise invalid("'query' must be a string: the question, e.g. 上海今天天气", "invalid_query")
    if len(query) > MAX_QUERY_CHARS:
        raise invalid(f"'query' is longer than {MAX_QUERY_CHARS} characters", "query_too_long")
    return query


def _today(body: dict[str, Any]) -> dt.date | None:
    today = body.get("today")
    if today is None:
        return None
    try:
        day = dt.date.fromisoformat(today) if isinstance(today, str) and len(today) == 10 else None
    except ValueError:
        day = None
    if day is None or not in_supported_range(day):
        raise invalid(f"'today' must be a date YYYY-MM-DD from {FIRST_DAY} to {LAST_DAY}", "invalid_today")
    return day


def _days(request: Request) -> int:
    text = request.query_params.get("days", "30")
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPORT_DAYS:
        raise invalid(f"'days' must be a whole number from 1 to {MAX_REPORT_DAYS}", "invalid_days")
    return int(text)


#: The values of a report's `include_demo` parameter, and what each says.
_INCLUDE_DEMO = {"": False, "0": False, "false": False, "1": True, "true": True}


def _include_demo(request: Request) -> bool:
    """The report's `include_demo` parameter: count the rows a router on the demo provider wrote (left out by
    default)."""
    text = request.query_params.get("include_demo", "").lower()
    if text not in _INCLUDE_DEMO:
        raise invalid("'include_demo' must be 1 or 0 (true or false)", "invalid_include_demo")
    return _INCLUDE_DEMO[text]


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error.response()


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    kind = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "invalid_request")
    return ApiError(error.status_code, "invalid_request_error", str(error.detail), kind).response()


async def _client_gone(request: Request, error: Exception) -> Response:
    # The client hung up before its request was read: one line, no traceback; nobody reads the answer.
    logger.warning("client went away before its request was read: %s %s", request.method, request.url.path)
    return Response(status_code=499)


async def _unexpected(request: Request, error: Exception) -> Response:
    logger.exception("unexpected error answering %s %s", request.method, request.url.path)
    return ApiError(500, "server_error", "the service failed unexpectedly; the log says where", "internal").response()


def create_app(router: HybridRouter | None = None, *, settings: Settings | None = None) -> Starlette:
    """The ASGI app. ROUTER: a router to serve (the caller closes it); else one is made from SETTINGS (or
    the environment) and closed at shutdown."""
    service = Service(router, settings)
    routes = [
        Route("/v1/ask", service.ask, methods=["POST"]),
        Route("/v1/route", service.route, methods=["POST"]),
        Route("/v1/feedback", service.feedback, methods=["POST"]),
        Route("/v1/chat/completions", service.chat_completions, methods=["POST"]),
        Route("/v1/responses", service.responses, methods=["POST"]),
        Route("/v1/models", service.models, methods=["GET"]),
        Route("/v1/models/{model:path}", service.model, methods=["GET"]),  # a name may hold a / (openai/gpt-4o)
        Route("/v1/savings", service.savings, methods=["GET"]),
        Route("/v1/misses", service.misses, methods=["GET"]),
        Route("/healthz", service.healthz, methods=["GET"]),
        Route("/readyz", service.readyz, methods=["GET"]),
        Route("/metrics", service.metrics_text, methods=["GET"]),
        Route("/openapi.json", service.openapi, methods=["GET"]),
        Route("/", service.dashboard, methods=["GET"]),
        Route("/login", service.login_form, methods=["GET"]),
        Route("/login", service.login, methods=["POST"]),
    ]
    from .dashboard import login_page

    middleware = [
        Middleware(BodyDeadline, seconds=service.settings.body_timeout),
        Middleware(Guard, access=service.access, login_page=login_page),
    ]
    if service.settings.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        # Outermost: a browser's preflight (OPTIONS, no key) is answered here, and every answer the guard or
        # an endpoint gives (a 401 or a 429 included) carries the headers a page needs to read it. No
        # credentials: a page sends its key as a Bearer header, never the dashboard's cookie.
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(service.settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=CORS_REQUEST_HEADERS,
                expose_headers=CORS_EXPOSED_HEADERS,
                max_age=600,
            ),
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=service.lifespan,
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            ClientDisconnect: _client_gone,
            Exception: _unexpected,
        },
    )
    app.state.service = service
    return app


def _request_id_header(request_id: str | None) -> dict[str, str]:
    """x-request-id: the answer's ledger row, which POST /v1/feedback names (none without a ledger)."""
    return {"x-request-id": request_id} if request_id else {}

"""Turn a LedgerEntry into the row that is stored: masked, keyed-hashed, validated, never failing.

Privacy model (docs/ledger.md, "Privacy"): the query is stored with personal data masked (or not at
all with HYBRID_WEATHER_LEDGER_QUERIES=hash); every other text column passes the same boundary
(router/outgoing.py), and in hash mode keeps nothing of the question's words. The hash is an HMAC-SHA256
of the masked query under a per-installation secret kept beside the ledger (mode 0600), so repeats can be
counted but a phone number cannot be recovered by hashing guesses.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import json
import math
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from hybrid_weather.agent.llm.models import MAX_TOKENS, TOKEN_FIELDS, ModelTable
from hybrid_weather.rules import MAX_QUESTION_CHARS

from ...outgoing import Outgoing
from ..baseline import default_baseline_cost
from ..entry import LedgerEntry, RequestIds

#: How many distinct questions, reasons and place lists a formatter keeps formatted: they repeat all day, and
#: each question is masked (two regex scans) and hashed once rather than once a row.
_MEMO_SIZE = 4096
#: The last time (seconds since 1970) a row may have: its date keeps four digits a second later.
_LAST_TIME = 253_402_300_798.0
_FIRST_TIME = -62_135_596_800.0  # the first second of the year 1
# Beyond this a value from an endpoint is not a fact but a fault: no single request costs more than ten
# dollars (nor uses more than models.MAX_TOKENS tokens).
MAX_COST_USD = 10.0
_SECRET_BYTES = 32
#: Characters read past MAX_QUESTION_CHARS before a stored query is cut: the longest e-mail address (RFC 5321).
_ADDRESS_ROOM = 254
K = TypeVar("K")
V = TypeVar("V")


class Row(NamedTuple):
    """One stored row of the `requests` table, its values in the table's column order (a tuple, so every
    database binds it as it is). Written only by RowFormat, from a LedgerEntry."""

    id: str  #: 12 hex digits of milliseconds since 1970, then 10 random ones: sorts by time, unique
    datetime_utc: str  #: ISO 8601 to the microsecond, +00:00
    route: str
    reason: str  #: masked (or without the question's words when queries are hashed)
    aspect: str | None
    places: str  #: JSON list of canonical place names
    provider: str | None
    cache_hit: int | None
    stale: int | None
    cost_usd: float | None
    baseline_cost_usd: float | None  #: what an all-LLM design would have paid for this request
    baseline_method: str | None
    latency_ms: float | None
    outcome: str
    query: str | None  #: masked; None when queries are hashed
    query_hmac: str
    days: int
    # Before the columns a rule answer leaves empty (sqlite_db._ANSWER_WIDTH): most rows of a service with
    # keys carry it.
    caller: str | None  #: the key the request came with, as a prefix of its SHA-256 ("key:…"); None without keys
    reason_code: str | None  #: the rule that decided (lookup, no_place, open_ended:advice, …): the router's word
    demo: int  #: 1: answered by a router on the demo provider (synthetic weather), which reports leave out
    # What only LLM, shadow, failed or session requests fill:
    model: str | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    llm_attempts: int | None = None
    session_id: str | None = None
    llm_loops: int | None = None
    tool_calls: int | None = None
    tool_failures: int | None = None
    agreement: int | None = None
    unknown_words: str | None = None  #: JSON list, masked
    plain_lookup: int | None = None
    invalid: str | None = None  #: JSON list of the fields that held a fault and were stored as NULL
    lookup_date: str | None = None  #: plain lookups: the date the weather tools were called with, masked
    overlay_version: int | None = None  #: the overlay version the question was read through
    model_ms: float | None = None  #: the model's own time within latency_ms (its calls, retries included)


#: The stored columns, in order; the table has more (query_sha256 of old rows) that are no longer written.
COLUMNS: tuple[str, ...] = Row._fields
#: The text columns the row itself makes (its id, time and hash): every other text column passes the boundary.
_MADE_HERE = frozenset({"id", "datetime_utc", "query_hmac", "invalid", "reason_code"})
#: The positions of the text columns that come from outside: a request, a model, a client (session_id, model).
_FROM_OUTSIDE = tuple(i for i, name in enumerate(COLUMNS) if name not in _MADE_HERE)


class RowFormat:
    """Formats rows for one ledger: masked, keyed-hashed, validated, never failing. Only one thread at a time
    calls rows() (the writer's, or a caller holding the ledger's formatting lock)."""

    def __init__(self, *, models: ModelTable, model: str, store_queries: str, secret: bytes) -> None:
        self.outgoing = Outgoing(store_queries)  # refuses a storage that is not one of QUERY_STORAGE
        self.models, self.model, self.store_queries = models, model, store_queries
        self._default_method = f"default:{model}"  # the baseline_method of every rule row
        self._secret = secret
        # Questions, reasons and place lists repeat all day: each is masked (two regex scans), hashed and
        # turned to JSON once, in bounded caches of this formatter (functools' is in C: a look-up costs a
        # row next to nothing under the interpreter lock every request thread waits for).
        self._query = _bounded(self._mask_and_hash)
        self._reason = _bounded(self._stored_reason)
        self._places_json = _bounded(_json_list)
        self._second = _bounded(_utc_second)  # rows of one second share their date and time to the second
        self._ids = RequestIds()  # for an entry that comes without one (a program's own, a shadow run's)

    @property
    def secret(self) -> bytes:
        """The HMAC key; a PostgreSQL ledger reached late replaces a local one (and the hashes with it)."""
        return self._secret

    @secret.setter
    def secret(self, secret: bytes) -> None:
        self._secret = secret
        self._query.cache_clear()  # it holds the questions' HMACs under the old key

    def rows(self, entries: list[LedgerEntry]) -> list[Row]:
        """The stored row of each of ENTRIES."""
        return [self.row(entry) for entry in entries]

    def row(self, e: LedgerEntry) -> Row:
        """The stored row of E: its own id (the one its answer carried), or a new one."""
        invalid: list[str] = []
        masked, query_hmac, repaired = self._query(_text(e.query))
        if repaired:
            invalid.append("query:repaired")
        hashed = self.store_queries == "hash"
        reason, repaired = self._reason(_text(e.reason))
        if repaired:
            invalid.append("reason:repaired")
        cost = _money(e.cost_usd, invalid, "cost_usd")
        prompt_tokens = cached_tokens = completion_tokens = None
        if e.usage is not None:  # rule answers have no tokens to check
            flagged = len(invalid)
            prompt_tokens, cached_tokens, completion_tokens = _usage(e.usage, invalid)
            if len(invalid) > flagged and cost is not None:
                # A price times counts that are faults is no cost: unknown, not the figure it made.
                cost = None
                invalid.append("cost_usd")
        baseline, method = self._baseline(e, cost)
        words = None
        if e.unknown_words and not hashed:
            words = json.dumps([_safe_text(w, invalid, "unknown_words") for w in e.unknown_words], ensure_ascii=False)
        lookup_date = None
        if e.lookup_date is not None and not hashed:
            lookup_date = _safe_text(e.lookup_date, invalid, "lookup_date")
        overlay_version = _tokens(e.overlay_version, invalid, "overlay_version")
        # Not a time (NaN) or none a date can say (a clock set past the year 9999): stored as 1970's first second.
        started = e.started_at if _FIRST_TIME <= e.started_at < _LAST_TIME else 0.0
        row = Row(
            id=e.request_id if isinstance(e.request_id, str) and e.request_id else self._ids.new(started),
            datetime_utc=self._time(started),
            route=e.route,
            reason=reason,
            aspect=e.aspect,
            places=self._places_json(_names(e.places)),
            provider=e.provider,
            cache_hit=_flag(e.cache_hit),
            stale=_flag(e.stale),
            cost_usd=cost,
            baseline_cost_usd=baseline,
            baseline_method=method,
            latency_ms=e.latency_ms if 0.0 <= e.latency_ms < math.inf else None,  # as measured: a NaN is not
            outcome=e.outcome,
            query=None if hashed else masked,
            query_hmac=query_hmac,
            days=e.days,
            caller=None if e.caller is None else _safe_text(e.caller, invalid, "caller"),
            reason_code=None if e.reason_code is None else _safe_text(e.reason_code, invalid, "reason_code"),
            demo=1 if e.demo is True else 0,
            model=e.model,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached_tokens,
            completion_tokens=completion_tokens,
            llm_attempts=_tokens(e.llm_attempts, invalid, "llm_attempts"),
            session_id=None if e.session_id is None else _safe_text(e.session_id, invalid, "session_id"),
            llm_loops=e.llm_loops,
            tool_calls=e.tool_calls,
            tool_failures=e.tool_failures,
            agreement=_flag(e.agreement),
            unknown_words=words,
            plain_lookup=_flag(e.plain_lookup),
            invalid=json.dumps(invalid) if invalid else None,  # after every field that may add to it
            lookup_date=lookup_date,
            overlay_version=overlay_version,
            model_ms=e.model_ms if e.model_ms is not None and 0.0 <= e.model_ms < math.inf else None,
        )
        return self._masked(row)

    def _masked(self, row: Row) -> Row:
        """ROW with every text column from outside through the boundary: a column added later is masked
        without a rule of its own (session_id and model come from the client, places from the model)."""
        text = self.outgoing.text
        values = list(row)
        for i in _FROM_OUTSIDE:
            value = values[i]
            if type(value) is str:
                values[i] = text(value)
        return Row._make(values)

    def _time(self, timestamp: float) -> str:
        """datetime.fromtimestamp(TIMESTAMP, timezone.utc).isoformat(timespec="microseconds"), its date and
        time to the second made once a second: the microseconds rounded as datetime rounds them (half to
        even, carried into the next second)."""
        fraction, whole = math.modf(timestamp)
        micro = round(fraction * 1e6)
        if micro >= 1_000_000:
            whole, micro = whole + 1, micro - 1_000_000
        if whole < 0 or micro < 0:  # before 1970: not a time this ledger writes; datetime says it right
            return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).isoformat(timespec="microseconds")
        return f"{self._second(int(whole))}.{micro:06d}+00:00"

    def _baseline(self, e: LedgerEntry, cost: float | None) -> tuple[float | None, str | None]:
        """What an all-LLM design would have paid for E, and how that was worked out."""
        if e.outcome != "ok":
            return None, None  # a failed or empty request saved nothing and cost nothing
        if e.route == "llm":
            return cost, "actual"  # an all-LLM design pays the same for these
        if e.route == "shadow":
            return None, None  # extra spend to measure the baseline, not a request
        return default_baseline_cost(self.models, self.model, len(e.places)), self._default_method

    def _mask_and_hash(self, query: str) -> tuple[str, str, bool]:
        repaired: list[str] = []
        # Cut as ask() refuses past it, for a row that came another way (a program's own entry, a
        # pass-through); masked with room past the cut, so an address across it is masked whole first.
        kept = query[: MAX_QUESTION_CHARS + _ADDRESS_ROOM]
        masked = self.outgoing.text(_safe_text(kept, repaired, "query"))[:MAX_QUESTION_CHARS]
        digest = hmac.new(self._secret, masked.encode("utf-8"), hashlib.sha256).hexdigest()
        return masked, digest, bool(repaired)

    def _stored_reason(self, reason: str) -> tuple[str, bool]:
        repaired: list[str] = []
        return self.outgoing.reason(_safe_text(reason, repaired, "reason")), bool(repaired)


def _bounded(make: Callable[[K], V]) -> functools._lru_cache_wrapper[V]:
    """MAKE, remembering its last _MEMO_SIZE answers."""
    return functools.lru_cache(maxsize=_MEMO_SIZE)(make)


def _text(value: object) -> str:
    return value if isinstance(value, str) else f"{value}"  # a key the cache can hold, whatever came


def _names(places: object) -> tuple[str, ...]:
    """PLACES as a tuple of names (a program's own entry may hold a list)."""
    if type(places) is tuple:
        return places
    try:
        return tuple(f"{place}" for place in places)  # type: ignore[attr-defined]
    except TypeError:  # not a list of places at all: stored as none
        return ()


def _utc_second(second: int) -> str:
    return dt.datetime.fromtimestamp(second, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _json_list(names: tuple[str, ...]) -> str:
    return json.dumps(list(names), ensure_ascii=False)


def load_secret(path: Path | None) -> bytes:
    """The installation's hashing secret in PATH (created on first use, mode 0600); a fresh one for None."""
    if path is None:
        return secrets.token_bytes(_SECRET_BYTES)
    try:
        return bytes.fromhex(path.read_text("ascii").strip())
    except FileNotFoundError:
        pass
    secret = secrets.token_bytes(_SECRET_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return bytes.fromhex(path.read_text("ascii").strip())
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(secret.hex())
    return secret


def _safe_text(value: object, invalid: list[str], field: str) -> str:
    """VALUE as text every backend stores: a lone surrogate (from undecodable CLI bytes) or a NUL (which
    PostgreSQL's text refuses) becomes U+FFFD."""
    text = value if isinstance(value, str) else f"{value}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        invalid.append(f"{field}:repaired")
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF or ch == "\x00" else ch for ch in text)
    if "\x00" in text:
        invalid.append(f"{field}:repaired")
        return text.replace("\x00", "\ufffd")
    return text


def _money(value: float | None, invalid: list[str], field: str) -> float | None:
    if type(value) is float and 0.0 <= value <= MAX_COST_USD:
        return value  # nearly every row: the checks below are for the few that are not
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not (0 <= value <= MAX_COST_USD)
    ):
        invalid.append(field)
        return None
    return float(value)


def _usage(usage: Any, invalid: list[str]) -> tuple[int | None, int | None, int | None]:
    """USAGE's prompt, cached and completion tokens as stored: NULL, and named in INVALID, for a count no
    call can have — one the endpoint sent (Usage.invalid) or one a caller made (negative, not whole, past
    MAX_TOKENS, more cached than prompt tokens)."""
    said = getattr(usage, "invalid", ())
    counts = [None if field in said else _tokens(getattr(usage, field, None), invalid, field) for field in TOKEN_FIELDS]
    invalid.extend(field for field in TOKEN_FIELDS if field in said)
    prompt, cached, completion = counts
    if prompt is not None and cached is not None and cached > prompt:
        invalid.append("cached_tokens")
        cached = None
    return prompt, cached, completion


def _tokens(value: int | None, invalid: list[str], field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        invalid.append(field)
        return None
    return value


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)

"""Turn a LedgerEntry into the row that is stored: masked, keyed-hashed, validated, never failing.

Privacy model (docs/ledger.md, "Privacy"): the query is stored with personal data masked (or not at
all with HYBRID_WEATHER_LEDGER_QUERIES=hash); every other text field is masked too, and in hash mode
keeps nothing of the question's words. The hash is an HMAC-SHA256 of the masked query under a
per-installation secret kept beside the ledger (mode 0600), so repeats can be counted but a phone number
cannot be recovered by hashing guesses.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import itertools
import json
import math
import operator
import os
import random
import secrets
from pathlib import Path
from typing import Any

from hybrid_weather.agent.llm.models import MAX_TOKENS, TOKEN_FIELDS, ModelTable
from hybrid_weather.rules import MAX_QUESTION_CHARS
from hybrid_weather.rules.privacy import mask_personal_data

from .baseline import default_baseline_cost
from .entry import Entry, LedgerEntry, ShortEntry, StemKey, full_entry

QUERY_STORAGE = ("masked", "hash")
#: The stored columns, in order; the table has more (query_sha256 of old rows) that are no longer written.
#: A row may stop after the first ANSWER_WIDTH of them: the columns a rule answer leaves empty come last,
#: and a row that leaves them all empty omits them (stored as NULL). sqlite3 binds a NULL through its
#: adapter look-up under the interpreter lock, and a rule row would otherwise bind a dozen of them.
COLUMNS = (
    "id", "datetime_utc", "route", "reason", "aspect", "places", "provider", "cache_hit", "stale", "cost_usd",
    "baseline_cost_usd", "baseline_method", "latency_ms", "outcome", "query", "query_hmac", "days",
    # What only LLM, shadow, failed or session requests fill:
    "model", "prompt_tokens", "cached_tokens", "completion_tokens", "llm_attempts", "session_id", "llm_loops",
    "tool_calls", "tool_failures", "agreement", "unknown_words", "plain_lookup", "invalid",
)  # fmt: skip
ANSWER_WIDTH = COLUMNS.index("model")
#: Two short rows of one question differ only in their first two columns (id, datetime_utc) and this one:
#: the rest is the question's stem (stem_of).
LATENCY = COLUMNS.index("latency_ms")
_EMPTY_TAIL = (None,) * (len(COLUMNS) - ANSWER_WIDTH)
#: The values Batch keeps of a short row.
SHORT_WIDTH = 4
#: A row id's tail counts up from a random start in [0, _ID_TAILS - rows of the batch).
_ID_TAILS = 1 << 40
# What a short row leaves empty: LedgerEntry's model..tool_failures, and session_id..plain_lookup.
_NO_LLM = (None,) * 6
_NO_SESSION = (None, None, (), None)
_UNSEEN = -1  # no stem number: a key not looked up before
_INF = math.inf
#: The last time (seconds since 1970) a short row may have: its date keeps four digits a second later.
_LAST_TIME = 253_402_300_798.0
_FIRST_TIME = -62_135_596_800.0  # the first second of the year 1
# Beyond this a value from an endpoint is not a fact but a fault: no single request costs more than ten
# dollars (nor uses more than models.MAX_TOKENS tokens).
MAX_COST_USD = 10.0
_SECRET_BYTES = 32
_MEMO_SIZE = 4096
#: Characters read past MAX_QUESTION_CHARS before a stored query is cut: the longest e-mail address (RFC 5321).
_ADDRESS_ROOM = 254


class Batch:
    """The rows of one write, as RowFormat.batch makes them: a short row (a rule or clarify answer, see
    ANSWER_WIDTH) as four numbers — its time, its latency, its id's tail and the number of its stem in
    STEMS — and every other row in full. A database that can make a short row's id and time itself (SQLite,
    from a table of the stems) binds the four numbers; rows() makes them all in full, in the entries' order,
    with the same ids (a batch both committed and spooled is written back once: the replay skips its ids)."""

    __slots__ = ("full", "full_at", "short", "stems")

    def __init__(
        self, short: list[Any], full: list[tuple[Any, ...]], full_at: list[int], stems: list[tuple[Any, ...]]
    ) -> None:
        self.short = short  #: SHORT_WIDTH values a short row: started_at, latency_ms, id tail, stem number
        self.full = full  #: rows in COLUMNS order (a row may stop after ANSWER_WIDTH)
        self.full_at = full_at  #: where each full row stands among the batch's rows
        #: The formatter's stems when the batch was made, a stem_of by its number. The formatter starts a new
        #: list when it lets its stems go, so a database keeping a table of them knows this one by identity.
        self.stems = stems

    @classmethod
    def of(cls, rows: list[tuple[Any, ...]]) -> Batch:
        """ROWS, made in full already (a replay's), as a batch."""
        return cls([], rows, list(range(len(rows))), [])

    def __len__(self) -> int:
        return len(self.short) // SHORT_WIDTH + len(self.full)

    def rows(self) -> list[tuple[Any, ...]]:
        """Every row in full, in the order of the entries it was made of."""
        if not self.short:
            return list(self.full)
        stems, split = self.stems, LATENCY - 2
        shorts = (
            (_row_id(int(started * 1000), tail), utc_isoformat(started), *stems[number][:split], latency,
             *stems[number][split:])
            for started, latency, tail, number in zip(*[iter(self.short)] * SHORT_WIDTH, strict=True)
        )  # fmt: skip
        made: list[tuple[Any, ...]] = []
        for row, at in zip(self.full, self.full_at, strict=True):
            made.extend(itertools.islice(shorts, at - len(made)))
            made.append(row)
        made.extend(shorts)
        return made


class RowFormat:
    """Formats rows for one ledger. Only the writer thread calls batch() and rows(); they never raise."""

    def __init__(self, *, models: ModelTable, model: str, store_queries: str, secret: bytes) -> None:
        if store_queries not in QUERY_STORAGE:
            raise ValueError(f"store_queries must be one of {QUERY_STORAGE}")
        self.models, self.model, self.store_queries = models, model, store_queries
        self._default_method = f"default:{model}"  # the baseline_method of every rule row
        self._secret = secret
        self._places: dict[tuple[str, ...], str] = {}  # their JSON: the same few hundred places all day
        # Questions and reasons repeat all day too: each is masked (two regex scans) and hashed once.
        self._queries: dict[str, tuple[str, str, bool]] = {}  # query → masked, HMAC, repaired
        self._reasons: dict[str, tuple[str, bool]] = {}  # reason → stored form, repaired
        # A rule answer's row is its question's but for its id, time and latency: the rest (its stem) is kept
        # per question and how it was answered, numbered in a list a database can keep a table of.
        # None: that entry's row is not short (a field needed repair), so it is made in full every time.
        self._stem_numbers: dict[StemKey, int | None] = {}
        self._stems: list[tuple[Any, ...]] = []
        # The random part of row ids: a random start a batch, counted up row by row, so no two rows of one
        # batch share an id (40 random bits a row did, now and then, within a millisecond: a repeated id is a
        # row the replay skips). Not random's global generator: a program that seeds it (random.seed(42),
        # as tests do) would make ids repeat. A generator of our own, seeded from os.urandom, again in a
        # forked child.
        self._random, self._random_pid = random.Random(), os.getpid()

    @property
    def secret(self) -> bytes:
        """The HMAC key; a PostgreSQL ledger reached late replaces a local one (and the hashes with it)."""
        return self._secret

    @secret.setter
    def secret(self, secret: bytes) -> None:
        self._secret = secret
        self._queries.clear()
        self._let_stems_go()  # they hold the question's HMAC

    def _let_stems_go(self) -> None:
        self._stem_numbers, self._stems = {}, []  # a new list: batches made before keep theirs

    def rows(self, entries: list[Entry]) -> list[tuple[Any, ...]]:
        """The stored values of each of ENTRIES, in COLUMNS order (see ANSWER_WIDTH: a row may stop early)."""
        return self.batch(entries).rows()

    def row(self, e: Entry) -> tuple[Any, ...]:
        """The stored values of E, in COLUMNS order."""
        return self.rows([e])[0]

    def batch(self, entries: list[Entry]) -> Batch:
        """The rows of ENTRIES: a rule or clarify answer's by its stem (see Batch), the others in full."""
        # Whether this is a forked child, asked once a batch: os.getpid() is a system call (glibc no longer
        # keeps the pid), too dear to make for each row while the writer holds the interpreter lock.
        if os.getpid() != self._random_pid:  # a forked child: its own sequence of ids, not its parent's
            self._random, self._random_pid = random.Random(), os.getpid()
        if len(self._stem_numbers) > _MEMO_SIZE:  # between batches only: a batch's stems are one list
            self._let_stems_go()
        numbers, stems = self._stem_numbers, self._stems
        first = tail = self._random.randrange(_ID_TAILS - len(entries))
        short = _all_short(entries, numbers, first)
        if short is not None:
            return Batch(short, [], [], stems)
        short = []
        full: list[tuple[LedgerEntry, int]] = []
        for e in entries:
            if isinstance(e, LedgerEntry):
                e = _short_entry(e)
                if isinstance(e, LedgerEntry):
                    full.append((e, tail))
                    tail += 1
                    continue
            started, latency, key = e
            if 0.0 <= started < _LAST_TIME and 0.0 <= latency < _INF:
                number = numbers.get(key, _UNSEEN)
                if number == _UNSEEN:
                    number = self._new_stem(e)
                if number is not None:
                    short += (started, latency, tail, number)
                    tail += 1
                    continue
            full.append((full_entry(e), tail))
            tail += 1
        return Batch(short, [self._full_row(e, at) for e, at in full], [at - first for _, at in full], stems)

    def _new_stem(self, e: ShortEntry) -> int | None:
        """The number of E's stem, kept under E's key; None when E's row is not short."""
        row = self._full_row(full_entry(e), 0)
        number = None
        if len(row) == ANSWER_WIDTH:
            number = len(self._stems)
            self._stems.append(stem_of(row))
        self._stem_numbers[e[2]] = number
        return number

    def _full_row(self, e: LedgerEntry, id_tail: int) -> tuple[Any, ...]:
        """E's row made in full, its id ending in ID_TAIL."""
        invalid: list[str] = []
        masked, query_hmac, repaired = self._query(e.query)
        if repaired:
            invalid.append("query:repaired")
        hashed = self.store_queries == "hash"
        reason, repaired = self._reason(e.reason)
        if repaired:
            invalid.append("reason:repaired")
        usage = e.usage
        cost = _money(e.cost_usd, invalid, "cost_usd")
        if usage is None:  # rule answers: no tokens to check
            prompt_tokens = cached_tokens = completion_tokens = None
        else:
            flagged = len(invalid)
            prompt_tokens, cached_tokens, completion_tokens = _usage(usage, invalid)
            if len(invalid) > flagged and cost is not None:
                # A price times counts that are faults is no cost: unknown, not the figure it made.
                cost = None
                invalid.append("cost_usd")
        ok = e.outcome == "ok"
        if not ok:
            baseline, method = None, None  # a failed or empty request saved nothing and cost nothing
        elif e.route == "llm":
            baseline, method = cost, "actual"  # an all-LLM design pays the same for these
        elif e.route == "shadow":
            baseline, method = None, None  # extra spend to measure the baseline, not a request
        else:
            baseline, method = default_baseline_cost(self.models, self.model, len(e.places)), self._default_method
        words = None
        if e.unknown_words and not hashed:
            words = json.dumps([mask_personal_data(_safe_text(w, invalid, "unknown_words")) for w in e.unknown_words],
                               ensure_ascii=False)  # fmt: skip
        # Not a time (NaN) or none a date can say (a clock set past the year 9999): stored as 1970's first second.
        started = e.started_at if _FIRST_TIME <= e.started_at < _LAST_TIME else 0.0
        head = (
            _row_id(int(started * 1000), id_tail),
            utc_isoformat(started),
            e.route, reason, e.aspect, self._places_json(e.places), e.provider,
            _flag(e.cache_hit), _flag(e.stale),
            cost,
            baseline, method,
            e.latency_ms if 0.0 <= e.latency_ms < _INF else None,  # as measured: a NaN is not
            e.outcome,
            None if hashed else masked,
            query_hmac,
            e.days,
        )  # fmt: skip
        if (
            not invalid and e.usage is None and e.model is None and e.llm_attempts is None and e.llm_loops is None
            and e.tool_calls is None and e.tool_failures is None and e.session_id is None and e.agreement is None
            and not e.unknown_words and e.plain_lookup is None
        ):  # fmt: skip
            return head  # a rule answer's row: every column after ANSWER_WIDTH empty, known without making them
        tail = (
            e.model,
            prompt_tokens, cached_tokens, completion_tokens,
            _tokens(e.llm_attempts, invalid, "llm_attempts"),
            None if e.session_id is None else _safe_text(e.session_id, invalid, "session_id"),
            e.llm_loops, e.tool_calls, e.tool_failures, _flag(e.agreement), words, _flag(e.plain_lookup),
            json.dumps(invalid) if invalid else None,  # last: the fields before it may add to it
        )  # fmt: skip
        return head if tail == _EMPTY_TAIL else head + tail

    def _query(self, query: object) -> tuple[str, str, bool]:
        query = query if isinstance(query, str) else f"{query}"  # a key the memo can hold, whatever came
        known = self._queries.get(query)
        if known is None:
            if len(self._queries) > _MEMO_SIZE:
                self._queries.clear()
            repaired: list[str] = []
            # Cut as ask() refuses past it, for a row that came another way (a program's own entry, a
            # pass-through); masked with room past the cut, so an address across it is masked whole first.
            kept = query[: MAX_QUESTION_CHARS + _ADDRESS_ROOM]
            masked = mask_personal_data(_safe_text(kept, repaired, "query"))[:MAX_QUESTION_CHARS]
            digest = hmac.new(self._secret, masked.encode("utf-8"), hashlib.sha256).hexdigest()
            known = self._queries[query] = (masked, digest, bool(repaired))
        return known

    def _reason(self, reason: object) -> tuple[str, bool]:
        reason = reason if isinstance(reason, str) else f"{reason}"
        known = self._reasons.get(reason)
        if known is None:
            if len(self._reasons) > _MEMO_SIZE:
                self._reasons.clear()
            repaired: list[str] = []
            if self.store_queries == "hash":
                stored = _without_words(reason)
            else:
                stored = mask_personal_data(_safe_text(reason, repaired, "reason"))
            known = self._reasons[reason] = (stored, bool(repaired))
        return known

    def _places_json(self, places: tuple[str, ...]) -> str:
        try:
            text = self._places.get(places)
        except TypeError:  # not a tuple (a list): stored all the same, not kept
            return json.dumps([f"{place}" for place in places], ensure_ascii=False)
        if text is None:
            if len(self._places) > _MEMO_SIZE:
                self._places.clear()
            text = self._places[places] = json.dumps(list(places), ensure_ascii=False)
        return text


def _row_id(milliseconds: int, random_bits: int) -> str:
    """12 hex digits of MILLISECONDS since 1970, then 10 of 40 RANDOM_BITS: ids that sort by time and are
    unique across processes. As the hex of 11 bytes, half the time of formatting the two numbers."""
    if 0 <= milliseconds < 1 << 48:
        return (milliseconds << 40 | random_bits).to_bytes(11, "big").hex()
    return f"{milliseconds:012x}{random_bits:010x}"  # before 1970 or after 10889: not this ledger's, but kept


def _all_short(entries: list[Entry], numbers: dict[StemKey, int | None], first: int) -> list[Any] | None:
    """Batch.short of ENTRIES, their id tails counting up from FIRST, when every one of them is a ShortEntry
    whose stem has a number and whose time and latency are in range (nearly every batch of a busy service);
    else None, and RowFormat.batch looks at each entry.

    Made in a few passes of loops in C (map, zip, sum): the writer runs this under the interpreter lock that
    every request thread waits for, and a loop in Python over the entries was most of what it held the lock
    for."""
    try:
        # A LedgerEntry's third field is its query, a string, never a stem's key (a tuple): it finds no number.
        found = list(map(numbers.get, map(_KEY, entries)))
        if None in found:  # a stem not numbered yet, a row that is not short, or a LedgerEntry
            return None
        started, latency = list(map(_STARTED, entries)), list(map(_LATENCY, entries))
        # A NaN or an infinity makes a sum that is not finite; past that, min and max compare as numbers.
        if not (math.isfinite(sum(started)) and math.isfinite(sum(latency))):
            return None
        if not (min(started) >= 0.0 and max(started) < _LAST_TIME and min(latency) >= 0.0):
            return None
    except (TypeError, ValueError):  # not numbers, no entries: the slow path says what to do
        return None
    return list(
        itertools.chain.from_iterable(zip(started, latency, range(first, first + len(entries)), found, strict=True))
    )


_STARTED, _LATENCY, _KEY = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)


def _short_entry(e: LedgerEntry) -> Entry:
    """E as a ShortEntry where its row can be short, of values of exact types (entry.ShortEntry); else E."""
    if (
        e[10:16] == _NO_LLM and e[19:] == _NO_SESSION and type(e.query) is str and type(e.reason) is str
        and type(e.outcome) is str and type(e.days) is int and type(e.places) is tuple and type(e.cost_usd) is float
    ):  # fmt: skip
        key = (e.route, e.query, e.reason, e.aspect, e.places, e.days, e.provider, e.cache_hit, e.stale, e.cost_usd,
               e.outcome)  # fmt: skip
        try:
            hash(key)
        except TypeError:  # a value that cannot be a key: the row is made in full
            return e
        return (e.started_at, e.latency_ms, key)
    return e


def stem_of(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a short ROW shares with every other row of its question: all but its id, time and latency
    (Batch.rows puts them back)."""
    return row[2:LATENCY] + row[LATENCY + 1 :]


def padded(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """ROW with a value for each of COLUMNS: the NULLs a short row leaves out, put back."""
    return row if len(row) == len(COLUMNS) else row + _EMPTY_TAIL[len(row) - ANSWER_WIDTH :]


def utc_isoformat(timestamp: float) -> str:
    """datetime.fromtimestamp(TIMESTAMP, timezone.utc).isoformat(timespec="microseconds"), made cheaper
    (that call was a large share of a row's formatting): the date and time to the second are kept per second,
    and the microseconds rounded as datetime rounds them (half to even, a carry into the next second)."""
    fraction, whole = math.modf(timestamp)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    if whole < 0 or micro < 0:  # before 1970: not a time this ledger writes; datetime says it right
        return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).isoformat(timespec="microseconds")
    second = int(whole)
    prefix = _SECONDS.get(second)
    if prefix is None:
        if len(_SECONDS) >= _MEMO_SIZE:
            _SECONDS.clear()
        prefix = _SECONDS[second] = dt.datetime.fromtimestamp(second, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{prefix}.{micro:06d}+00:00"


_SECONDS: dict[int, str] = {}  # a second since 1970 -> its UTC date and time, as utc_isoformat writes them


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
        return value  # nearly every row: the checks below cost a rule row a tenth of its formatting
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


def _without_words(reason: str) -> str:
    """REASON with nothing of the question's own words (hash mode): 'unrecognised: 遛狗' → 'unrecognised'."""
    if reason.startswith("rule:"):
        return reason.split("; sound-alike:")[0]
    head, separator, _ = reason.rpartition(": ")
    return head if separator else reason


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)

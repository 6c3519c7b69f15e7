"""No personal data anywhere it leaves the process (issue 49, item 5): every form of it the masking table holds
(test_privacy.py), said in a context clause, beside words the LLM is sent for and as the model's own words,
asked through the library and through `serve` over HTTP with a SQLite and a PostgreSQL ledger, in each of the
three ways a question may be kept (HYBRID_WEATHER_LEDGER_QUERIES masked or hash; HYBRID_WEATHER_LLM_SEES=raw,
where the model sees it whole and may say it back). Then every column of every table the schema has (read
from the database, not listed here), every span attribute and event, the logs and the metrics are searched."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import sys
import time
import unicodedata
import urllib.error
import urllib.request

import pytest
from live_server import post, serving

from fake_openai import answer, tool_calls
from personal_data import CASES, EMAIL_QUESTIONS
from support import subprocess_env

#: Every form of personal data the masking table holds.
FORMS = [text for text, masked in CASES if text != masked]
#: (HYBRID_WEATHER_LEDGER_QUERIES, HYBRID_WEATHER_LLM_SEES): the three ways a question is kept and sent.
MODES = [("masked", "masked"), ("hash", "masked"), ("masked", "raw")]
_CJK = re.compile(r"[\u3400-\u9fff]")
#: Columns whose text is the router's own in every mode: canonical place names, and a feedback's own words
#: (not the question's), masked like the rest.
_ROUTERS_OWN = {"places", "comment"}


def questions() -> list[str]:
    """Each form said as context before a question, beside words the LLM is sent for, and alone; the
    e-mail questions of test_privacy.py as they are."""
    asked = []
    for form in FORMS:
        asked += [f"我的号码是{form}，北京明天天气怎么样", f"{form} 帮我写一首关于上海的诗", f"{form}明天冷吗"]
    return asked + EMAIL_QUESTIONS


def needles() -> set[str]:
    """What of each form must not be found: its digits (separators dropped: 138-1234-5678 is 13812345678, and
    +86's number without the 86) and an address's part before the @, as written and in ASCII."""
    found: set[str] = set()
    for form in FORMS:
        ascii_form = unicodedata.normalize("NFKC", form)
        digits = re.sub(r"[\s\-.+]", "", ascii_form)
        for run in re.findall(r"\d{11,}[Xx]?", digits):
            found.add(run.lower().rstrip("x"))
            if run.startswith(("86", "0086")) and len(run) > 11:
                found.add(run[-11:])
        for run in re.findall(r"\d{11,}", re.sub(r"\D", "", digits)):
            found.add(run)
        for local in re.findall(r"([A-Za-z0-9!#$%&'*+/=?^_`{|}~.\-]{3,})@", ascii_form):
            found.add(local.lower())
    for question in EMAIL_QUESTIONS:
        for local in re.findall(r"([A-Za-z0-9!#$%&'*+/=?^_`{|}~.\-]{3,})@", unicodedata.normalize("NFKC", question)):
            found.add(local.lower())
    return found


NEEDLES = needles()


def leaks(text: str) -> list[str]:
    """The personal data found in TEXT, in any spelling the router or an exporter might have made of it."""
    plain = unicodedata.normalize("NFKC", text).lower()
    squeezed = re.sub(r"[\s\-.+]", "", plain)
    found = [needle for needle in NEEDLES if needle.isdigit() and (needle in plain or needle in squeezed)]
    # An address's part before the @ as a word of its own: foo is no leak inside a random session id.
    return sorted(found + [needle for needle in NEEDLES if not needle.isdigit() and _word(needle).search(plain)])


def _word(needle: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z0-9]){re.escape(needle)}(?![a-z0-9])")


def _script(llm_server) -> None:
    """A model that says the personal data back: as a tool's place and date, as a tool's name (a metrics
    label, a span's name), then in its answer."""
    phone, id_number = "13812345678", "11010119900307777X"
    llm_server.then(
        tool_calls(("get_weather", {"place": phone, "date": id_number}), (phone, {"x": phone})),
        answer(f"好的，已记下 {phone} 和 {id_number}。"),
    )
    llm_server.repeat_last = True


# -- what was stored --------------------------------------------------------------------------------------


def sqlite_cells(path) -> dict[str, list[tuple[str, object]]]:
    """Every table of the SQLite file at PATH (read from its schema), as (column, value) pairs."""
    cells: dict[str, list[tuple[str, object]]] = {}
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            cursor = db.execute(f'SELECT * FROM "{table}"')
            names = [column[0] for column in cursor.description]
            cells[table] = [(name, value) for row in cursor for name, value in zip(names, row, strict=True)]
    return cells


def postgres_cells(url) -> dict[str, list[tuple[str, object]]]:
    """Every table of the ledger's schema (read from information_schema), as (column, value) pairs."""
    import psycopg

    cells: dict[str, list[tuple[str, object]]] = {}
    with psycopg.connect(url) as db:
        tables = [name for (name,) in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]  # fmt: skip
        for table in tables:
            cursor = db.execute(f'SELECT * FROM "{table}"')
            names = [column.name for column in cursor.description or ()]
            cells[table] = [(name, value) for row in cursor.fetchall() for name, value in zip(names, row, strict=True)]
    return cells


def check_tables(cells, queries: str) -> None:
    found = []
    for table, pairs in cells.items():
        for column, value in pairs:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            if leaks(text):
                found.append((table, column, text, leaks(text)))
            # Hash mode keeps no words of the question: only the router's (its labels, the places it named).
            if queries == "hash" and table == "requests" and column not in _ROUTERS_OWN and _CJK.search(text):
                found.append((table, column, text, "a word of the question"))
    assert not found, found[:10]


def check_spans(attributes: list[dict], queries: str) -> None:
    assert attributes, "the spans were exported"
    found = []
    for attribute in attributes:
        for name, value in attribute.items():
            text = json.dumps(value, ensure_ascii=False)
            if leaks(text):
                found.append((name, text, leaks(text)))
            if queries == "hash" and name != "hybrid_weather.places" and _CJK.search(text):
                found.append((name, text, "a word of the question"))
    assert not found, found[:10]


# -- the library --------------------------------------------------------------------------------------------

LIBRARY = """
import json, logging, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)

from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.agent.errors import HybridWeatherError

url, ledger, queries, sees = sys.argv[1:5]
settings = Settings(provider="demo", openai_api_key="sk-test", openai_base_url=url, model="gpt-4o-mini",
                    ledger_queries=queries, llm_sees=sees)
with HybridRouter(settings=settings, ledger=ledger, llm_options={"backoff_base": 0.01}) as router:
    last = None
    for question in json.load(sys.stdin):
        try:
            last = router.ask(question).request_id or last
        except HybridWeatherError as error:
            print(f"failed: {error}", file=sys.stderr)
    router.feedback(last, "wrong", "我的手机13812345678，身份证11010119900307777X")
spans = []
for span in exporter.get_finished_spans():
    spans.append({"name": span.name, **dict(span.attributes)})
    spans += [dict(event.attributes) for event in span.events]
print(json.dumps(spans, ensure_ascii=False))
"""


@pytest.mark.parametrize("queries,sees", MODES)
def test_the_library_leaks_no_personal_data_to_the_ledger_the_spans_or_the_logs(queries, sees, llm_server, tmp_path):
    _script(llm_server)
    ledger = tmp_path / "ledger.db"
    done = subprocess.run([sys.executable, "-c", LIBRARY, llm_server.base_url, str(ledger), queries, sees],
                          input=json.dumps(questions(), ensure_ascii=False), capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    stored = sqlite_cells(ledger)
    assert len(stored["requests"]) > len(questions()), "a row of each ask"
    check_tables(stored, queries)
    check_spans(json.loads(done.stdout), queries)
    assert not leaks(done.stderr), [line for line in done.stderr.splitlines() if leaks(line)][:10]


# -- serve, over HTTP ---------------------------------------------------------------------------------------


def _ask_all(server) -> None:
    """Every question over /v1/ask (half of them in a session), one pass-through chat request, feedback with
    a comment, and an error body that quotes what it was sent."""
    last, refusals = None, []
    for i, question in enumerate(questions()):
        body = {"query": question, **({"session_id": f"privacy-{i % 3}"} if i % 2 else {})}
        try:
            _, said = post(f"{server.url}/v1/ask", body)
            last = said.get("request_id") or last
        except urllib.error.HTTPError as error:
            refusals.append(error.read().decode())
    assert not [body for body in refusals if leaks(body)]
    with contextlib.suppress(urllib.error.HTTPError):  # the model's answer is not the point: the row is
        post(
            f"{server.url}/v1/chat/completions",
            {
                "model": "gpt-4o-mini",
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
                "messages": [{"role": "user", "content": FORMS[0]}],
            },
        )
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(
            f"{server.url}/v1/chat/completions",
            {"model": "13812345678", "messages": [{"role": "user", "content": "x"}]},
        )
    assert not leaks(refused.value.read().decode())
    deadline = time.monotonic() + 10
    while True:  # the row may still be in the writer's queue
        try:
            post(f"{server.url}/v1/feedback", {"request_id": last, "verdict": "wrong",
                                              "comment": "我的手机13812345678，身份证11010119900307777X"})  # fmt: skip
            break
        except urllib.error.HTTPError as error:
            if error.code != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
        metrics = response.read().decode()
    assert not leaks(metrics), [line for line in metrics.splitlines() if leaks(line)][:10]


def _console_spans(text: str) -> list[dict]:
    """The attributes and events of the spans OTEL_TRACES_EXPORTER=console printed into TEXT."""
    decoder, spans, at = json.JSONDecoder(), [], 0
    while (at := text.find('{\n    "name"', at)) != -1:
        span, at = decoder.raw_decode(text, at)
        spans.append({"name": span["name"], **span.get("attributes", {})})
        spans += [event.get("attributes", {}) for event in span.get("events", [])]
    return spans


def _serve_and_check(tmp_path, llm_server, queries, sees, ledger, cells) -> None:
    _script(llm_server)
    log = tmp_path / "serve.log"
    env = {"HYBRID_WEATHER_LEDGER_QUERIES": queries, "HYBRID_WEATHER_LLM_SEES": sees, "OTEL_TRACES_EXPORTER": "console",
           **({"HYBRID_WEATHER_LEDGER": ledger} if ledger else {})}  # fmt: skip
    with log.open("w") as stderr, serving(tmp_path, llm_server, stderr=stderr, **env) as server:
        _ask_all(server)
    stored = cells(ledger or server.ledger)
    assert len(stored["requests"]) > len(questions()), "a row of each ask"
    check_tables(stored, queries)
    # A session's turns are the conversation itself (a follow-up reads them): masked, in every mode.
    check_tables(sqlite_cells(tmp_path / "home" / "serve-sessions.db"), "masked")
    said = log.read_text()
    check_spans(_console_spans(said), queries)
    assert not leaks(said), [line for line in said.splitlines() if leaks(line)][:10]


@pytest.mark.parametrize("queries,sees", MODES)
def test_serve_with_a_sqlite_ledger_leaks_no_personal_data(queries, sees, llm_server, tmp_path):
    _serve_and_check(tmp_path, llm_server, queries, sees, None, sqlite_cells)


@pytest.mark.parametrize("queries,sees", MODES)
def test_serve_with_a_postgres_ledger_leaks_no_personal_data(queries, sees, llm_server, tmp_path, pg_url):
    _serve_and_check(tmp_path, llm_server, queries, sees, pg_url, postgres_cells)

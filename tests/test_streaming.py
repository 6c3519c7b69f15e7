"""Token streaming (issue 40.5): an LLM answer's text as the model streams it, over real HTTP — the real
openai SDK against a scripted server on 127.0.0.1 that streams chat.completion.chunk events, faults
included; then the drop-in endpoint's `stream: true`, read with the stock openai client."""

import contextlib
import json
import sqlite3
import threading
import time
import urllib.request

import pytest

from hybrid_weather.agent.errors import LLMUnavailable
from hybrid_weather.router import TextPiece

from fake_openai import answer, tool_calls
from llm_router import KEY, QUESTION, ledger_rows, make_router
from support import TODAY, midway

ANSWER = "明天北京多云，8~15°C，风小，适合出游。"


def ask_streamed(router, question=QUESTION, **options):
    """(answer, pieces, when each piece came: seconds after the ask began)."""
    pieces: list[TextPiece] = []
    times: list[float] = []
    began = time.perf_counter()

    def on_text(piece):
        pieces.append(piece)
        times.append(time.perf_counter() - began)

    answer_ = router.ask(question, today=TODAY, on_text=on_text, **options)
    return answer_, pieces, times


def test_tool_round_then_the_answer_streams_piece_by_piece(weather_server, llm_server):
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
        {**answer(ANSWER, prompt=560, completion=30), "token_gap": 0.05},
    )
    with make_router(weather_server, llm_server) as router:
        result, pieces, times = ask_streamed(router)
        rows = ledger_rows(router)
    first, second = llm_server.requests
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    # The tool call was put together from its pieces and run; its arguments reached the tool whole.
    call = second["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"place": "北京", "date": "明天"}
    assert json.loads(second["messages"][-1]["content"])["place"] == "北京市"
    # The answer came in many pieces, the first long before the last, and they join to the answer.
    assert len(pieces) == len(ANSWER) // 2 + len(ANSWER) % 2
    assert "".join(p.text for p in pieces) == result.text == ANSWER
    assert times[-1] - times[0] >= 0.05 * (len(pieces) - 2)
    assert {(p.model, p.request_id) for p in pieces} == {("gpt-4o-mini", result.request_id)}
    (row,) = rows
    assert row["id"] == result.request_id and (row["prompt_tokens"], row["completion_tokens"]) == (980, 55)
    assert row["cost_usd"] is not None and row["cost_usd"] > 0


def test_a_rule_answer_comes_whole_in_one_piece(weather_server, llm_server):
    with make_router(weather_server, llm_server) as router:
        result, pieces, _ = ask_streamed(router, "北京明天天气")
    assert result.route == "rule" and pieces == [TextPiece(result.text, None, result.request_id)]
    assert not llm_server.requests


def test_a_server_that_ignores_stream_answers_whole(weather_server, llm_server):
    llm_server.then({**answer(ANSWER), "ignore_stream": True})
    with make_router(weather_server, llm_server) as router:
        result, pieces, _ = ask_streamed(router)
    assert [p.text for p in pieces] == [ANSWER] and result.text == ANSWER


def test_a_stream_without_usage_has_an_unknown_cost_not_zero(weather_server, llm_server):
    llm_server.then({**answer(ANSWER), "no_usage": True})
    with make_router(weather_server, llm_server) as router:
        result, _, _ = ask_streamed(router)
        (row,) = ledger_rows(router)
    assert result.text == ANSWER and result.cost_usd is None and row["cost_usd"] is None


def test_a_preamble_beside_tool_calls_is_part_of_what_was_said(weather_server, llm_server):
    """Content that came before a tool call began went out as it came: the answer is what the client saw."""
    round_one = tool_calls(("get_weather", {"place": "北京", "date": "明天"}))
    round_one["message"]["content"] = "我查一下。"
    llm_server.then(round_one, answer(ANSWER))
    with make_router(weather_server, llm_server) as router:
        result, pieces, _ = ask_streamed(router)
    assert "".join(p.text for p in pieces) == result.text == "我查一下。" + ANSWER


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 503},
        {"status": 429, "headers": {"retry-after": "0"}},
        {**answer(ANSWER), "cut_after": 0},  # the connection closed before any event
        {**answer(ANSWER), "events": ["{not json"]},
        {**answer(ANSWER), "events": ['{"error": {"message": "overloaded", "type": "server_error"}}']},
        {**answer(ANSWER), "events": ['{"choices": [{"index": 0, "delta": {}, "finish_reason": null}]}', "[DONE]"]},
    ],
    ids=["503", "429", "closed", "not-json", "error-event", "empty"],
)
def test_a_fault_before_any_text_is_retried_and_nothing_is_said_twice(weather_server, llm_server, fault):
    llm_server.then(fault, answer(ANSWER))
    with make_router(weather_server, llm_server) as router:
        result, pieces, _ = ask_streamed(router)
        (row,) = ledger_rows(router)
    assert "".join(p.text for p in pieces) == result.text == ANSWER
    assert row["llm_attempts"] == 2 and row["outcome"] == "ok"


def test_a_stream_cut_after_its_text_began_fails_once_and_is_recorded(weather_server, llm_server):
    llm_server.then({**answer(ANSWER), "cut_after": 4}, answer("不该出现的第二遍"))
    with make_router(weather_server, llm_server) as router:
        pieces: list[TextPiece] = []
        with pytest.raises(LLMUnavailable, match="broke off after it had begun"):
            router.ask(QUESTION, today=TODAY, on_text=pieces.append)
        (row,) = ledger_rows(router)
    assert "".join(p.text for p in pieces) == ANSWER[:6]  # three content events went out, and no more
    assert len(llm_server.requests) == 1  # not retried: the client would read the answer twice
    assert row["outcome"] != "ok" and row["id"] == pieces[0].request_id


def test_no_fallback_model_takes_over_an_answer_that_began(weather_server, llm_server):
    """HYBRID_WEATHER_MODEL=primary,fallback: once the primary's text went out, the fallback is not asked."""
    llm_server.then({**answer(ANSWER), "cut_after": 4}, answer("备用模型的回答"))
    router = make_router(weather_server, llm_server, model="gpt-4o-mini,gpt-4o")
    with router, pytest.raises(LLMUnavailable):
        router.ask(QUESTION, today=TODAY, on_text=lambda piece: None)
    assert [request["model"] for request in llm_server.requests] == ["gpt-4o-mini"]


def test_a_drip_fed_stream_ends_by_the_call_deadline(weather_server, llm_server):
    """A server that keeps every event within any read timeout, the answer never: the attempt's deadline
    holds over the whole streamed body (1 s here, the request's deadline 10 s), and text that went out is
    not said again."""
    llm_server.then({**answer("很" * 500), "token_gap": 0.05})
    with make_router(weather_server, llm_server, call_timeout=1.0, deadline=10.0) as router:
        began = time.monotonic()
        with pytest.raises(LLMUnavailable, match="broke off after it had begun"):
            router.ask(QUESTION, today=TODAY, on_text=lambda piece: None)
    assert time.monotonic() - began < midway(1.0, 10.0)  # the attempt's deadline, not the request's


def test_a_stream_past_the_size_cap_stops(weather_server, llm_server, monkeypatch):
    from hybrid_weather.agent import guard

    monkeypatch.setattr(guard, "LLM_MAX_BYTES", 64 * 1024)
    llm_server.then(answer("很" * 60_000))
    with make_router(weather_server, llm_server) as router, pytest.raises(LLMUnavailable, match="kB"):
        router.ask(QUESTION, today=TODAY, on_text=lambda piece: None)


def test_a_caller_whose_on_text_fails_still_gets_the_answer_recorded(weather_server, llm_server):
    """A closed pipe, a closed event loop: the caller's failure ends its pieces, not the answer the tokens
    were spent on. The row is written, then ask() raises what on_text raised."""
    llm_server.then({**answer(ANSWER, prompt=300, completion=20), "token_gap": 0.01})
    got: list[str] = []

    def on_text(piece):
        if len(got) == 2:
            raise BrokenPipeError("the reader went away")
        got.append(piece.text)

    with make_router(weather_server, llm_server) as router:
        with pytest.raises(BrokenPipeError):
            router.ask(QUESTION, today=TODAY, on_text=on_text)
        (row,) = ledger_rows(router)
    assert got == [ANSWER[:2], ANSWER[2:4]]
    assert (row["outcome"], row["prompt_tokens"], row["completion_tokens"]) == ("ok", 300, 20)


def test_aask_streams_from_its_worker_thread(weather_server, llm_server):
    import asyncio

    llm_server.then({**answer(ANSWER), "token_gap": 0.02})
    threads: set[int] = set()

    def on_text(piece):
        threads.add(threading.get_ident())

    with make_router(weather_server, llm_server) as router:
        result = asyncio.run(router.aask(QUESTION, today=TODAY, on_text=on_text))
    assert result.text == ANSWER and threads and threading.get_ident() not in threads


# -- the drop-in endpoint, `hybrid-weather serve` in its own process, read with the stock openai client ------


def rows_of(server, columns, count):
    """COLUMNS of the served ledger's rows, once it holds COUNT of them (its writer batches; 10 s at most)."""
    deadline, rows = time.monotonic() + 10, []
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.OperationalError), sqlite3.connect(server.ledger) as db:  # no table yet
            rows = db.execute(f"SELECT {columns} FROM requests ORDER BY id").fetchall()
        if len(rows) >= count:
            break
        time.sleep(0.1)
    return rows


def test_the_drop_in_streams_the_llm_answer_as_the_model_writes_it(tmp_path, llm_server):
    openai = pytest.importorskip("openai")
    from live_server import serving

    gap = 0.1
    llm_server.then(
        tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
        {**answer(ANSWER, prompt=560, completion=30), "token_gap": gap},
    )
    with serving(tmp_path, llm_server) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        began = time.perf_counter()
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": QUESTION}],
        )  # fmt: skip
        chunks, arrived = [], []
        for chunk in raw.parse():
            chunks.append(chunk)
            arrived.append(time.perf_counter() - began)
        (row,) = rows_of(server, "id, route, prompt_tokens, completion_tokens", 1)
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
            metrics = response.read().decode()
    assert "hybrid_weather_first_token_seconds_count 1.0" in metrics
    assert raw.headers["x-hybrid-weather-route"] == "llm"
    texts = [(c.choices[0].delta.content, at) for c, at in zip(chunks, arrived, strict=True) if c.choices]
    pieces = [(text, at) for text, at in texts if text]
    assert "".join(text for text, _ in pieces) == ANSWER and len(pieces) == -(-len(ANSWER) // 2)
    # Token by token: the first piece was read while the model was still writing the rest.
    assert pieces[-1][1] - pieces[0][1] >= gap * (len(pieces) - 2) * 0.8
    assert {c.id for c in chunks} == {f"chatcmpl-{raw.headers['x-request-id']}"}
    assert {c.model for c in chunks} == {"gpt-4o-mini"}
    assert chunks[-1].usage.prompt_tokens == 980 and chunks[-1].usage.completion_tokens == 55
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert row == (raw.headers["x-request-id"], "llm", 980, 55)


def test_the_drop_in_stream_fails_as_the_sdk_expects_before_and_after_its_text_began(tmp_path, llm_server):
    """Before the first piece, a failure is the status it would be unstreamed (the SDK raises its typed
    error); after it, an `error` event, which the SDK raises as an APIError in the middle of the loop."""
    openai = pytest.importorskip("openai")
    from live_server import serving

    llm_server.then({"status": 503}, {"status": 503}, {"status": 503}, {**answer(ANSWER), "cut_after": 4})
    messages = [{"role": "user", "content": QUESTION}]
    with serving(tmp_path, llm_server) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.InternalServerError) as before:
            client.chat.completions.create(model="gpt-4o-mini", stream=True, messages=messages)
        got: list[str] = []
        stream = client.chat.completions.create(model="gpt-4o-mini", stream=True, messages=messages)
        with pytest.raises(openai.APIError) as after:
            got.extend(chunk.choices[0].delta.content or "" for chunk in stream)
        outcomes = [outcome for (outcome,) in rows_of(server, "outcome", 2)]
    assert before.value.status_code == 503 and "failed 3 times" in before.value.message
    assert "".join(got) == ANSWER[:6] and "broke off" in after.value.message
    assert len(outcomes) == 2 and "ok" not in outcomes


def test_a_client_that_leaves_midway_still_gets_its_answer_recorded(tmp_path, llm_server):
    """The tokens were spent: the answer runs to its end on the server and its row has them."""
    import http.client

    from live_server import serving

    llm_server.then({**answer(ANSWER, prompt=300, completion=20), "token_gap": 0.05})
    with serving(tmp_path, llm_server) as server:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        body = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": QUESTION}]})
        connection.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200 and response.read1(64)
        connection.close()  # gone, a few pieces in
        rows = rows_of(server, "prompt_tokens, completion_tokens", 1)
    assert rows == [(300, 20)]


# -- the terminal ---------------------------------------------------------------------------------------------


def test_the_cli_shows_a_models_answer_as_it_is_written(tmp_path, weather_server, llm_server):
    """`hybrid-weather "北京明天适合出游吗"`: the first words are on the screen long before the last, and the
    output is the answer's text and one line end, as when it came whole."""
    import os
    import subprocess
    import sys

    from support import subprocess_env

    gap = 0.15
    llm_server.then({**answer(ANSWER), "token_gap": gap})
    env = subprocess_env(HYBRID_WEATHER_OPEN_METEO_URL=weather_server.url, OPENAI_API_KEY=KEY,
                         OPENAI_BASE_URL=llm_server.base_url, HYBRID_WEATHER_MODEL="gpt-4o-mini")  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "hybrid_weather.router", QUESTION, "--today", TODAY.isoformat()],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)  # fmt: skip
    out, arrivals = b"", []
    while chunk := os.read(process.stdout.fileno(), 1024):
        out += chunk
        arrivals.append(time.perf_counter())
    assert process.wait(timeout=30) == 0, process.stderr.read()
    assert out.decode() == ANSWER + "\n"
    assert arrivals[-1] - arrivals[0] >= gap * (-(-len(ANSWER) // 2) - 2) * 0.8


def test_a_cli_answer_that_breaks_off_ends_its_line_then_says_why(tmp_path, weather_server, llm_server):
    from click.testing import CliRunner

    from hybrid_weather.router.cli import cli

    llm_server.then({**answer(ANSWER), "cut_after": 4})
    env = {"HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url, "OPENAI_API_KEY": KEY,
           "OPENAI_BASE_URL": llm_server.base_url, "HYBRID_WEATHER_MODEL": "gpt-4o-mini"}  # fmt: skip
    result = CliRunner().invoke(cli, [QUESTION, "--today", TODAY.isoformat()], env=env)
    assert result.exit_code == 4
    assert result.stdout.startswith(ANSWER[:6] + "\n") and "broke off after it had begun" in result.stderr


def test_chat_prints_each_answer_on_its_own_line_streamed_or_not(weather_server, llm_server):
    from click.testing import CliRunner

    from hybrid_weather.router.cli import cli

    llm_server.then({**answer(ANSWER), "token_gap": 0.01})
    env = {"HYBRID_WEATHER_OPEN_METEO_URL": weather_server.url, "OPENAI_API_KEY": KEY,
           "OPENAI_BASE_URL": llm_server.base_url, "HYBRID_WEATHER_MODEL": "gpt-4o-mini"}  # fmt: skip
    result = CliRunner().invoke(cli, ["chat", "--no-emoji", "--today", TODAY.isoformat()],
                                input=f"{QUESTION}\n上海明天天气\n退出\n", env=env)  # fmt: skip
    assert result.exit_code == 0, result.output
    streamed, rule = result.stdout.splitlines()
    assert streamed == ANSWER and rule.startswith("上海明天")
    assert [request["stream"] for request in llm_server.requests] == [True]


def test_server_sent_events_are_read_as_the_format_says():
    from hybrid_weather.agent.llm.reply import sse_data

    lines = [": keep-alive", "", "event: message", "id: 7", "data: {\"a\":", "data:1}", "", "retry: 10", "",
             "data:  two spaces", "data: [DONE]"]  # fmt: skip
    assert list(sse_data(lines)) == ['{"a":\n1}', " two spaces\n[DONE]"]


def test_a_server_that_sends_a_tool_call_whole_unnumbered_and_no_done_is_understood(weather_server, llm_server):
    whole_call = {"id": "c1", "type": "function",
                  "function": {"name": "get_weather", "arguments": {"place": "北京", "date": "明天"}}}  # fmt: skip
    events = [
        json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}),
        json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [whole_call]}, "finish_reason": None}]}),
        json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]
    llm_server.then({**answer(""), "events": events}, answer(ANSWER))  # each call whole, arguments an object
    with make_router(weather_server, llm_server) as router:
        result, pieces, _ = ask_streamed(router)
    call = llm_server.requests[1]["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"place": "北京", "date": "明天"}
    assert "".join(p.text for p in pieces) == result.text == ANSWER

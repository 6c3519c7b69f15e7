"""A local server on 127.0.0.1 that speaks the OpenAI Chat Completions API, scripted per test.

Each POST /v1/chat/completions takes the next step of the script: a reply (built with `tool_calls` or
`answer`) or a fault ({"status": 429, "headers": {...}}, {"status": 500}, {"sleep": seconds}). Hostile
steps (issue 11): {"raw": text, "content_type": ...} sends any body with a 200 (or "status"),
{"reply": {...}} a whole reply object of any shape, {"echo_headers": True} a 400 whose body repeats the
request's headers (the key included), and any step may add "drip": seconds (one byte per interval) or
"gzip_bomb": True. Every request body is kept, so tests can check what the model was sent.

A request with `stream: true` is answered with chat.completion.chunk events (see `_events`); a step may
add "token_gap": seconds between events, "cut_after": n events before the connection closes,
"events": [data, ...] sent as they are, "no_usage": True, or "ignore_stream": True (a whole body).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


def usage(prompt=400, completion=40, cached=0, deepseek=False) -> dict[str, Any]:
    if deepseek:  # DeepSeek reports its cache in its own fields, not prompt_tokens_details
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_cache_hit_tokens": cached,
            "prompt_cache_miss_tokens": prompt - cached,
        }
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def tool_calls(*calls: tuple[str, Any], **usage_args) -> dict[str, Any]:
    """A reply that calls tools; each call is (name, arguments: dict or raw str). Ids are call_1, call_2 …"""
    return {
        "message": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{next(_ids)}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                    },
                }
                for name, args in calls
            ],
        },
        "finish_reason": "tool_calls",
        "usage": usage(**usage_args),
    }


def answer(text: str, **usage_args) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": text}, "finish_reason": "stop", "usage": usage(**usage_args)}


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.repeat_last = False  # keep answering with the last step (a model that never stops)
        self._last: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # A client that gave up (a timeout test) leaves a broken pipe behind; that is the point, not an error.
        self._server.handle_error = lambda request, address: None
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def then(self, *steps: dict[str, Any]) -> FakeOpenAI:
        self.script.extend(steps)
        return self

    def _next(self) -> dict[str, Any]:
        with self._lock:
            if self.script:
                self._last = self.script.popleft()
                return self._last
            if self.repeat_last and self._last is not None:
                # Fresh ids each time, as a real model would give.
                return json.loads(json.dumps(self._last).replace('"call_', f'"call_r{next(_ids)}_'))
        return {"status": 500, "body": {"error": {"message": "script exhausted", "type": "test"}}}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                step = fake._next()
                if "sleep" in step:
                    time.sleep(step["sleep"])
                    step = step.get("then", answer("late"))
                if body.get("stream") and not step.get("ignore_stream") and not _FAULTS & set(step):
                    return _write_stream(self, step, body)
                status, payload = _payload(step, body, dict(self.headers))
                if step.get("gzip_bomb"):
                    from fake_weather import _gzip_bomb

                    payload = _gzip_bomb()
                self.send_response(status)
                for name, value in step.get("headers", {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", step.get("content_type", "application/json"))
                if step.get("gzip_bomb"):
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if "drip" in step:  # every byte within any read timeout, the whole body never
                    for byte in payload:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(step["drip"])
                    return
                self.wfile.write(payload)

        return Handler


#: Steps that answer with a status or a whole body of their own, streamed request or not (a server that
#: ignores `stream`).
_FAULTS = frozenset({"status", "raw", "echo_headers", "reply", "drip", "gzip_bomb"})


def _write_stream(handler: BaseHTTPRequestHandler, step: dict[str, Any], body: dict[str, Any]) -> None:
    """STEP as chat.completion.chunk events, written as they would be generated."""
    events = step.get("events") or _events(step, body)
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()  # no length: the body ends when the connection closes (HTTP/1.0)
    for n, event in enumerate(events):
        if n == step.get("cut_after"):
            return  # the connection closes mid-answer
        if n and step.get("token_gap"):
            time.sleep(step["token_gap"])
        handler.wfile.write(f"data: {event}\n\n".encode())
        handler.wfile.flush()


def _payload(step: dict[str, Any], body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
    """The status and whole body a STEP answers with."""
    if step.get("echo_headers"):
        return step.get("status", 400), json.dumps({"error": {"message": f"bad request from {headers}"}}).encode()
    if "raw" in step:
        return step.get("status", 200), step["raw"].encode()
    if "status" in step:
        error = {"error": {"message": f"HTTP {step['status']}", "type": "test"}}
        return step["status"], json.dumps(step.get("body", error)).encode()
    reply = step.get("reply") or {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": step["message"], "finish_reason": step["finish_reason"]}],
        **({} if step.get("no_usage") else {"usage": step["usage"]}),
    }
    return 200, json.dumps(reply, ensure_ascii=False).encode()


def _events(step: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """The data of each event a streaming server sends for a scripted reply: role, then the content two
    characters at a time (or each tool call, its arguments eight at a time), the finish, the usage."""
    base = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model")}  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]},
                          ensure_ascii=False)  # fmt: skip

    message = step["message"]
    events = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    events += [chunk({"content": text[i : i + 2]}) for i in range(0, len(text), 2)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": {"name": function["name"], "arguments": ""}}]}))  # fmt: skip
        arguments = function["arguments"]
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 8]}}]})
                   for i in range(0, len(arguments), 8)]  # fmt: skip
    events.append(chunk({}, step["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage") and not step.get("no_usage"):
        events.append(json.dumps({**base, "choices": [], "usage": step["usage"]}))
    return [*events, "[DONE]"]

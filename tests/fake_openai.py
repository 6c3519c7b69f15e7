"""A local server on 127.0.0.1 that speaks the OpenAI Chat Completions API, scripted per test.

Each POST /v1/chat/completions takes the next step of the script: a reply (built with `tool_calls` or
`answer`) or a fault ({"status": 429, "headers": {...}}, {"status": 500}, {"sleep": seconds}). Hostile
steps (issue 11): {"raw": text, "content_type": ...} sends any body with a 200 (or "status"),
{"reply": {...}} a whole reply object of any shape, {"echo_headers": True} a 400 whose body repeats the
request's headers (the key included), and any step may add "drip": seconds (one byte per interval) or
"gzip_bomb": True. Every request body is kept, so tests can check what the model was sent.
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
                status, payload = step.get("status", 200), None
                if step.get("echo_headers"):
                    status = step.get("status", 400)
                    payload = json.dumps({"error": {"message": f"bad request from {dict(self.headers)}"}}).encode()
                elif "raw" in step:
                    payload = step["raw"].encode()
                elif "status" in step:
                    payload = json.dumps(
                        step.get("body", {"error": {"message": f"HTTP {step['status']}", "type": "test"}})
                    ).encode()
                else:
                    reply = step.get("reply") or {
                        "id": f"chatcmpl-{next(_ids)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model"),
                        "choices": [{"index": 0, "message": step["message"], "finish_reason": step["finish_reason"]}],
                        "usage": step["usage"],
                    }
                    payload = json.dumps(reply, ensure_ascii=False).encode()
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

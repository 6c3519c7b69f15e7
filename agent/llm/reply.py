"""One Chat Completions reply, read from its raw body against the documented shape.

The SDK's own parsing trusts the server: a 200 with an HTML body comes back as a str, `choices: []`
as an IndexError, `arguments` as an object as a dict where a str belongs. The loop reads the body
itself, here, and anything that is not a usable reply is a MalformedReply with a reason it can
report (never the body itself: it could hold anything, the key included).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import guard
from .models import MAX_TOKENS, Usage


class MalformedReply(ValueError):
    """The LLM's reply is not a usable chat completion; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  #: JSON text, as the model wrote it (the tool box reads it, and says if it is not JSON)


@dataclass(frozen=True, slots=True)
class Reply:
    content: str | None
    calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None  #: DeepSeek's thinking mode wants it sent back with tool calls
    usage: Usage = field(default_factory=Usage)


def read_reply(body: bytes, *, serial: int) -> Reply:
    """The reply in BODY. SERIAL names tool calls the server sent without an id (call_hw_<serial>_<n>)."""
    try:
        data = guard.read_json(body)
    except guard.NotJSON as error:
        raise MalformedReply(f"sent {error}") from None
    if not isinstance(data, dict):
        raise MalformedReply(f"sent a JSON {type(data).__name__}, not a chat completion")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedReply("sent a reply with no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise MalformedReply("sent a choice with no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise MalformedReply(f"sent content of type {type(content).__name__}")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise MalformedReply(f"sent tool_calls of type {type(raw_calls).__name__}")
    calls = [_tool_call(raw, f"call_hw_{serial}_{n}") for n, raw in enumerate(raw_calls, 1)]
    if not calls and not (content or "").strip():
        raise MalformedReply("sent an empty answer with no tool calls")
    reasoning = message.get("reasoning_content")
    return Reply(content, calls, reasoning if isinstance(reasoning, str) else None, _usage(data.get("usage")))


def _tool_call(raw: Any, fallback_id: str) -> ToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise MalformedReply("sent a tool call with no function name")
    call_id = raw.get("id")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # an object where the API has a JSON string: take what it means
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif arguments is None:
        arguments = "{}"
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments)  # the tool box will say it is not an object
    # A missing id would make the next request invalid: every tool message must answer an id.
    return ToolCall(call_id if isinstance(call_id, str) and call_id else fallback_id, function["name"], arguments)


#: The usage of a reply that did not say what it used (no `usage`, or a stream without include_usage
#: support): its tokens are unknown and so is its cost, never 0 and $0.
UNKNOWN_USAGE = Usage(invalid=("prompt_tokens", "completion_tokens"))


def _usage(raw: Any) -> Usage:
    """Tokens of one reply, OpenAI's fields or DeepSeek's (prompt_cache_hit_tokens). A count no call can
    have is 0 and named in Usage.invalid (its cost is then unknown, not $0), as is a reply that sends no
    usage, or no prompt or completion count; a cached count not sent is 0."""
    if not isinstance(raw, dict):
        return UNKNOWN_USAGE
    invalid: list[str] = [key for key in UNKNOWN_USAGE.invalid if raw.get(key) is None]
    prompt = _count(raw, "prompt_tokens", invalid)
    details = raw.get("prompt_tokens_details")
    cached = _count(details, "cached_tokens", invalid) if isinstance(details, dict) else 0
    if not cached and "cached_tokens" not in invalid:
        cached = _count(raw, "prompt_cache_hit_tokens", invalid, "cached_tokens")
    if cached > prompt and "prompt_tokens" not in invalid:  # cached tokens are part of the prompt's
        invalid.append("cached_tokens")
        cached = 0
    return Usage(prompt, cached, _count(raw, "completion_tokens", invalid), tuple(invalid))


def _count(raw: dict[str, Any], key: str, invalid: list[str], field: str | None = None) -> int:
    """RAW[KEY] as a token count: 0 when it is not sent (or null), else 0 and FIELD (KEY) named in INVALID
    when it is not one (a bool, a float, text, negative, past MAX_TOKENS)."""
    value = raw.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        invalid.append(field or key)
        return 0
    return value


class StreamedReply:
    """A reply read from its chat.completion.chunk events as they come (`stream: true`).

    Each event is read against the documented chunk shape, as read_reply reads a whole body. Content
    goes to ON_TEXT as it arrives, so a caller can pass it on token by token — until a tool call begins:
    the reply is then a tool round, and what it says after that is held. What went out before (a model's
    "let me look that up") cannot be taken back: the loop makes the answer's text what went out. An
    upstream's error event is a MalformedReply that says so.
    """

    def __init__(self, *, serial: int, on_text: Callable[[str], None]) -> None:
        self._serial, self._on_text = serial, on_text
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}  # by the delta's index, as the pieces of each call come
        self._usage: Any = None
        self.sent = False  #: content has gone to ON_TEXT (a retry would now repeat it)
        self.done = False  #: the stream said [DONE]
        self.finished = False  #: a chunk gave the reply's finish_reason (a server may then close without [DONE])

    def feed(self, data: str) -> None:
        """Read one event's data."""
        if data.strip() == "[DONE]":
            self.done = True
            return
        chunk = _chunk(data)
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        if choices is None or choices == []:
            return  # the usage chunk, or a keep-alive some servers send
        first = choices[0] if isinstance(choices, list) else None
        if not isinstance(first, dict) or not isinstance(first.get("delta"), dict):
            raise MalformedReply("streamed a chunk with no delta")
        delta = first["delta"]
        if first.get("finish_reason"):
            self.finished = True
        for raw in _listed(delta.get("tool_calls"), "tool_calls"):
            self._add_call(raw)
        if isinstance(delta.get("reasoning_content"), str):
            self._reasoning.append(delta["reasoning_content"])
        content = delta.get("content")
        if content is not None and not isinstance(content, str):
            raise MalformedReply(f"streamed content of type {type(content).__name__}")
        if content:
            self._content.append(content)
            if not self._calls:
                self.sent = True
                self._on_text(content)

    def whole(self, body: bytes) -> Reply:
        """The reply of a server that answered `stream: true` with one whole body: its text passed on at once."""
        reply = read_reply(body, serial=self._serial)
        if not reply.calls and reply.content:
            self.sent = True
            self._on_text(reply.content)
        return reply

    def reply(self) -> Reply:
        """The whole reply, once the stream has ended."""
        if not (self.done or self.finished):
            raise MalformedReply("streamed a reply that broke off before its end")
        calls = [
            _tool_call({"id": call["id"], "function": call}, f"call_hw_{self._serial}_{n}")
            for n, (_, call) in enumerate(sorted(self._calls.items()), 1)
        ]
        content = "".join(self._content) or None
        if not calls and not (content or "").strip():
            raise MalformedReply("streamed an empty answer with no tool calls")
        usage = _usage(self._usage)
        return Reply(content, calls, "".join(self._reasoning) or None, usage)

    def _add_call(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise MalformedReply("streamed a tool call that is not an object")
        index = raw.get("index")
        if isinstance(index, bool) or not isinstance(index, int):  # some servers send each call whole, unnumbered
            index = len(self._calls)
        call = self._calls.setdefault(index, {"id": None, "name": None, "arguments": ""})
        if isinstance(raw.get("id"), str) and raw["id"]:
            call["id"] = raw["id"]
        function = raw.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str) and function["name"]:
                call["name"] = function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call["arguments"] += arguments
            elif arguments is not None:
                call["arguments"] += json.dumps(arguments, ensure_ascii=False)


def _chunk(data: str) -> dict[str, Any]:
    """One event's chat.completion.chunk; an error event (or anything else) is a MalformedReply."""
    try:
        chunk = guard.read_json(data.encode())
    except guard.NotJSON as error:
        raise MalformedReply(f"streamed {error}") from None
    if not isinstance(chunk, dict):
        raise MalformedReply(f"streamed a JSON {type(chunk).__name__}, not a chat.completion.chunk")
    if "error" in chunk:
        fault = chunk["error"]
        said = fault.get("message") if isinstance(fault, dict) else None
        raise MalformedReply(f"streamed an error: {said[:200] if isinstance(said, str) else 'no message'}")
    return chunk


def _listed(value: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedReply(f"streamed {name} of type {type(value).__name__}")
    return value


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data of each Server-Sent Event in LINES (the lines of a text/event-stream body): its `data:`
    lines joined by newlines, dispatched at a blank line (or at the end); comments (`:`) and the other
    fields (event, id, retry) are skipped. The WHATWG event-stream format, as much of it as chat
    completions use: a few lines that need no library."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)

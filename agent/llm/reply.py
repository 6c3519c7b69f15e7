"""One Chat Completions reply, read from its raw body against the documented shape.

The SDK's own parsing trusts the server: a 200 with an HTML body comes back as a str, `choices: []`
as an IndexError, `arguments` as an object as a dict where a str belongs. The loop reads the body
itself, here, and anything that is not a usable reply is a MalformedReply with a reason it can
report (never the body itself: it could hold anything, the key included).
"""

from __future__ import annotations

import json
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


def _usage(raw: Any) -> Usage:
    """Tokens of one reply, OpenAI's fields or DeepSeek's (prompt_cache_hit_tokens). A count no call can
    have is 0 and named in Usage.invalid (its cost is then unknown, not $0); a count not sent is 0."""
    if not isinstance(raw, dict):
        return Usage()
    invalid: list[str] = []
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

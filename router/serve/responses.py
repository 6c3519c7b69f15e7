"""The Responses API (POST /v1/responses): a request read as the chat endpoint reads one — a question and
the conversation before it — and an Answer written back as a `response` object or its event stream.

The shapes are those of the openai package's types (openai/types/responses: Response, ResponseOutputMessage,
ResponseUsage, and the Response*Event classes), which the stock SDK parses. A follow-up names the response it
follows (`previous_response_id`); the conversation up to each response is kept under that response's id,
like a /v1/ask session, per key (app.Service.responses).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .chat import RULES_MODEL
from .encoding import dumps
from .errors import ApiError, invalid

if TYPE_CHECKING:
    from hybrid_weather.agent.llm.models import Usage

    from ..answer import Answer

#: The prefix of a response's id; the rest is its ledger row's id (x-request-id), as a completion's.
PREFIX = "resp_"
#: What a response id this service makes looks like (openapi.py states it for previous_response_id).
ID_PATTERN = rf"^{PREFIX}[A-Za-z0-9_-]{{3,123}}$"
#: Where the Responses API names what the chat endpoint calls temperature and max_tokens.
SAMPLING = (("temperature", "temperature"), ("max_tokens", "max_output_tokens"))
#: The content parts whose text is a message's: a user's (input_text) and an earlier answer's (output_text).
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
#: Characters per text delta of an answer that is already whole.
_CHUNK_CHARS = 24


def read_input(body: dict[str, Any]) -> list[dict[str, Any]]:
    """`input` as the chat endpoint's messages: a text is one user message; in a list, each message item
    ({"role", "content"}, its `type` "message" or none) is {"role", "content": its text}, and any other item
    (a function call, its output, a reference to an item) is kept as {"role": its type}: not the user's, so
    the request is one the router does not answer (pass-through)."""
    given = body.get("input")
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    if not isinstance(given, list) or not given:
        raise invalid(
            "'input' must be the question as text, or a non-empty list of {role, content} messages", "invalid_input"
        )
    messages = []
    for item in given:
        if not isinstance(item, dict):
            raise invalid("each item of 'input' must be an object: a {role, content} message", "invalid_input")
        kind = item.get("type", "message")
        if kind != "message":
            messages.append({"role": str(kind)})
            continue
        if not isinstance(item.get("role"), str):
            raise invalid("each message of 'input' must have a 'role'", "invalid_input")
        messages.append({"role": item["role"], "content": _text(item.get("content"))})
    return messages


def _text(content: Any) -> str:
    """A message's text: a string, or its text parts (input_text, output_text) joined; none for no content."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str)
        )
    raise invalid("a message's content must be text or a list of input_text parts", "invalid_content")


def wants_upstream(body: dict[str, Any], messages: list[dict[str, Any]]) -> bool:
    """A request the router does not answer itself: it carries its own tools, or its last item is not the
    user's message (a function call's output, an assistant's words to continue)."""
    return bool(body.get("tools")) or messages[-1].get("role") != "user"


def previous_id(body: dict[str, Any]) -> str | None:
    """The response a follow-up follows, or None; 400 for one that is not a response id of this service."""
    given = body.get("previous_response_id")
    if given is None:
        return None
    if not isinstance(given, str) or not re.fullmatch(ID_PATTERN, given):
        raise invalid(
            f"'previous_response_id' must be the id of an earlier response ({PREFIX}…)",
            "invalid_previous_response_id",
            status=400,
        )
    return given


def not_found(response_id: str) -> ApiError:
    """OpenAI's 404 for a previous response that is not here: never made, another key's, or expired."""
    return ApiError(
        404,
        "invalid_request_error",
        f"Previous response with id '{response_id[:128]}' not found: "
        "it is kept 30 minutes after its conversation's last turn, for the key that made it",
        "previous_response_not_found",
    )


def response_id(request_id: str | None) -> str:
    """The response's id: its ledger row's REQUEST_ID after PREFIX, or a random one without a ledger."""
    return PREFIX + (request_id or f"hw{secrets.token_hex(12)}")


def response(answer: Answer, body: dict[str, Any], created_at: float) -> dict[str, Any]:
    """ANSWER as a completed `response` object, for the request BODY."""
    rid = response_id(answer.request_id)
    return _object(
        rid,
        body,
        created_at,
        "completed",
        model_of(answer),
        _message(rid, answer.text, "completed"),
        _usage(answer.llm.usage if answer.llm is not None else None),
    )


def model_of(answer: Answer) -> str:
    return answer.model if answer.route == "llm" and answer.model else RULES_MODEL


def _object(
    rid: str,
    body: dict[str, Any],
    created_at: float,
    status: str,
    model: str | None,
    message: dict[str, Any] | None,
    usage: dict[str, Any] | None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `response` object: what was asked (echoed as OpenAI echoes it), its status, its output and usage."""
    metadata = body.get("metadata")
    return {
        "id": rid,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "completed_at": time.time() if status == "completed" else None,
        "error": error,
        "incomplete_details": None,
        "instructions": body.get("instructions") if isinstance(body.get("instructions"), str) else None,
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": metadata if isinstance(metadata, dict) else {},
        "model": model or RULES_MODEL,
        "output": [message] if message is not None else [],
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store") is not False,
        "temperature": body.get("temperature"),
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "usage": usage,
    }


def _message(rid: str, text: str, status: str) -> dict[str, Any]:
    """The answer as the response's one output item: an assistant message of one output_text part."""
    content = [_part(text)] if status == "completed" else []
    return {"type": "message", "id": _message_id(rid), "status": status, "role": "assistant", "content": content}


def _message_id(rid: str) -> str:
    return "msg_" + rid.removeprefix(PREFIX)


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _usage(usage: Usage | None) -> dict[str, Any]:
    """ResponseUsage: a rule answer's is zeros (no model was asked)."""
    if usage is None:
        prompt = cached = completion = 0
    else:
        prompt, cached, completion = usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


class Events:
    """The Server-Sent Events of one streamed response, numbered in order: response.created and
    response.in_progress, the message and its text part added, the text's deltas, then either everything
    done and response.completed, or an `error` event and response.failed."""

    def __init__(self, request_id: str | None, model: str | None, body: dict[str, Any]) -> None:
        self.id, self.model, self.body = response_id(request_id), model, body
        self.created_at = time.time()
        self._sequence = 0
        self._said: list[str] = []

    def start(self) -> bytes:
        started = _object(self.id, self.body, self.created_at, "in_progress", self.model, None, None)
        message = _message(self.id, "", "in_progress")
        return b"".join(
            (
                self._event("response.created", response=started),
                self._event("response.in_progress", response=started),
                self._event("response.output_item.added", output_index=0, item=message),
                self._event(
                    "response.content_part.added",
                    output_index=0,
                    item_id=message["id"],
                    content_index=0,
                    part=_part(""),
                ),
            )
        )

    def text(self, text: str) -> bytes:
        self._said.append(text)
        return self._event(
            "response.output_text.delta",
            output_index=0,
            item_id=_message_id(self.id),
            content_index=0,
            delta=text,
            logprobs=[],
        )

    def end(self, answer: Answer) -> bytes:
        """The text and message done, and the completed response (ANSWER's usage, its whole text)."""
        text, item_id = "".join(self._said), _message_id(self.id)
        done = response(answer, self.body, self.created_at)
        return b"".join(
            (
                self._event(
                    "response.output_text.done",
                    output_index=0,
                    item_id=item_id,
                    content_index=0,
                    text=text,
                    logprobs=[],
                ),
                self._event(
                    "response.content_part.done", output_index=0, item_id=item_id, content_index=0, part=_part(text)
                ),
                self._event("response.output_item.done", output_index=0, item=_message(self.id, text, "completed")),
                self._event("response.completed", response=done),
            )
        )

    def failed(self, error: ApiError) -> bytes:
        """ERROR once the stream has begun (its status is sent): an `error` event, which the SDK yields as a
        ResponseErrorEvent, then the response failed with it."""
        failed = _object(
            self.id,
            self.body,
            self.created_at,
            "failed",
            self.model,
            None,
            None,
            {"code": error.code, "message": error.message},
        )
        return self._event("error", code=error.code, message=error.message, param=None) + self._event(
            "response.failed", response=failed
        )

    def whole(self, answer: Answer) -> bytes:
        """ANSWER, already whole (a rule answer), as the events of one body."""
        text = answer.text
        return b"".join((self.start(), *self._pieces(text), self.end(answer)))

    def _pieces(self, text: str) -> Iterator[bytes]:
        for at in range(0, len(text), _CHUNK_CHARS):
            yield self.text(text[at : at + _CHUNK_CHARS])

    def _event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self._sequence, **fields}  # from 0, as OpenAI's
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + dumps(payload) + b"\n\n"

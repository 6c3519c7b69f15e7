"""The OpenAI-compatible endpoint: chat.completion objects and their Server-Sent Events, from an Answer.

A request's earlier messages become a Session by replaying them through the router (no I/O), so a
follow-up (那上海呢？) works without any state on the server and on any worker.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from typing import TYPE_CHECKING, Any

from .encoding import dumps
from .errors import ApiError, invalid

if TYPE_CHECKING:
    from hybrid_weather.agent.llm.models import Usage

    from ..answer import Answer
    from ..facade import HybridRouter
    from ..session import Session

#: The `model` a rule or clarify answer names: no model was used.
RULES_MODEL = "hybrid-weather-rules"
#: Characters per streamed content chunk of an answer that is already whole.
_CHUNK_CHARS = 24


def text_of(content: Any) -> str:
    """A message's text: a string, or OpenAI's list of content parts (the text parts, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    if content is None:
        return ""
    raise invalid("a message's content must be a string or a list of content parts", "invalid_content")


def check_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty list of {role, content} objects", "invalid_messages")
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise invalid("each message must be an object with a 'role'", "invalid_messages")
    return messages


def wants_upstream(body: dict[str, Any], messages: list[dict[str, Any]]) -> bool:
    """A request the router does not answer itself: it carries its own tools (or functions), or its last
    message is not the user's (a tool result, an assistant prefix)."""
    return bool(body.get("tools") or body.get("functions")) or messages[-1].get("role") != "user"


def pass_through_off() -> ApiError:
    """The 403 for a request that would go to the model as it came while pass-through is off."""
    return ApiError(
        403,
        "invalid_request_error",
        "this request would go to the model as it came (it carries its "
        "own tools, or its last message is not the user's), and pass-through is off: the operator "
        "turns it on with HYBRID_WEATHER_PASS_THROUGH=1",
        "pass_through_off",
    )


def pass_through_reason(body: dict[str, Any]) -> str:
    """The ledger's reason for a request sent to the model as it came."""
    if body.get("tools") or body.get("functions"):
        return "pass-through: the request's own tools"
    return "pass-through: the last message is not the user's"


def pass_through_tokens(body: dict[str, Any]) -> int:
    """The most tokens a pass-through request BODY can spend: its JSON's bytes as prompt tokens (a token is
    at least one byte of text, and the JSON's keys and quotes outweigh each message's framing), and the
    completion it allows — max_tokens, max_completion_tokens or (the Responses API's) max_output_tokens, else
    MAX_REPLY_TOKENS — for each of its n choices."""
    from hybrid_weather.agent.llm.models import MAX_REPLY_TOKENS, MAX_TOKENS

    asked = [
        value
        for name in ("max_tokens", "max_completion_tokens", "max_output_tokens")
        if type(value := body.get(name)) is int and value > 0
    ]
    n = body.get("n")
    choices = n if type(n) is int and n > 0 else 1
    return min(MAX_TOKENS, len(dumps(body)) + min(asked, default=MAX_REPLY_TOKENS) * choices)


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last user message (the question the ledger keeps), or ""."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return text_of(content) if isinstance(content, list) else ""
    return ""


def usage_of(reply: dict[str, Any]) -> Usage | None:
    """The tokens an OpenAI-style REPLY reports — a chat.completion's, or a response's (input_tokens,
    output_tokens) —, or None when it reports none usable."""
    from hybrid_weather.agent.llm.models import Usage

    usage = reply.get("usage")
    if not isinstance(usage, dict):
        return None
    chat = "prompt_tokens" in usage
    details = usage.get("prompt_tokens_details" if chat else "input_tokens_details")
    counts = [
        usage.get("prompt_tokens" if chat else "input_tokens"),
        details.get("cached_tokens", 0) if isinstance(details, dict) else 0,
        usage.get("completion_tokens" if chat else "output_tokens"),
    ]
    tokens = [n for n in counts if type(n) is int and 0 <= n < 10**9]
    if len(tokens) != 3:  # a count missing, not a whole number, or beyond any real call: unknown, not $0
        return None
    prompt, cached, completion = tokens
    return Usage(prompt, min(cached, prompt), completion)


def session_from(
    router: HybridRouter, messages: list[dict[str, Any]], today: dt.date, session: Session | None = None
) -> Session | None:
    """The conversation before the last message, as a Session (SESSION, continued, when given): each user
    turn routed again (no I/O) and paired with the assistant's reply that followed it. None when there is
    none (a single question) and no SESSION was given."""
    from ..session import Session

    if not any(message["role"] in ("user", "assistant") for message in messages[:-1]):
        return session
    session = session or Session()
    question: str | None = None
    for message in messages[:-1]:
        role = message["role"]
        if role == "user":
            question = text_of(message.get("content"))
        elif role == "assistant" and question is not None:
            session.remember(
                question, text_of(message.get("content")), router.route(question, today=today, session=session)
            )
            question = None
    return session


def requested_model(body: dict[str, Any], router: HybridRouter) -> str | None:
    """The model BODY names, to answer with when the question needs one; None (the configured model) when it
    names none or the rules' own name. Any other name the router cannot answer with is OpenAI's 404
    model_not_found: a client that asked for one model is never answered by another without knowing."""
    name = body.get("model")
    if name is None or name == RULES_MODEL:
        return None
    if not isinstance(name, str) or not name.strip():
        raise invalid("'model' must be the name of a model, e.g. " + router.parts.model, "invalid_model")
    if not router.known_model(name):
        raise model_not_found(name, router)
    return name


def model_not_found(name: str, router: HybridRouter) -> ApiError:
    """OpenAI's 404 for a model NAME this service does not answer with (a request's `model`, GET /v1/models/…)."""
    return ApiError(
        404,
        "invalid_request_error",
        f"The model `{name[:100]}` does not exist here: this service "
        f"answers with {router.parts.model} or another model of its price table (models.json)",
        "model_not_found",
    )


def model_list(router: HybridRouter) -> dict[str, Any]:
    """GET /v1/models: the models a request may name, in OpenAI's list shape — the configured one first, then
    the price table's (models.json, the user's included; none while the user's table is unusable, as the
    LLM route refuses it), then the rules' own name."""
    return {"object": "list", "data": [model_object(name, router) for name in _model_names(router)]}


def model_object(name: str, router: HybridRouter) -> dict[str, Any]:
    """One model as OpenAI describes it: `created` is when its facts were checked (models.json's as_of), 0 when
    unknown; every model here is offered by this service, so it is their `owned_by`."""
    facts = None if name == RULES_MODEL or router.models.problem else router.models.get(name)
    as_of = facts.as_of if facts is not None else None
    try:
        day = dt.date.fromisoformat(as_of) if isinstance(as_of, str) else None
    except ValueError:
        day = None
    created = int(dt.datetime.combine(day, dt.time(), dt.timezone.utc).timestamp()) if day else 0
    return {"id": name, "object": "model", "created": created, "owned_by": "hybrid-weather"}


def _model_names(router: HybridRouter) -> list[str]:
    table = [] if router.models.problem else [facts.name for facts in router.models.facts()]
    return list(dict.fromkeys([router.parts.model, *table, RULES_MODEL]))


def model_named(name: str, router: HybridRouter) -> dict[str, Any]:
    """GET /v1/models/NAME: the model, or model_not_found."""
    if name != RULES_MODEL and not router.known_model(name):
        raise model_not_found(name, router)
    return model_object(name, router)


#: Where a chat request names the model's sampling settings: temperature, and max_tokens (or its newer name).
SAMPLING = (("temperature", "temperature"), ("max_tokens", "max_tokens"), ("max_tokens", "max_completion_tokens"))


def requested_sampling(body: dict[str, Any], names: tuple[tuple[str, str], ...] = SAMPLING) -> dict[str, Any] | None:
    """The temperature and max_tokens BODY sets under NAMES (setting, the request's name for it), passed on
    to the model within bounds; 422 for a value outside them, rather than a silent clamp the client cannot
    see."""
    from hybrid_weather.agent.llm.models import sampling_problem

    sampling = {}
    for field, name in names:
        value = body.get(name)
        if value is None:
            continue
        if problem := sampling_problem(field, value):
            raise invalid(problem.replace("max_tokens", name, 1), f"invalid_{name}")
        sampling[field] = int(value) if field == "max_tokens" else value  # 300.0 is JSON's 300
    return sampling or None


def completion_id(request_id: str | None) -> str:
    """The completion's id: its ledger row's REQUEST_ID (POST /v1/feedback takes it as it is), or a random one."""
    return f"chatcmpl-{request_id}" if request_id else f"chatcmpl-hw-{secrets.token_hex(12)}"


def completion(answer: Answer) -> dict[str, Any]:
    """ANSWER as a chat.completion object: the rules' answers name no model and use no tokens."""
    return {
        "id": completion_id(answer.request_id),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _model(answer),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer.text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(answer),
    }


class Chunks:
    """The Server-Sent Events of one streamed completion: chat.completion.chunk objects that share an id,
    a time and a model, then `data: [DONE]`."""

    DONE = b"data: [DONE]\n\n"

    def __init__(self, request_id: str | None, model: str | None, include_usage: bool = False) -> None:
        self.base = {
            "id": completion_id(request_id),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model or RULES_MODEL,
        }
        self.include_usage = include_usage

    def start(self) -> bytes:
        return self.delta({"role": "assistant", "content": ""})

    def text(self, text: str) -> bytes:
        return self.delta({"content": text})

    def delta(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _event({**self.base, "choices": [choice]})

    def end(self, answer: Answer) -> bytes:
        """The finish, ANSWER's usage when asked for, and [DONE]."""
        usage = _event({**self.base, "choices": [], "usage": _usage(answer)}) if self.include_usage else b""
        return self.delta({}, "stop") + usage + self.DONE

    @staticmethod
    def failed(error: ApiError) -> bytes:
        """ERROR once the stream has begun (its status is sent): an event whose `error` the openai SDK raises."""
        return _event(error.body())


def _event(payload: dict[str, Any]) -> bytes:
    """PAYLOAD as one Server-Sent Event."""
    return b"data: " + dumps(payload) + b"\n\n"


def chunks(answer: Answer, include_usage: bool) -> bytes:
    """ANSWER, already whole, as one body of chat.completion.chunk events."""
    events = Chunks(answer.request_id, _model(answer), include_usage)
    text = answer.text
    pieces = [events.text(text[at : at + _CHUNK_CHARS]) for at in range(0, len(text), _CHUNK_CHARS)]
    return b"".join((events.start(), *pieces, events.end(answer)))


def _model(answer: Answer) -> str:
    return answer.model if answer.route == "llm" and answer.model else RULES_MODEL


def _usage(answer: Answer) -> dict[str, Any]:
    if answer.llm is None:
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    usage = answer.llm.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }

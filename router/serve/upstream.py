"""Pass-through: a chat request the router does not answer (it carries its own tools) goes to the
configured OpenAI-compatible endpoint untouched, and its answer comes back untouched — except that the
service's own API key, should the endpoint echo it, is scrubbed from every byte."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx2 as httpx
from starlette.responses import Response, StreamingResponse

from .errors import ApiError

if TYPE_CHECKING:
    from ..settings import Settings
    from .metrics import Metrics

#: Bytes of a non-streamed upstream answer at the most.
MAX_REPLY_BYTES = 4 * 1024 * 1024
_DEFAULT_BASE = "https://api.openai.com/v1"
_REDACTED = b"[redacted]"


class _Scrubber:
    """Removes KEY from a byte stream, even when it straddles two pieces."""

    def __init__(self, key: str) -> None:
        self.key = key.encode()
        self._held = b""

    def feed(self, piece: bytes) -> bytes:
        data = (self._held + piece).replace(self.key, _REDACTED)
        keep = len(self.key) - 1
        self._held, out = (data[-keep:], data[:-keep]) if keep and len(data) > keep else (data, b"")
        return out

    def end(self) -> bytes:
        held, self._held = self._held, b""
        return held.replace(self.key, _REDACTED)


async def forward(
    client: httpx.AsyncClient,
    settings: Settings,
    body: dict[str, Any],
    metrics: Metrics,
    path: str = "chat/completions",
) -> tuple[Response, dict[str, Any] | None]:
    """The endpoint's answer to BODY, sent to its PATH (chat/completions, or responses for a request of the
    Responses API), and the JSON object it was when it was one (not a stream): the ledger's tokens and model
    come from there."""
    endpoint = "chat" if path == "chat/completions" else path
    key = settings.openai_api_key
    if not key:
        raise ApiError(
            503,
            "service_unavailable",
            "this request goes to the model as it came (its own tools, or a "
            "last message that is not the user's), but none is configured: set OPENAI_API_KEY and "
            "OPENAI_BASE_URL",
            "llm_unavailable",
        )
    url = f"{(settings.openai_base_url or _DEFAULT_BASE).rstrip('/')}/{path}"
    request = client.build_request("POST", url, json=body, headers={"authorization": f"Bearer {key}"})
    try:
        upstream = await client.send(request, stream=True)
    except httpx.TimeoutException:
        metrics.requests.labels(endpoint, "pass-through", "timeout").inc()
        raise ApiError(504, "timeout", "the model's endpoint did not answer in time", "llm_timeout") from None
    except httpx.HTTPError as error:
        metrics.requests.labels(endpoint, "pass-through", "unreachable").inc()
        raise ApiError(
            503,
            "service_unavailable",
            f"the model's endpoint cannot be reached ({type(error).__name__})",
            "llm_unavailable",
        ) from None
    if upstream.status_code >= 500:
        await upstream.aclose()
        metrics.requests.labels(endpoint, "pass-through", f"http_{upstream.status_code}").inc()
        raise ApiError(
            503, "service_unavailable", f"the model's endpoint failed (HTTP {upstream.status_code})", "llm_unavailable"
        )
    metrics.requests.labels(endpoint, "pass-through", "ok" if upstream.status_code < 400 else "rejected").inc()
    headers = {"x-hybrid-weather-route": "pass-through"}
    media_type = upstream.headers.get("content-type", "application/json")
    scrubber = _Scrubber(key)
    if body.get("stream"):

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for piece in upstream.aiter_bytes():
                    yield scrubber.feed(piece)
                yield scrubber.end()
            finally:
                await upstream.aclose()

        return StreamingResponse(
            relay(), status_code=upstream.status_code, media_type=media_type, headers=headers
        ), None
    content = bytearray()
    try:
        async for piece in upstream.aiter_bytes():
            content += piece
            if len(content) > MAX_REPLY_BYTES:
                raise ApiError(503, "service_unavailable", "the model's answer is too large", "llm_unavailable")
    except httpx.HTTPError:
        raise ApiError(503, "service_unavailable", "the model's answer was cut short", "llm_unavailable") from None
    finally:
        await upstream.aclose()
    try:
        reply = json.loads(content)
    except (ValueError, RecursionError):
        reply = None
    return Response(
        scrubber.feed(bytes(content)) + scrubber.end(),
        status_code=upstream.status_code,
        media_type=media_type,
        headers=headers,
    ), reply if isinstance(reply, dict) else None

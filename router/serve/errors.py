"""Every error the service answers with: an OpenAI-style body, the right status, never a stack trace."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hybrid_weather.agent.errors import (
    BudgetExhausted,
    ConfigurationError,
    HybridWeatherError,
    LLMUnavailable,
    UpstreamTimeout,
    WeatherUnavailable,
)
from hybrid_weather.rules.privacy import mask_personal_data

from .encoding import JSONResponse


class ApiError(Exception):
    """An error to answer with STATUS and an OpenAI-style body."""

    def __init__(
        self, status: int, kind: str, message: str, code: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.code = status, kind, message, code
        self.headers = headers or {}
        self.extra: dict[str, Any] = {}  #: keys beside "error" in the body (/v1/ask's partial answer)

    def body(self) -> dict[str, Any]:
        """The OpenAI-style error object: what a response, or a stream's error event, carries."""
        # The one masker, as for the ledger and the spans: a message may quote what the request sent.
        message = mask_personal_data(self.message)
        return {"error": {"type": self.kind, "message": message, "code": self.code}, **self.extra}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def invalid(message: str, code: str = "invalid_request", status: int = 422) -> ApiError:
    """A request the service understood but cannot take (422), or could not read (400)."""
    return ApiError(status, "invalid_request_error", message, code)


#: What names a place on the network in a message: a URL, or an IP address (with its port).
_ADDRESS = re.compile(
    r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>()]+|\[?\b(?:\d{1,3}\.){3}\d{1,3}\b\]?(?::\d+)?|\[[0-9a-f:]+\](?::\d+)?",
    re.IGNORECASE,
)
#: What a client reads in place of an address.
HIDDEN = "[the configured address]"


def hide_addresses(message: str, hosts: Iterable[str] = ()) -> str:
    """MESSAGE without the operator's upstream addresses: URLs, IP addresses and the host names HOSTS (the
    configured endpoints'). The library's messages name them so an operator can fix a setting; a client
    of the service is not told where its model, weather or database live."""
    message = _ADDRESS.sub(HIDDEN, message)
    for host in hosts:
        if host:
            message = re.sub(rf"(?<![\w.-]){re.escape(host)}(?::\d+)?(?![\w-])", HIDDEN, message, flags=re.IGNORECASE)
    return message


def from_library(error: HybridWeatherError, hosts: Iterable[str] = ()) -> ApiError:
    """The library's typed errors as HTTP: what failed upstream is the service's 503 (or 504 for time),
    with retry-after where the library knows when to retry; no upstream address (HOSTS) in the message."""
    message = hide_addresses(str(error), hosts)
    if isinstance(error, BudgetExhausted):
        headers = {"retry-after": str(max(1, round(error.retry_after_s)))}
        return ApiError(503, "upstream_budget_exhausted", message, "upstream_budget_exhausted", headers)
    if isinstance(error, UpstreamTimeout):
        return ApiError(504, "timeout", message, "weather_timeout")
    if isinstance(error, WeatherUnavailable):
        return ApiError(503, "service_unavailable", message, "weather_unavailable")
    if isinstance(error, LLMUnavailable):
        timed_out = "deadline" in message or "timed out" in message
        return ApiError(
            504 if timed_out else 503,
            "timeout" if timed_out else "service_unavailable",
            message,
            "llm_timeout" if timed_out else "llm_unavailable",
        )
    if isinstance(error, ConfigurationError):
        return ApiError(503, "service_unavailable", message, "configuration_error")
    return ApiError(503, "service_unavailable", message, type(error).__name__)

"""JSON in and out of the service with orjson: encoding an answer with the standard library is a sizeable
share of a rule answer's time over HTTP; orjson's is a small one."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class JSONResponse(Response):
    """A JSON body, UTF-8 as it is (Chinese unescaped), like Starlette's but several times faster."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def dumps(value: Any) -> bytes:
    """VALUE as compact UTF-8 JSON (Chinese unescaped)."""
    return orjson.dumps(value)


def loads(raw: bytes) -> Any:
    """RAW parsed; ValueError (orjson.JSONDecodeError is one) when it is not JSON."""
    return orjson.loads(raw)

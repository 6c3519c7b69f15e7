"""How the second-level caches (the CLI's file, the fleet's Redis) keep a fetch, and read one back.

A copy is JSON that says what it is about: `{"about": <the cache key it was stored under>, "value":
<to_jsonable of the fetch>}`. The key names the kind, the provider and where its data came from, the
place and the past-days window, so a copy that turns up under another key — another city's, another
server's — is known for what it is. decode() gives back only what parses (at a sane depth), is about
the key it was found under and rebuilds the shape its kind names; WeatherService then holds it to the
checks an upstream reply passes (shapes.checked) before it serves it.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import MalformedResponse
from ..guard import NotJSON, read_json
from .shapes import SHAPE_OF_KIND, from_jsonable, to_jsonable


def key_text(key: tuple[Any, ...]) -> str:
    """KEY as the caches name it (a Redis key's tail, the disk cache's primary key)."""
    return json.dumps(key, ensure_ascii=False)


def encode(key: tuple[Any, ...], value: Any) -> str:
    return json.dumps({"about": key, "value": to_jsonable(value)}, ensure_ascii=False)


def decode(key: tuple[Any, ...], body: bytes, label: str) -> Any:
    """The fetch BODY holds, if BODY is a copy of KEY's; else MalformedResponse (LABEL says which cache)."""
    try:
        document = read_json(body)
    except NotJSON as error:
        raise MalformedResponse(f"{label} holds {error}") from None
    if not isinstance(document, dict) or "value" not in document:
        raise MalformedResponse(f"{label} holds a copy without its envelope")
    if document.get("about") != list(key):
        raise MalformedResponse(f"{label} holds another key's copy under this one")
    try:
        return from_jsonable(SHAPE_OF_KIND[key[0]], document["value"])
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise MalformedResponse(f"{label} holds a copy that is not a {key[0]} ({type(error).__name__})") from None

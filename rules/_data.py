"""Read the JSON tables shipped in rules/data/, once per process, on first use."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any


@functools.cache
def load_table(name: str) -> Any:
    """Return the parsed contents of rules/data/NAME.json (cached: the tables never change at run time)."""
    text = resources.files("hybrid_weather.rules").joinpath("data").joinpath(f"{name}.json").read_text("utf-8")
    return json.loads(text)

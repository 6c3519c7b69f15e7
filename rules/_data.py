"""Read the JSON tables shipped in rules/data/, once per process, on first use."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

# Beside this module in every install pip makes (the package is never imported from a zip file), so the
# tables are read without importlib.resources, a noticeable part of a cold CLI run's imports.
_DATA = Path(__file__).parent / "data"


@functools.lru_cache(maxsize=32)  # one per file of rules/data/: a bound the folder sets
def load_table(name: str) -> Any:
    """Return the parsed contents of rules/data/NAME.json (cached: the tables never change at run time)."""
    return json.loads((_DATA / f"{name}.json").read_text("utf-8"))

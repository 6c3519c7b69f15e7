"""Model facts in one table (agent/llm/data/models.json): prices, retirement dates, required request options."""

from __future__ import annotations

import functools
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

logger = logging.getLogger("hybrid_weather")


class ModelFacts(NamedTuple):
    name: str
    input: float | None  #: USD per 1M prompt tokens not read from cache
    cached_input: float | None  #: USD per 1M cached prompt tokens (None: the provider has no cache price)
    output: float | None  #: USD per 1M completion tokens
    as_of: str | None = None
    source: str | None = None
    retires_on: str | None = None
    request_options: dict[str, Any] | None = None
    temperature: float | None = None  #: sent with every call to this model (None: the endpoint's default)
    max_tokens: int | None = None  #: a cap on each reply's tokens (None: the endpoint's default)
    base_url: str | None = None  #: this model's own OpenAI-compatible endpoint (None: OPENAI_BASE_URL's)
    api_key_env: str | None = None  #: the variable holding this model's key (None: OPENAI_API_KEY)

    def sampling(self) -> dict[str, Any]:
        """The settings this model's calls carry: temperature and max_tokens where the table sets them."""
        return {k: v for k, v in (("temperature", self.temperature), ("max_tokens", self.max_tokens)) if v is not None}


#: What temperature and max_tokens may be, in the table and in a request on the drop-in endpoint (OpenAI's
#: own bounds for temperature; a reply of more than MAX_REPLY_TOKENS is no weather answer).
TEMPERATURE_RANGE = (0.0, 2.0)
MAX_REPLY_TOKENS = 32_768


def sampling_problem(field: str, value: Any) -> str | None:
    """What is wrong with VALUE as FIELD (temperature or max_tokens), or None."""
    if field == "temperature":
        low, high = TEMPERATURE_RANGE
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            return f"temperature must be a number from {low:g} to {high:g}"
    elif not _whole(value) or not 1 <= value <= MAX_REPLY_TOKENS:
        return f"max_tokens must be a whole number from 1 to {MAX_REPLY_TOKENS:,}"
    return None


def _whole(value: Any) -> bool:
    """Whether VALUE is a whole number as JSON means it: 300 or 300.0 (JSON Schema's integer), not true."""
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


#: Token counts above this are not counts but faults (a request is capped at thousands).
MAX_TOKENS = 10_000_000
#: Usage's counts, as the endpoint and the ledger name them.
TOKEN_FIELDS = ("prompt_tokens", "cached_tokens", "completion_tokens")


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one or more calls. `cached_tokens` are part of `prompt_tokens` (OpenAI's convention).

    `invalid` names the counts an endpoint sent that no call can have (negative, not a whole number, past
    MAX_TOKENS, more cached than prompt tokens): they are 0 here, so sums and budgets go on, but nothing
    built on them is a fact — the cost is unknown (None, never $0) and the ledger stores them as NULL,
    flagged in its `invalid` column."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    invalid: tuple[str, ...] = ()

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.cached_tokens + other.cached_tokens,
            self.completion_tokens + other.completion_tokens,
            tuple(dict.fromkeys(self.invalid + other.invalid)),
        )


class ModelTable:
    """The shipped table, with the user's $HYBRID_WEATHER_HOME/models.json laid over it."""

    def __init__(self, override: Path | None = None) -> None:
        data = _shipped()
        models = {name: dict(facts) for name, facts in data["models"].items()}
        self.default_model: str = data["default_model"]
        #: Why the user's table was set aside, or None. Rule answers need no prices and go on without it;
        #: the LLM route refuses to run on prices it was not meant to have (ConfigurationError, exit 2).
        self.problem: str | None = None
        user = _override(override) if override is not None else None
        if isinstance(user, str):
            self.problem = f"{override} is not a usable model table: {user}; fix it or move it away"
            logger.warning("%s", self.problem)
        elif user is not None:
            for name, facts in user.get("models", {}).items():
                models[name] = {**models.get(name, {}), **facts}
            self.default_model = user.get("default_model", self.default_model)
        self._models = {
            name: ModelFacts(
                name,
                f.get("input"),
                f.get("cached_input"),
                f.get("output"),
                f.get("as_of"),
                f.get("source"),
                f.get("retires_on"),
                f.get("request_options"),
                f.get("temperature"),
                f.get("max_tokens"),
                f.get("base_url"),
                f.get("api_key_env"),
            )
            for name, f in models.items()
        }

    def get(self, model: str) -> ModelFacts | None:
        return self._models.get(model) or self._models.get(model.rsplit("/", 1)[-1])

    def facts(self) -> list[ModelFacts]:
        """Every model of the table, shipped and the user's, in the table's order."""
        return list(self._models.values())

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for USAGE on MODEL; None (never 0) when the model's price or the usage is unknown."""
        if usage.invalid:
            return None  # counts that are faults price nothing: unknown, not $0
        facts = self.get(model)
        if facts is None or facts.input is None or facts.output is None:
            logger.warning("no price for model %r: its cost is recorded as unknown", model)
            return None
        cached_price = facts.cached_input if facts.cached_input is not None else facts.input
        uncached = max(0, usage.prompt_tokens - usage.cached_tokens)
        return (
            uncached * facts.input + usage.cached_tokens * cached_price + usage.completion_tokens * facts.output
        ) / 1e6

    def dearest(self, models: list[str]) -> float:
        """USD a token at the dearest price (input, cached or output) of any of MODELS, a model without a
        price at the dearest of the whole table: what bounds a request's cost before its usage is known
        (serve's budgets reserve it), so an unpriced model never spends a budget for nothing."""

        def most(facts: ModelFacts | None) -> float | None:
            prices = [p for p in (facts.input, facts.cached_input, facts.output) if p is not None] if facts else []
            return max(prices) if prices else None

        table = max((price for facts in self._models.values() if (price := most(facts)) is not None), default=0.0)
        return max((most(self.get(model)) or table for model in models), default=table) / 1e6


@functools.cache
def _shipped() -> dict[str, Any]:
    # Beside this module in every install pip makes; importlib.resources would add to a cold CLI run's imports.
    table: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "models.json").read_text("utf-8"))
    return table


def _override(path: Path) -> dict[str, Any] | str | None:
    """The user's table at PATH, None when there is none, or what is wrong with it (a str)."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        return f"cannot read it ({type(error).__name__})"
    try:
        user = json.loads(text)
    except ValueError as error:
        return f"not JSON ({error})"
    if not isinstance(user, dict) or not isinstance(user.get("models", {}), dict):
        return 'expected {"models": {"<name>": {"input": …, "output": …}}}'
    if not isinstance(user.get("default_model", ""), str):
        return "default_model must be a model name"
    for name, facts in user.get("models", {}).items():
        if problem := _facts_problem(name, facts):
            return problem
    return user


def _facts_problem(name: str, facts: Any) -> str | None:
    """What is wrong with model NAME's entry FACTS in the user's table, or None."""
    if not isinstance(facts, dict):
        return f"model {name!r} must be an object of prices"
    for price in ("input", "cached_input", "output"):
        value = facts.get(price)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            return f"{name}.{price} must be a number of USD per 1M tokens, 0 or more (or null)"
    base_url, key_env = facts.get("base_url"), facts.get("api_key_env")
    if base_url is not None and not (isinstance(base_url, str) and re.match(r"https?://[^/\s]+", base_url)):
        return f"{name}.base_url must be an http(s):// URL"
    if key_env is not None and not (isinstance(key_env, str) and re.fullmatch(r"[A-Z][A-Z0-9_]*_API_KEY", key_env)):
        return f"{name}.api_key_env must name a variable ending in _API_KEY (the key itself is never in the file)"
    for field in ("temperature", "max_tokens"):
        if facts.get(field) is not None and (problem := sampling_problem(field, facts[field])):
            return f"{name}.{problem}"
    return None

"""Tools the LLM loop may call: plain Python functions, described by their type hints and docstring.

    from hybrid_weather.router import HybridRouter, tool

    @tool
    def exchange_rate(base: str, quote: str = "CNY") -> dict:
        \"\"\"The latest exchange rate of one currency in another.

        Args:
            base: ISO 4217 code of the currency to convert from, e.g. USD
            quote: ISO 4217 code of the currency to convert to
        \"\"\"
        ...

    router = HybridRouter(tools=[exchange_rate])

The JSON schema the model sees comes from the signature: str, int, float, bool, Literal[...] (an enum),
list[...] and dict; a parameter without a default is required; `X | None = None` is optional. The
description is the docstring's first paragraph, each parameter's the line its `Args:` section gives it,
or else the text of an `Annotated[type, "description"]` hint (one description for the parameters of
several tools).
A parameter annotated ToolContext is not shown to the model: it receives the question's `today` and the
request's deadline. Sync and async functions both work; each call ends by the request's deadline (a
sync function that overruns is left behind in a daemon thread, its result ignored). What the function
returns goes back to the model as JSON; an exception goes back as an error the model can act on —
its message is sent to the model, so keep secrets out of it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import json
import re
import threading
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

#: Characters of a tool's result the model is sent at the most: a tool that returns a whole web page would
#: otherwise spend the request's token budget in one call.
MAX_RESULT_CHARS = 16_000
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI accepts as a function name
_ATTRIBUTE = "__hybrid_weather_tool__"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may ask for beside its arguments: the question's own today and the request's deadline."""

    today: dt.date
    deadline: float  #: time.monotonic() by which the call must end

    @property
    def seconds_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class ToolError(Exception):
    """Raised by a tool for a failure the model should read as it is (找不到这个地点); PLACE, when the call
    was about a known place, is recorded in the ledger."""

    def __init__(self, message: str, place: str | None = None) -> None:
        super().__init__(message)
        self.place = place


@dataclass(frozen=True, slots=True)
class Tool:
    """One registered tool: its schema for the model and the function that runs it."""

    name: str
    description: str
    parameters: dict[str, Any]  #: a JSON schema object
    function: Callable[..., Any]
    context: str | None = None  #: the parameter that receives a ToolContext, if any

    @property
    def schema(self) -> dict[str, Any]:
        """The entry of the `tools` list sent to the model."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}  # fmt: skip

    def check(self, args: Any) -> str | None:
        """What is wrong with ARGS (the model's parsed arguments), said so the model can fix it; None if fine."""
        if not isinstance(args, dict):
            return "参数必须是一个 JSON 对象"
        properties = self.parameters["properties"]
        unknown = set(args) - set(properties)
        if unknown:
            return f"不认识的参数：{', '.join(sorted(unknown))}；可用参数：{', '.join(properties)}"
        for required in self.parameters["required"]:
            if args.get(required) is None:
                return f"缺少必填参数 {required}"
        for key, value in args.items():
            if value is not None and not _fits(value, properties[key]):
                got = json.dumps(value, ensure_ascii=False)[:80]
                return f"参数 {key} 应为 {_describe(properties[key])}，收到的是 {got}"
        return None

    def call(self, args: dict[str, Any], context: ToolContext) -> Any:
        """Run the function with ARGS (checked), by CONTEXT.deadline; raises TimeoutError past it."""
        kwargs = {key: value for key, value in args.items() if value is not None}
        if self.context:
            kwargs[self.context] = context
        outcome: list[Any] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                if inspect.iscoroutinefunction(self.function):
                    import asyncio  # an import cost only async tools need

                    try:
                        outcome.append(asyncio.run(asyncio.wait_for(self.function(**kwargs), context.seconds_left)))
                    except asyncio.TimeoutError:  # not the built-in one before Python 3.11
                        raise TimeoutError from None
                else:
                    outcome.append(self.function(**kwargs))
            except BaseException as error:  # handed to the caller's thread as it is
                failure.append(error)

        # A thread of its own, daemon: a sync function cannot be stopped, and one that overruns must hold
        # neither the answer nor the process's exit.
        worker = threading.Thread(target=run, name=f"hybrid-weather-tool-{self.name}", daemon=True)
        worker.start()
        worker.join(context.seconds_left)
        if worker.is_alive() or (failure and isinstance(failure[0], TimeoutError)):
            raise TimeoutError(f"the tool {self.name} did not finish by the request's deadline")
        if failure:
            raise failure[0]
        return outcome[0]


def tool(function: F | None = None, *, name: str | None = None, description: str | None = None) -> Any:
    """Mark FUNCTION as a tool the LLM may call (`@tool` or `@tool(name=..., description=...)`). The
    function is returned unchanged; HybridRouter(tools=[...]) reads the schema built here. Raises TypeError
    when a parameter's type cannot be carried in JSON or the tool has no description."""

    def mark(fn: F) -> F:
        setattr(fn, _ATTRIBUTE, build_tool(fn, name=name, description=description))
        return fn

    return mark(function) if function is not None else mark


def tool_of(function: Callable[..., Any] | Tool) -> Tool:
    """The Tool of a function marked with @tool (or a Tool itself); TypeError for anything else."""
    if isinstance(function, Tool):
        return function
    found = getattr(function, _ATTRIBUTE, None)
    if not isinstance(found, Tool):
        raise TypeError(f"{function!r} is not a tool: mark it with @hybrid_weather.router.tool")
    return found


def build_tool(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool:
    """The Tool for FN: its schema from the type hints and the docstring."""
    tool_name = name or fn.__name__
    if not _NAME.fullmatch(tool_name):
        raise TypeError(f"tool name {tool_name!r}: use 1 to 64 letters, digits, _ or -")
    summary, documented = _docstring(inspect.getdoc(fn) or "")
    text = description or summary
    if not text:
        raise TypeError(f"tool {tool_name}: give it a docstring (or description=): the model reads it to choose")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as error:  # a hint naming what the function's module cannot see
        raise TypeError(f"tool {tool_name}: its type hints cannot be read ({error})") from None
    properties: dict[str, Any] = {}
    required: list[str] = []
    context = None
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name}: *{parameter.name} cannot be described to the model")
        hint, noted = _annotated(hints.get(parameter.name))
        if hint is ToolContext:
            context = parameter.name
            continue
        if hint is None:
            raise TypeError(f"tool {tool_name}: parameter {parameter.name} needs a type hint")
        schema, optional = _json_schema(hint, f"tool {tool_name}: parameter {parameter.name}")
        if parameter.name in documented or noted:
            schema["description"] = documented.get(parameter.name) or noted
        if parameter.default is parameter.empty:
            if optional:
                raise TypeError(f"tool {tool_name}: parameter {parameter.name} may be None, so give it a default")
            required.append(parameter.name)
        elif parameter.default is not None:
            schema["default"] = parameter.default
        properties[parameter.name] = schema
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return Tool(tool_name, text, parameters, fn, context)


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _annotated(hint: Any) -> tuple[Any, str | None]:
    """(the type, its description) of Annotated[type, "description"]; (HINT, None) for any other hint."""
    if get_origin(hint) is not Annotated:
        return hint, None
    return hint.__origin__, next((m for m in hint.__metadata__ if isinstance(m, str)), None)


def _json_schema(hint: Any, where: str) -> tuple[dict[str, Any], bool]:
    """The JSON schema of a type hint, and whether it admits None."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        if len(kept) != 1:
            raise TypeError(f"{where}: a union of {hint} cannot be described; use one type (or X | None)")
        return _json_schema(kept[0], where)[0], True
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}, False
    if origin is Literal:
        kinds = {_SCALARS.get(type(a)) for a in args}
        if None in kinds or len(kinds) != 1:
            raise TypeError(f"{where}: Literal values must be all strings, all integers or all numbers")
        return {"type": kinds.pop(), "enum": list(args)}, False
    if origin in (list, tuple) or hint in (list, tuple):
        items = args[0] if args and origin is list else (args[0] if len(args) == 2 and args[1] is Ellipsis else None)
        return ({"type": "array", "items": _json_schema(items, where)[0]} if items is not None else
                {"type": "array"}), False  # fmt: skip
    if origin is dict or hint is dict:
        return {"type": "object"}, False
    raise TypeError(f"{where} has the type {hint!r}, which JSON cannot carry: use str, int, float, bool, "
                    "Literal[...], list[...] or dict")  # fmt: skip


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        return False
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "array":
        items = schema.get("items")
        return isinstance(value, list) and (items is None or all(_fits(v, items) for v in value))
    if kind == "object":
        return isinstance(value, dict)
    return True


def _describe(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "其中之一：" + "、".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    names = {"string": "字符串", "integer": "整数", "number": "数字", "boolean": "true 或 false", "array": "数组",
             "object": "JSON 对象"}  # fmt: skip
    return names.get(schema.get("type", ""), "合适的值")


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(the first paragraph as one line, {parameter: description} from a Google-style Args: section)."""
    summary = " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines()).strip()
    described: dict[str, str] = {}
    current: str | None = None
    indent: int | None = None  # of the section's parameter lines; deeper lines continue a description
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if not in_args:
            continue
        if stripped.endswith(":") and not line.startswith(" "):  # the next section (Returns:)
            break
        found = re.match(r"(\s+)(\w+)(?:\s*\([^)]*\))?:\s*(.*)", line)
        if found and (indent is None or len(found.group(1)) <= indent):
            indent, current = len(found.group(1)), found.group(2)
            described[current] = found.group(3).strip()
        elif current and stripped:
            described[current] = f"{described[current]} {stripped}".strip()
    return summary, described


def to_content(result: Any) -> str:
    """A tool's return value as the JSON text the model reads; TypeError when it is not JSON."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = dataclasses.asdict(result)
    if isinstance(result, str):
        result = {"result": result}
    try:
        return json.dumps(result, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"the tool returned what JSON cannot carry ({error})") from None

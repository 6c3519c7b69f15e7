"""OpenTelemetry traces of requests, when the `traces` extra is installed and asked for; nothing otherwise.

A request's span covers it from arrival to answer, with its routing, each model call and each tool call as
children; the attributes say the route, the model, the tokens and the cost, and `hybrid_weather.request_id`
is the request's ledger row (and its `request_id`, `x-request-id`). The spans are made once the answer is
in, from the times the request recorded on its way: with tracing off a request does no tracing work, and
the LLM loop's worker threads need no context handed to them.

Configured the standard way: a program that set its own tracer provider gets the spans there; otherwise
`OTEL_TRACES_EXPORTER` (`console`, printed to stderr so stdout stays the answer; `otlp`, to
`OTEL_EXPORTER_OTLP_ENDPOINT`; `none`) makes one, named by `OTEL_SERVICE_NAME`; `OTEL_SDK_DISABLED=true`
turns it all off.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from .answer import Answer
    from .outgoing import Outgoing
    from .understand import Decision

EXPORTERS = ("console", "otlp", "none")
_NS = 1_000_000_000


def configured_tracer(env: Mapping[str, str]) -> tuple[Tracer | None, Any]:
    """The tracer spans go to, and the provider this made (to shut down at close; None when the program's
    own is used); (None, None) when tracing is off or not installed."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None, None
    names = [name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if "opentelemetry.trace" not in sys.modules and not [name for name in names if name != "none"]:
        # Neither the program (it would have imported it to set its provider) nor the environment asks for
        # traces: OpenTelemetry is not imported, and a question costs what it costs without it.
        return None, None
    try:
        from opentelemetry import trace
    except ImportError:
        if [name for name in names if name != "none"]:
            raise ConfigurationError(
                "OTEL_TRACES_EXPORTER is set but OpenTelemetry is not installed: pip install 'hybrid-weather[traces]'"
            ) from None
        return None, None
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return trace.get_tracer("hybrid_weather"), None  # the program's own provider
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise ConfigurationError(f"OTEL_TRACES_EXPORTER: {unknown[0]!r} is not one of {', '.join(EXPORTERS)}")
    names = [name for name in names if name != "none"]
    if not names:
        return None, None
    return _provider(names, env.get("OTEL_SERVICE_NAME") or "hybrid-weather")


def _provider(names: list[str], service: str) -> tuple[Tracer, Any]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    for name in names:
        if name == "console":
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
            continue
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigurationError(
                "OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter: pip install 'hybrid-weather[traces]'"
            ) from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("hybrid_weather"), provider


def trace_request(
    tracer: Tracer,
    outgoing: Outgoing,
    *,
    arrived: float,
    routed_s: float,
    ended: float,
    decision: Decision,
    request_id: str | None = None,
    answer: Answer | None = None,
    error: BaseException | None = None,
) -> None:
    """The spans of one request REQUEST_ID (its ledger row's id, the failed ones' too) that arrived at ARRIVED
    (time.time()), was routed in ROUTED_S seconds and ended at ENDED with ANSWER or ERROR. Every text an
    attribute carries passes OUTGOING, as the ledger's columns do: a span holds no more than its row."""
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    route = answer.route if answer is not None else decision.route
    reason = outgoing.reason(decision.reason)
    attributes: dict[str, Any] = {"hybrid_weather.route": route, "hybrid_weather.reason": reason}
    if request_id:
        attributes["hybrid_weather.request_id"] = request_id
    if decision.cities:
        attributes["hybrid_weather.places"] = [outgoing.text(city) for city in decision.cities]
    if answer is not None:
        attributes.update(_answer_attributes(answer, outgoing))
    request = tracer.start_span("hybrid_weather.ask", start_time=_ns(arrived), attributes=attributes)
    if error is not None:
        request.set_status(Status(StatusCode.ERROR, type(error).__name__))
        # The error's message and traceback may quote the request (a model's or a tool's words): masked.
        said = {
            "exception.message": outgoing.text(str(error)),
            "exception.stacktrace": outgoing.text("".join(traceback.format_exception(error))),
        }
        request.record_exception(error, attributes=said, timestamp=_ns(ended))
    inside = trace.set_span_in_context(request)
    routing = tracer.start_span(
        "hybrid_weather.route",
        context=inside,
        start_time=_ns(arrived),
        attributes={"hybrid_weather.route": decision.route},
    )
    routing.end(end_time=_ns(arrived + routed_s))
    result = answer.llm if answer is not None else None
    model_name = outgoing.text(answer.model) if answer is not None and answer.model else ""
    for loop in result.loops if result is not None else ():
        model = tracer.start_span(
            f"chat {model_name}" if model_name else "chat",
            context=inside,
            start_time=_ns(loop.started_at),
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model_name,
                "gen_ai.usage.input_tokens": loop.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": loop.usage.completion_tokens,
                "hybrid_weather.loop": loop.loop,
                "hybrid_weather.attempts": loop.attempts,
            },
        )
        model.end(end_time=_ns(loop.started_at + loop.latency_ms / 1000))
        for tool in loop.tools:
            tool_name = outgoing.text(tool.name)  # the model's words: it may call a tool that is none
            span = tracer.start_span(
                f"execute_tool {tool_name}",
                context=inside,
                start_time=_ns(tool.started_at),
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool_name,
                    "hybrid_weather.tool.ok": tool.ok,
                    "hybrid_weather.tool.reused": tool.reused,
                },
            )
            if not tool.ok:
                span.set_status(Status(StatusCode.ERROR, "the tool failed"))
            span.end(end_time=_ns(tool.started_at + tool.duration_ms / 1000))
    request.end(end_time=_ns(ended))


def _answer_attributes(answer: Answer, outgoing: Outgoing) -> dict[str, Any]:
    attributes: dict[str, Any] = {"hybrid_weather.latency_ms": answer.latency_ms}
    if answer.cost_usd is not None:
        attributes["hybrid_weather.cost_usd"] = answer.cost_usd
    if answer.source:
        attributes["hybrid_weather.provider"] = outgoing.text(answer.source)
    if answer.cache_hit is not None:
        attributes["hybrid_weather.cache_hit"] = answer.cache_hit
    if answer.model:
        attributes["gen_ai.request.model"] = outgoing.text(answer.model)
    if answer.llm is not None:
        attributes["gen_ai.usage.input_tokens"] = answer.llm.usage.prompt_tokens
        attributes["gen_ai.usage.output_tokens"] = answer.llm.usage.completion_tokens
    return attributes


def _ns(seconds: float) -> int:
    return int(seconds * _NS)

"""What both routes call: the weather layer (`agent.weather`) and the LLM tool loop (`agent.llm`).

The error classes every layer raises live in `agent.errors` and are re-exported here.
"""

from .errors import (
    CircuitOpen,
    ConfigurationError,
    HybridWeatherError,
    LedgerUnavailable,
    LLMUnavailable,
    MalformedResponse,
    NotCovered,
    UpstreamConnectError,
    UpstreamHTTPError,
    UpstreamRejected,
    UpstreamTimeout,
    WeatherUnavailable,
)

__all__ = [
    "CircuitOpen",
    "ConfigurationError",
    "HybridWeatherError",
    "LLMUnavailable",
    "LedgerUnavailable",
    "MalformedResponse",
    "NotCovered",
    "UpstreamConnectError",
    "UpstreamHTTPError",
    "UpstreamRejected",
    "UpstreamTimeout",
    "WeatherUnavailable",
]

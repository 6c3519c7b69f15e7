"""The front door: understand a question (a Decision), answer it, record it; the CLI.

from hybrid_weather.router import HybridRouter
with HybridRouter() as router:
    router.ask("上海今天天气").text
"""

from hybrid_weather.agent.errors import (
    ConfigurationError,
    HybridWeatherError,
    LLMUnavailable,
    WeatherUnavailable,
)

from .answer import Answer
from .facade import HybridRouter
from .session import Session
from .settings import Settings
from .understand import Decision

__all__ = [
    "Answer",
    "ConfigurationError",
    "Decision",
    "HybridRouter",
    "HybridWeatherError",
    "LLMUnavailable",
    "Session",
    "Settings",
    "WeatherUnavailable",
]

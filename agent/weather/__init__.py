"""The weather layer both routes call: providers, their HTTP client, the horizon and the cached service."""

from .horizon import Horizon
from .providers import (
    DEFAULT_PROVIDER,
    PROVIDER_CLASSES,
    PROVIDERS,
    AMapProvider,
    DemoProvider,
    Enclosure,
    OpenMeteoProvider,
    WeatherProvider,
)
from .service import DEFAULT_CACHE_TTL, DEFAULT_MAX_STALE_AGE, Fetched, WeatherService, past_days_for
from .shapes import (
    AirQuality,
    CurrentWeather,
    DailyAir,
    DailyWeather,
    Forecast,
    HourlyForecast,
    HourlyWeather,
    SunDay,
    SunForecast,
    beaufort,
    condition_of,
    fixed,
    to_jsonable,
)

__all__ = [
    "DEFAULT_CACHE_TTL",
    "DEFAULT_MAX_STALE_AGE",
    "DEFAULT_PROVIDER",
    "PROVIDERS",
    "PROVIDER_CLASSES",
    "AMapProvider",
    "AirQuality",
    "CurrentWeather",
    "DailyAir",
    "DailyWeather",
    "DemoProvider",
    "Enclosure",
    "Fetched",
    "Forecast",
    "Horizon",
    "HourlyForecast",
    "HourlyWeather",
    "OpenMeteoProvider",
    "SunDay",
    "SunForecast",
    "WeatherProvider",
    "WeatherService",
    "beaufort",
    "condition_of",
    "fixed",
    "past_days_for",
    "to_jsonable",
]

"""`hybrid-weather serve`: the router behind HTTP, with an OpenAI-compatible drop-in endpoint.

Imported only by the serve command and by programs that mount the app: the CLI and the library never
load Starlette. The app is imported on first use of `create_app`, so run.py (the server's start-up) can
name Prometheus's multiprocess folder before anything imports prometheus_client.

    uvicorn --factory hybrid_weather.router.serve:create_app
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

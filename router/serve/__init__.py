"""`hybrid-weather serve`: the router behind HTTP, with an OpenAI-compatible drop-in endpoint.

Imported only by the serve command and by programs that mount the app: the CLI and the library never
load Starlette.

    uvicorn --factory hybrid_weather.router.serve:create_app
"""

from .app import create_app

__all__ = ["create_app"]

"""The bare endpoint bench_serve.py compares the service with: the same framework and server, a JSON
body read and a JSON object answered, nothing else."""

import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def hello(request: Request) -> JSONResponse:
    body = json.loads(await request.body() or b"{}")
    return JSONResponse({"hello": body.get("query", "world")})


app = Starlette(routes=[Route("/hello", hello, methods=["POST"])])

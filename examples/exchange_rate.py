"""Your own tool in the LLM loop: exchange rates, cached, with the last good rate when the service fails.

    python examples/exchange_rate.py "100美元是多少人民币"     # needs OPENAI_API_KEY and the network

The rates are the European Central Bank's reference rates through Frankfurter (https://frankfurter.dev,
free, no key; set FRANKFURTER_URL for another instance). The pattern is the one to follow for a calendar
or a notification tool: a function with type hints and a docstring, marked with @tool, given to
HybridRouter(tools=[...]); ToolError for what the model should read and act on; the request's deadline
from ToolContext for every network call.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from hybrid_weather.router import HybridRouter, ToolContext, ToolError, tool

RATES_URL = os.environ.get("FRANKFURTER_URL", "https://api.frankfurter.dev/v1")
#: Seconds a fetched rate is served without asking again (the ECB publishes once a working day).
FRESH_S = 3600.0
#: Seconds a rate may still stand in, marked stale, while the service fails.
STALE_S = 7 * 86400.0
#: Seconds one request to the service may take (less when the question's deadline is nearer).
TIMEOUT_S = 5.0
_MAX_BODY = 64 * 1024
_CODE = re.compile(r"[A-Z]{3}")
_cache: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
_lock = threading.Lock()


@tool
def exchange_rate(base: str, context: ToolContext, quote: str = "CNY") -> dict[str, Any]:
    """最新汇率（欧洲央行参考汇率，工作日更新一次）：1 单位 base 货币值多少 quote 货币。

    Args:
        base: 货币代码（ISO 4217），如 USD、EUR、JPY、HKD
        quote: 目标货币代码，默认 CNY（人民币）
    """
    base, quote = base.strip().upper(), quote.strip().upper()
    if not (_CODE.fullmatch(base) and _CODE.fullmatch(quote)):
        raise ToolError("货币代码应为三个英文字母，如 USD、CNY")
    if base == quote:
        return {"base": base, "quote": quote, "rate": 1.0}
    with _lock:
        cached = _cache.get((base, quote))
    if cached is not None and time.time() - cached[0] < FRESH_S:
        return cached[1]
    try:
        fresh = _fetch(base, quote, timeout=min(TIMEOUT_S, context.seconds_left))
    except (OSError, ValueError, RecursionError, http.client.HTTPException) as error:  # down, slow, 5xx, junk
        if cached is not None and time.time() - cached[0] < STALE_S:
            hours = (time.time() - cached[0]) / 3600
            return {**cached[1], "stale": True, "note": f"汇率服务暂时无法访问，这是约 {hours:.0f} 小时前的汇率"}
        raise ToolError(f"汇率服务暂时无法访问（{type(error).__name__}），请稍后再试") from None
    with _lock:
        _cache[(base, quote)] = (time.time(), fresh)
    return fresh


def _fetch(base: str, quote: str, timeout: float) -> dict[str, Any]:
    if timeout <= 0:
        raise TimeoutError("no time left in the request")
    query = urllib.parse.urlencode({"base": base, "symbols": quote})
    try:
        with urllib.request.urlopen(f"{RATES_URL}/latest?{query}", timeout=timeout) as response:
            body = response.read(_MAX_BODY + 1)
    except urllib.error.HTTPError as error:
        if error.code in (404, 422):  # a currency it does not know: the model's to fix, not a failure
            raise ToolError(f"不认识的货币代码：{base} 或 {quote}") from None
        raise
    if len(body) > _MAX_BODY:
        raise ValueError("the reply is too large to be the rates")
    reply = json.loads(body)
    try:
        rate, date = reply["rates"][quote], str(reply.get("date", ""))
    except (KeyError, TypeError, AttributeError):
        raise ValueError("the reply does not hold the rate") from None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"not a rate: {rate!r}")
    return {"base": base, "quote": quote, "rate": float(rate), "date": date,
            "source": "European Central Bank via Frankfurter"}  # fmt: skip


if __name__ == "__main__":
    with HybridRouter(tools=[exchange_rate]) as router:
        print(router.ask(" ".join(sys.argv[1:]) or "100美元是多少人民币").text)

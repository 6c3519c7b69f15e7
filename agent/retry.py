"""How both HTTP callers (weather providers and the LLM) space their retries, with their defaults."""

from __future__ import annotations

import random
from typing import NamedTuple

#: Attempts per request, the first included, for the weather services and the LLM alike.
DEFAULT_MAX_ATTEMPTS = 3


class RetryPolicy(NamedTuple):
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_base: float = 0.2  #: seconds; attempt n waits up to base * 2**(n-1)
    backoff_cap: float = 2.0  #: seconds; no wait is longer

    def pause(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ATTEMPT (1-based): exponential backoff with full jitter."""
        return random.uniform(0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))


#: Weather services answer in milliseconds; a short wait either finds them back or shows they are down.
WEATHER_RETRY = RetryPolicy(DEFAULT_MAX_ATTEMPTS, backoff_base=0.2, backoff_cap=2.0)
#: LLM services shed load for seconds at a time (429, 503); their own SDK backs off up to 8 s.
LLM_RETRY = RetryPolicy(DEFAULT_MAX_ATTEMPTS, backoff_base=0.5, backoff_cap=8.0)

"""How both HTTP callers (weather providers and the LLM) space their retries."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int
    backoff_base: float  #: seconds; attempt n waits up to base * 2**(n-1)
    backoff_cap: float  #: seconds; no wait is longer

    def pause(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ATTEMPT (1-based): exponential backoff with full jitter."""
        return random.uniform(0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))

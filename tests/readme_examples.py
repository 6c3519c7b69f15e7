"""The README's code blocks, as the tests that run them read them: Python blocks, and those that talk to a
running `hybrid-weather serve` (tests/test_serve_live.py starts one for them)."""

import re
from pathlib import Path

README = (Path(__file__).parents[1] / "README.md").read_text("utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)
# Examples that talk to a running `hybrid-weather serve` run in tests/test_serve_live.py, against one.
NEEDS_SERVER = "127.0.0.1:8080"
PYTHON = [code for kind, code in BLOCKS if kind == "python" and NEEDS_SERVER not in code]
SERVED = [code for kind, code in BLOCKS if kind in ("python", "console") and NEEDS_SERVER in code]

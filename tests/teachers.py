"""Many `teach` processes that write at once: the harness of the tests that no concurrent writer of an overlay
loses an acknowledged entry (tests/test_overlay_checked.py, files; tests/test_fleet_overlay.py, PostgreSQL)."""

import subprocess
import sys
from pathlib import Path

_TEACH = """
import sys
from hybrid_weather.router import HybridRouter
from hybrid_weather.router.learn import teach
with HybridRouter(provider="demo") as router:
    router.route("上海明天天气")  # the parser built before the start signal: the writes then meet
    print("ready", flush=True)
    while not __import__("os").path.exists(sys.argv[2]):
        __import__("time").sleep(0.005)
    print(teach(router, "inert", sys.argv[1]).overlay.version)
"""


def made_up_words(count: int) -> list[str]:
    """COUNT made-up names: no check refuses them."""
    return [f"鲲鹏{chr(ord('甲') + i)}号机" for i in range(count)]


def teach_at_once(words: list[str], envs: list[dict[str, str]], start: Path) -> list[tuple[str, str, str, int]]:
    """Teach each of WORDS inert in a process of its own (with the environment beside it in ENVS), all released
    together once every one is ready: (word, stdout, stderr, exit code) of each."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _TEACH, word, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for word, env in zip(words, envs, strict=True)
    ]
    for process in processes:  # every one started and waiting: then they all write at once
        assert process.stdout is not None and process.stdout.readline() == "ready\n", process.communicate()[1][-2000:]
    start.touch()
    return [
        (word, *process.communicate(timeout=120), process.returncode)
        for word, process in zip(words, processes, strict=True)
    ]

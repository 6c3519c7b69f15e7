"""Every example in the README runs (issue 12): each Python block as a script, and each `$ …` shell line
through the real console script, against the local test servers. The `route` example, which needs no
weather, must print exactly what the README shows."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from readme_examples import BLOCKS, PYTHON
from support import subprocess_env


def shell_examples():
    """(command, the output lines the README shows after it) for each `$ ` line in the sh blocks."""
    examples = []
    for kind, code in BLOCKS:
        if kind != "sh":
            continue
        lines = code.replace("\\\n", " ").splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ "):
                shown = []
                for after in lines[i + 1 :]:
                    if after.startswith("$ "):
                        break
                    shown.append(after)
                examples.append((line[2:], shown))
    return examples


SHELL = shell_examples()


@pytest.fixture
def live_weather_server():
    """A fake Open-Meteo whose today is today in China: the README's examples ask on the day they are run,
    and Open-Meteo is asked for the days counted from it, which a server stuck on another day does not keep."""
    from hybrid_weather.rules import today_in_china

    from fake_weather import FakeWeather

    server = FakeWeather(today_in_china()).start()
    yield server
    server.stop()


def test_the_readme_has_examples_to_run():
    assert len(PYTHON) >= 2 and len(SHELL) >= 10


@pytest.mark.parametrize("code", PYTHON, ids=[f"python-{i}" for i in range(len(PYTHON))])
def test_every_python_block_runs(code, live_weather_server, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code, "utf-8")
    env = subprocess_env(HYBRID_WEATHER_OPEN_METEO_URL=live_weather_server.url)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("command,shown", SHELL, ids=[c[:40] for c, _ in SHELL])
def test_every_shell_example_runs(command, shown, live_weather_server):
    # The console script as `python -m`, so the test does not depend on PATH; comments are the shell's.
    runnable = re.sub(r"(^|\| )hybrid-weather", rf"\1{sys.executable} -m hybrid_weather.router", command)
    env = subprocess_env(HYBRID_WEATHER_OPEN_METEO_URL=live_weather_server.url)
    result = subprocess.run(["bash", "-c", runnable], capture_output=True, text=True, env=env, timeout=60)
    needs_llm = "适合出游" in command and "route" not in command  # no OPENAI_API_KEY here: exit 4, by contract
    assert result.returncode == (4 if needs_llm else 0), (command, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if command.startswith("hybrid-weather route"):
        assert result.stdout.splitlines() == shown
    elif not needs_llm:
        assert result.stdout.strip(), command


def test_the_docs_home_page_links_every_page_of_the_site():
    # docs/index.md left out the teaching page (and the configuration table), which the site's menu had.
    import yaml

    root = Path(__file__).parents[1]
    nav = yaml.safe_load((root / "mkdocs.yml").read_text("utf-8"))["nav"]

    def pages(entries):
        for entry in entries:
            for value in entry.values() if isinstance(entry, dict) else [entry]:
                yield from pages(value) if isinstance(value, list) else [value]

    linked = set(re.findall(r"\]\(([\w-]+\.md)(?:#[\w-]*)?\)", (root / "docs" / "index.md").read_text("utf-8")))
    assert set(pages(nav)) - {"index.md"} == linked

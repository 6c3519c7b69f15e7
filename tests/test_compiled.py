"""The rule path as an install runs it: compiled by mypyc where setup.py could (a regular install with a C
compiler), as Python otherwise (an editable install, HYBRID_WEATHER_PURE_PYTHON=1, no compiler). The two
must decide alike: compiled code checks its types at run time and calls its own functions directly, so a
difference would be a bug in one of them."""

from __future__ import annotations

import ast
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import trap_corpus, weather_corpus

REPO = Path(__file__).resolve().parents[1]
DEV_SET = REPO / "tests" / "data" / "queries.jsonl"
DAYS = [dt.date(2026, 11, 29), dt.date(2027, 2, 28)]


def _compiled_names() -> list[str]:
    """setup.py's COMPILED, read without running setup.py."""
    for node in ast.parse((REPO / "setup.py").read_text("utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "COMPILED" for t in targets) and node.value is not None:
                return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no COMPILED list")


def _is_compiled(name: str) -> bool:
    file = importlib.import_module(name).__file__ or ""
    return file.endswith((".so", ".pyd"))


def test_setup_compiles_modules_of_this_package():
    names = _compiled_names()
    assert names
    for name in names:
        module = importlib.import_module(name)
        assert Path(module.__file__ or "").name.split(".")[0] == name.rsplit(".", 1)[-1]


def test_the_checkout_holds_no_built_modules():
    # Python imports an extension module before the .py beside it: one left in the checkout (by an editable
    # install that compiled, or `setup.py build_ext --inplace`) would run instead of the code being edited.
    found = [
        *REPO.glob("*__mypyc*"),
        *(path for part in ("router", "agent", "rules") for path in (REPO / part).rglob("*")),
    ]
    built = sorted(str(path.relative_to(REPO)) for path in found if path.suffix in (".so", ".pyd"))
    assert not built, f"built modules in the checkout shadow its .py files; delete them (git clean -X): {built}"


def test_a_regular_install_runs_the_compiled_rule_path():
    names = _compiled_names()
    first = Path(importlib.import_module(names[0]).__file__ or "").resolve()
    # The checkout's own folders, not REPO: CI's venv (.ci-venv) is inside the checkout, its install regular.
    if any(first.is_relative_to(REPO / part) for part in ("router", "agent", "rules")):
        pytest.skip("an editable install runs the .py files: setup.py compiles only when a wheel is built")
    missing = [name for name in names if not _is_compiled(name)]
    if missing and os.environ.get("HYBRID_WEATHER_REQUIRE_SERVICES") != "1":
        pytest.skip(f"installed without compiling (no C compiler, or HYBRID_WEATHER_PURE_PYTHON): {missing}")
    assert not missing, f"a regular install should have compiled these (see the install's build log): {missing}"


# Routes QUESTIONS (JSON on stdin) on DAYS with the checkout's .py files, linked under argv[1] as hybrid_weather.
_PURE = """
import datetime as dt, json, sys
from hybrid_weather.router import HybridRouter
import hybrid_weather.rules.reader as reader
assert reader.__file__.endswith(".py"), reader.__file__
questions, days = json.load(sys.stdin)
router = HybridRouter(ledger="off")
print(json.dumps([repr(router.route(q, today=dt.date.fromisoformat(d))) for d in days for q in questions]))
"""


def test_the_compiled_rule_path_decides_as_the_python_one(tmp_path):
    if not all(_is_compiled(name) for name in _compiled_names()):
        pytest.skip("this install runs the rule path as Python: nothing compiled to compare")
    from hybrid_weather.router import HybridRouter

    questions = [json.loads(line)["query"] for line in DEV_SET.read_text("utf-8").splitlines() if line.strip()]
    questions += [case.query for case in weather_corpus(2_000, seed=23) + trap_corpus(500, seed=29)]
    package = tmp_path / "hybrid_weather"
    package.mkdir()
    for part in ("router", "agent", "rules"):
        (package / part).symlink_to(REPO / part, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HYBRID_WEATHER_LEDGER": "off"}
    pure = subprocess.run(
        [sys.executable, "-c", _PURE],
        input=json.dumps([questions, [d.isoformat() for d in DAYS]]),
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True, timeout=300,
    )  # fmt: skip
    router = HybridRouter(ledger="off")
    compiled = [repr(router.route(q, today=d)) for d in DAYS for q in questions]
    asked = questions * len(DAYS)
    differing = [(q, a, b) for q, a, b in zip(asked, json.loads(pure.stdout), compiled, strict=True) if a != b]
    assert not differing, f"{len(differing)} of {len(compiled)} decisions differ, first: {differing[:3]}"


def test_version_says_which_rule_path_runs():
    # Nothing said whether the compiled or the pure-Python reading was running (an editable install, or a
    # missing C compiler, runs Python with the same answers, slower).
    compiled = [_is_compiled(name) for name in _compiled_names()]
    path = "compiled" if all(compiled) else "pure Python" if not any(compiled) else "partly compiled"
    for args in (["--version"], ["version"]):
        result = subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], capture_output=True,
                                text=True, timeout=60)  # fmt: skip
        assert result.returncode == 0 and result.stdout.endswith(f" (rule path: {path})\n"), result.stdout

"""The hold-out sets stay held out: a question of tests/data/holdout/ appears nowhere else in the repository
(code, tests, docs, other data), so no rule, test or example was written against it. A set whose questions
have been read while the router was changed is a tuning set, and lives in tests/data/tuning/ instead."""

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOLDOUT = ROOT / "tests" / "data" / "holdout"


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's files cannot be listed")
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_there_is_a_holdout():
    assert sorted(HOLDOUT.glob("*.jsonl")), "no hold-out set in tests/data/holdout/"


def test_no_holdout_question_appears_elsewhere_in_the_repository():
    questions = {}
    for path in sorted(HOLDOUT.glob("*.jsonl")):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            if line.strip():
                questions[json.loads(line)["query"]] = f"{path.name}:{number}"
    leaks = []
    for path in _tracked_files():
        if path.parent == HOLDOUT or not path.is_file():
            continue
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # a binary file holds no question
        leaks += [f"{where} in {path.relative_to(ROOT)}" for question, where in questions.items() if question in text]
    assert not leaks, "hold-out questions found outside the hold-out:\n" + "\n".join(leaks)

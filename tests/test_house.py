"""The size bounds the product code keeps, so a maintainer can read it (issue 53): the CLI is glue, no function
runs past a screen, no ledger class holds more than one job, and `# fmt: skip` is kept for aligned tables."""

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
PRODUCT = [path for folder in ("router", "agent", "rules") for path in sorted((ROOT / folder).rglob("*.py"))]
MAX_FUNCTION_LINES = 80
MAX_LEDGER_CLASS_LINES = 250
MAX_CLI_LINES = 800
MAX_FMT_SKIPS = 40


def lines_of(node):
    return node.end_lineno - node.lineno + 1


def definitions(kind):
    for path in PRODUCT:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, kind):
                yield path.relative_to(ROOT), node


def test_no_function_in_product_code_is_over_80_lines():
    long = [
        f"{path}:{node.lineno} {node.name} ({lines_of(node)} lines)"
        for path, node in definitions((ast.FunctionDef, ast.AsyncFunctionDef))
        if lines_of(node) > MAX_FUNCTION_LINES
    ]
    assert not long, "split these into named steps: " + "; ".join(long)


def test_no_ledger_class_is_over_250_lines():
    big = [
        f"{path}:{node.lineno} {node.name} ({lines_of(node)} lines)"
        for path, node in definitions(ast.ClassDef)
        if path.parts[:2] == ("router", "ledger") and lines_of(node) > MAX_LEDGER_CLASS_LINES
    ]
    assert not big, "one job a class: " + "; ".join(big)


def test_the_cli_is_glue_and_fmt_skip_is_for_tables():
    assert len((ROOT / "router" / "cli.py").read_text("utf-8").splitlines()) <= MAX_CLI_LINES
    skips = sum(path.read_text("utf-8").count("# fmt: skip") for path in PRODUCT)
    assert skips <= MAX_FMT_SKIPS, f"{skips} `# fmt: skip` in product code"

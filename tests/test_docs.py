"""Each fact the docs state has one source, and these tests hold the page to it, as sqlite-utils'
tests/test_docs.py does: the configuration table to `Settings` and to the variables the code reads, the
module map to the tree, the error tree to the error classes."""

import dataclasses
import re
from pathlib import Path

import pytest

from hybrid_weather.agent import errors
from hybrid_weather.router.settings import Settings

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"


def configuration_table():
    """{variable: its default, as docs/configuration.md's table gives it}: one variable a row."""
    table = {}
    for line in (DOCS / "configuration.md").read_text("utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        names = re.findall(r"`([A-Z*][A-Z0-9_*]*)`", cells[0])
        assert len(names) == 1 and cells[0] == f"`{names[0]}`", f"one variable a row, as a name: {cells[0]}"
        assert names[0] not in table, f"{names[0]} has two rows"
        table[names[0]] = cells[-1]
    return table


TABLE = configuration_table()
SETTINGS = {each.metadata["variable"]: each for each in dataclasses.fields(Settings)}


def shown(value):
    """VALUE as the table's default column writes it: `600`, `masked`, `0` for off."""
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def test_every_setting_has_a_row_and_every_row_is_read():
    assert sorted(set(SETTINGS) - set(TABLE)) == []
    # A row that is no setting is a variable read somewhere else: the CLI, tracing, the build, the tests.
    sources = [*ROOT.glob("router/**/*.py"), *ROOT.glob("agent/**/*.py"), *ROOT.glob("rules/**/*.py")]
    sources += [ROOT / "setup.py", *ROOT.glob("tests/*.py")]
    text = "\n".join(source.read_text("utf-8") for source in sources)
    read = {name for name in TABLE if re.search(rf"[\"']{re.escape(name)}[\"']", text)}
    assert sorted(set(TABLE) - set(SETTINGS) - read) == []


def test_every_variable_the_code_reads_has_a_row():
    read = set()
    for source in [*ROOT.glob("router/**/*.py"), *ROOT.glob("agent/**/*.py"), *ROOT.glob("rules/**/*.py")]:
        # A variable is read by its name in quotes (env.get("…"), _setting("…", …)).
        text = source.read_text("utf-8")
        read |= set(re.findall(r"[\"']((?:HYBRID_WEATHER|OPENAI|AMAP|OTEL)_[A-Z_]*[A-Z])[\"']", text))
    assert read and sorted(read - set(TABLE)) == []


@pytest.mark.parametrize("variable", sorted(SETTINGS))
def test_the_default_in_the_table_is_the_settings_default(variable):
    default = SETTINGS[variable].default
    documented = TABLE[variable]
    if default not in (None, ()):
        assert documented.startswith(shown(default)), (variable, documented)
    else:  # no value of its own: the table says in words what happens, or names where the value comes from
        assert not documented.startswith("`") or variable in DERIVED, (variable, documented)
    if variable in DERIVED:
        assert shown(DERIVED[variable]()) in documented, (variable, documented)


def _model():
    from hybrid_weather.agent.llm.models import ModelTable

    return ModelTable().default_model


def _amap_url():
    from hybrid_weather.agent.weather.providers import AMAP_URL

    return AMAP_URL


def _keep_days():
    from hybrid_weather.router.settings import POSTGRES_KEEP_DAYS

    return POSTGRES_KEEP_DAYS


def _concurrency():
    from hybrid_weather.router.serve.budgets import DEFAULT_CONCURRENCY

    return DEFAULT_CONCURRENCY


def _ledger():
    return Settings(home=Path("$HYBRID_WEATHER_HOME")).ledger_location()


#: Settings whose default is decided where it is used, from a value named there.
DERIVED = {
    "HYBRID_WEATHER_MODEL": _model,
    "HYBRID_WEATHER_AMAP_URL": _amap_url,
    "HYBRID_WEATHER_LEDGER_KEEP_DAYS": _keep_days,
    "HYBRID_WEATHER_KEY_CONCURRENCY": _concurrency,
    "HYBRID_WEATHER_LEDGER": _ledger,
}


def test_a_setting_that_cannot_be_read_names_its_variable():
    # Each variable is named once, on its field: the error for a value that cannot be used names that one.
    for variable, bad in [
        ("HYBRID_WEATHER_CACHE_TTL", "soon"),
        ("HYBRID_WEATHER_LEDGER_KEEP_DAYS", "-1"),
        ("HYBRID_WEATHER_HEADER_TIMEOUT", "0"),
        ("HYBRID_WEATHER_PASS_THROUGH", "maybe"),
        ("OPENAI_BASE_URL", "nowhere"),
        ("HYBRID_WEATHER_CANARY", "2"),
    ]:
        with pytest.raises(errors.ConfigurationError, match=variable):
            Settings.from_env({variable: bad})


# -- the module map ----------------------------------------------------------------------------------------


def modules():
    """Every module of router/ and rules/ (a package is its folder), as the shortest tail of its path no other
    module's path ends with: writer.py, but learn/status.py and reports/status.py."""
    paths = sorted(p.relative_to(ROOT) for part in ("router", "rules") for p in (ROOT / part).rglob("*.py"))
    paths = [p for p in paths if p.name != "__init__.py"]
    tails = {}
    for path in paths:
        for n in range(1, len(path.parts) + 1):
            tail = "/".join(path.parts[-n:])
            if sum("/".join(other.parts[-n:]) == tail for other in paths) == 1:
                tails[str(path)] = tail
                break
    return tails


def test_the_architecture_page_names_every_module():
    page = (DOCS / "architecture.md").read_text("utf-8")
    missing = [path for path, tail in modules().items() if not re.search(rf"(?<![\w.]){re.escape(tail)}(?!\w)", page)]
    assert missing == []


def test_the_module_check_tells_modules_of_one_name_apart():
    tails = modules()
    assert tails["rules/normalize.py"] == "normalize.py"
    assert tails["router/learn/status.py"] == "learn/status.py"
    assert tails["router/ledger/reports/status.py"] == "reports/status.py"


# -- the error tree ------------------------------------------------------------------------------------------


def drawn_tree(text):
    """{class name: (its parent's name, the exit code its line gives or None)} of the tree drawn in TEXT: the
    lines from the one that is "HybridWeatherError" alone to the first blank line; a name's depth is where
    it starts, four columns a level."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "HybridWeatherError")
    base = len(lines[start]) - len(lines[start].lstrip())
    tree, parents = {}, []
    for line in lines[start:]:
        if not line.strip():
            break
        drawn = re.match(r"([\s│├└─]*)([A-Z]\w+)(.*)", line)
        if drawn is None:
            continue  # a description's second line
        depth = (len(drawn.group(1)) - base) // 4
        del parents[depth:]
        code = re.search(r"\bexit (\d)\b", drawn.group(3))
        tree[drawn.group(2)] = (parents[-1] if parents else None, int(code.group(1)) if code else None)
        parents.append(drawn.group(2))
    return tree


def error_classes():
    """{class name: (its parent's name, the exit code it sets itself or None)} of the errors module."""
    classes = {}
    for name, value in vars(errors).items():
        if isinstance(value, type) and issubclass(value, errors.HybridWeatherError):
            parent = None if value is errors.HybridWeatherError else value.__base__.__name__
            classes[name] = (parent, vars(value).get("exit_code") if parent else None)
    return classes


def library_page_tree():
    page = (DOCS / "library.md").read_text("utf-8")
    return re.search(r"^```\n(HybridWeatherError\n.*?)^```", page, re.S | re.M).group(1)


@pytest.mark.parametrize("where", ["docs/library.md", "agent/errors.py"])
def test_the_error_tree_drawn_is_the_error_classes(where):
    text = library_page_tree() if where == "docs/library.md" else errors.__doc__
    assert drawn_tree(text) == error_classes()


def test_the_tree_reader_sees_a_missing_class_and_a_wrong_parent():
    tree = drawn_tree(errors.__doc__)
    assert "UpstreamTimeout" in tree and tree["UpstreamTimeout"][0] == "WeatherUnavailable"
    moved = errors.__doc__.replace("    │   ├── UpstreamTimeout", "    ├── UpstreamTimeout")
    assert drawn_tree(moved)["UpstreamTimeout"][0] == "HybridWeatherError"

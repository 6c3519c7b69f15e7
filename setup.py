"""Build hook: compiles the router's reading of a question to C with mypyc, where a C compiler is at hand.

Everything else about the package is in pyproject.toml. The modules below are the rule path (what
`route()` runs for every question); mypyc compiles their typed Python as it is, and the installed
package holds both the extension modules and the .py files they were made from. Python imports the
extension first; where it cannot be built (no C compiler, HYBRID_WEATHER_PURE_PYTHON=1, an editable
install, whose .py files must stay the ones that run), the .py files answer the same, only slower.
docs/architecture.md ("Compiled modules") says what was measured.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

#: The rule path, as installed names; each file is its folder's (package-dir in pyproject.toml).
COMPILED = [
    "hybrid_weather.rules.normalize",
    "hybrid_weather.rules.trie",
    "hybrid_weather.rules.dates",
    "hybrid_weather.rules.lexicon",
    "hybrid_weather.rules.gazetteer",
    "hybrid_weather.rules.sound_alike",
    "hybrid_weather.rules.reader",
    "hybrid_weather.rules.china_time",
    "hybrid_weather.agent.weather.horizon",
    "hybrid_weather.router.understand.parser",
    "hybrid_weather.router.understand.follow_up",
]
#: The folders the three packages are installed from (package-dir in pyproject.toml).
FOLDERS = {"router": "router", "agent": "agent", "rules": "rules"}


class CompiledDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True  # so build_ext runs; what it builds is decided there, only when a wheel is built


class build_mypyc(build_ext):
    """build_ext that makes its extensions with mypyc, and installs none where it cannot."""

    def finalize_options(self) -> None:
        # distutils takes the extensions from the distribution here. egg_info finalizes build_ext too, to list
        # their sources, so mypyc runs only where something is built: once a build, not once a command.
        building = not _BUILDS.isdisjoint(self.distribution.commands)
        if building and (reason := self._not_compiled()) is not None:
            if reason not in _SAID:  # setuptools may finalize this command twice in one build
                print(f"hybrid-weather: {reason}, the rule path runs as Python (its .py files)")
                _SAID.add(reason)
        elif building and not self.distribution.ext_modules:
            try:
                self.distribution.ext_modules = _mypyc_extensions(Path("build", "mypyc"))
            except (Exception, SystemExit) as error:  # mypy's errors end in SystemExit
                _fall_back(error)
        super().finalize_options()

    def _not_compiled(self) -> str | None:
        # editable_wheel sets editable_mode only after this command is finalized: its name says it first.
        if self.editable_mode or self.inplace or not _EDITABLE.isdisjoint(self.distribution.commands):
            return "an editable install"  # its .py files must stay the ones that run, not modules built beside them
        if os.environ.get("HYBRID_WEATHER_PURE_PYTHON"):
            return "HYBRID_WEATHER_PURE_PYTHON is set"
        return None

    def run(self) -> None:
        # pip builds in the source's build/ folder, which keeps what an earlier build made: a build as Python
        # must not ship the last build's extensions (Python would import them first), nor a build a stale one.
        for stale in Path(self.build_lib).rglob("*"):
            if stale.suffix in (".so", ".pyd"):  # the package has no extension modules but mypyc's
                stale.unlink()
        try:
            super().run()
        except (Exception, SystemExit) as error:  # no C compiler, no Python headers
            for path in self.get_outputs():
                Path(path).unlink(missing_ok=True)  # a module whose shared library is missing would not import
            self.extensions = []
            _fall_back(error)


#: The commands that build what is installed (pip runs bdist_wheel; an editable install, editable_wheel).
_BUILDS = {"bdist_wheel", "build", "build_ext", "install", "editable_wheel"}
_EDITABLE = {"editable_wheel", "develop"}
_SAID: set[str] = set()


def _fall_back(error: BaseException) -> None:
    print(
        f"hybrid-weather: the rule path could not be compiled ({type(error).__name__}: {error}); it is installed "
        "as Python, which answers the same, only slower. Install a C compiler (gcc) and the Python headers "
        "(python3-dev), then install again, to have it compiled.",
        file=sys.stderr,
    )


def _mypyc_extensions(stage: Path) -> list:  # type: ignore[type-arg]
    """mypyc's extensions for COMPILED, made in STAGE. mypy must see the folders under their installed names,
    as the CI gate's type check does: STAGE has a copy of them under hybrid_weather/."""
    from mypyc.build import mypycify

    shutil.rmtree(stage, ignore_errors=True)
    for name, folder in FOLDERS.items():
        shutil.copytree(folder, stage / "hybrid_weather" / name, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (stage / "hybrid_weather" / "__init__.py").touch()  # the stage's alone: installed, hybrid_weather is a namespace
    paths = [str(stage / (name.replace(".", "/") + ".py")) for name in COMPILED]
    options = [
        f"--python-version={sys.version_info.major}.{sys.version_info.minor}",
        "--ignore-missing-imports",  # the build has mypy and setuptools only: jieba, click, … are Any to it
        "--no-warn-unused-ignores",
        "--no-warn-return-any",
        "--allow-subclassing-any",
        "--allow-untyped-calls",
        "--allow-untyped-decorators",
        "--cache-dir",
        str(stage / ".mypy_cache"),
    ]
    return mypycify([*options, *paths], opt_level="3", target_dir=str(stage / "c"))


setup(distclass=CompiledDistribution, cmdclass={"build_ext": build_mypyc})

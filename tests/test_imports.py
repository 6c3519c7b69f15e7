"""Importing does no I/O, reads no environment and loads nothing heavy (docs/contracts.md, library)."""

import subprocess
import sys


def run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


# Opening these is how Python imports code; opening anything else at import is I/O the package does.
CODE_SUFFIXES = (".py", ".pyc", ".so", ".pyd")


def test_import_is_cheap_and_silent():
    # An audit hook sees every open() (io.open, os.open, importlib.resources reads), not only builtins.open,
    # so a module-level read of a data file is caught however it is written.
    code = (
        "import os, sys\n"
        f"CODE = {CODE_SUFFIXES!r}\n"
        "io_events = []\n"
        "def audit(event, args):\n"
        "    if event == 'open' and not str(args[0]).endswith(CODE):\n"
        "        io_events.append((event, args[0]))\n"
        "    elif event in ('socket.connect', 'socket.getaddrinfo', 'subprocess.Popen', 'os.system'):\n"
        "        io_events.append((event, args[0] if args else None))\n"
        "read = []\n"
        "class Env(dict):\n"
        "    def __getitem__(self, k): read.append(k); return dict.__getitem__(self, k)\n"
        "    def get(self, k, d=None): read.append(k); return dict.get(self, k, d)\n"
        "os.environ = Env(os.environ)\n"
        "sys.addaudithook(audit)\n"
        "import hybrid_weather.router, hybrid_weather.agent, hybrid_weather.rules\n"
        "import hybrid_weather.router.cli, hybrid_weather.router.ledger, hybrid_weather.agent.llm\n"
        "import hybrid_weather.agent.weather, hybrid_weather.router.answer.shadow\n"
        "for heavy in ('openai', 'jieba', 'pypinyin', 'rapidfuzz', 'httpx2'):\n"
        "    assert heavy not in sys.modules, heavy\n"
        "assert io_events == [], io_events\n"
        "ours = [k for k in read if k.startswith(('HYBRID_WEATHER', 'OPENAI', 'AMAP', 'NO_COLOR'))]\n"
        "assert ours == [], ours  # click's gettext reads LANGUAGE; that is click's business\n"
        "print('ok')\n"
    )
    assert run(code).strip() == "ok"


def test_the_import_check_catches_a_data_file_read():
    # The check above must be able to fail: a module-level table load is exactly what it is for.
    code = (
        "import sys\n"
        "seen = []\n"
        "sys.addaudithook(lambda e, a: seen.append(a[0]) if e == 'open' and str(a[0]).endswith('.json') else None)\n"
        "from hybrid_weather.rules._data import load_table\n"
        "load_table('aliases')\n"
        "assert any(str(p).endswith('aliases.json') for p in seen), seen\n"
        "print('ok')\n"
    )
    assert run(code).strip() == "ok"


def test_router_construction_defers_the_tokenizer():
    code = (
        "import sys\n"
        "from hybrid_weather.router import HybridRouter\n"
        "r = HybridRouter()\n"
        "assert 'jieba' not in sys.modules\n"
        "r.route('上海今天天气')\n"
        "assert 'jieba' in sys.modules and 'openai' not in sys.modules\n"
        "# nor the tool registry and asyncio (~15 ms of a cold CLI run) when no tools are given\n"
        "assert 'hybrid_weather.agent.llm.registry' not in sys.modules and 'asyncio' not in sys.modules\n"
        "print('ok')\n"
    )
    assert run(code).strip() == "ok"


def test_every_package_folder_is_in_the_wheel():
    # setuptools installs only the packages pyproject.toml lists: a new folder left out works in an
    # editable checkout and is missing from every real install (it happened to router/serve).
    from pathlib import Path

    import tomllib

    root = Path(__file__).parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["packages"])
    folders = {
        "hybrid_weather." + ".".join(init.parent.relative_to(root).parts)
        for part in ("router", "agent", "rules")
        for init in (root / part).rglob("__init__.py")
    }
    assert folders == listed


def test_the_router_never_loads_jiebas_hmm_but_a_user_of_jieba_still_gets_it():
    code = (
        "import datetime as dt, sys\n"
        "from hybrid_weather.router import HybridRouter\n"
        "assert HybridRouter().route('魔都明天会下雨吗', today=dt.date(2026, 11, 29)).route == 'rule'\n"
        "assert 'jieba.finalseg.prob_emit' not in sys.modules, 'the HMM tables were loaded'\n"
        "assert 'tempfile' not in sys.modules, 'tempfile was imported for a cache file never written'\n"
        "import jieba\n"
        "jieba.setLogLevel(60)\n"
        "print('/'.join(jieba.lcut('他来到了网易杭研大厦', HMM=True)))\n"
    )
    assert run(code).strip() == "他/来到/了/网易/杭研/大厦"  # 杭研: a word only the HMM finds


def test_a_rule_answer_with_the_file_ledger_imports_no_tempfile(tmp_path):
    # tempfile (with shutil, bz2, lzma) is only for a spool file outside the ledger's folder.
    code = (
        "import datetime as dt, sys\n"
        "from hybrid_weather.router import HybridRouter\n"
        f"with HybridRouter(provider='demo', ledger={str(tmp_path / 'ledger.db')!r}) as r:\n"
        "    assert r.ask('上海今天天气', today=dt.date(2026, 11, 29)).route == 'rule'\n"
        "assert 'tempfile' not in sys.modules\n"
        "print('ok')\n"
    )
    assert run(code).strip() == "ok"

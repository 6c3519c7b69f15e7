"""Importing does no I/O, reads no environment and loads nothing heavy (DESIGN.md §3.4, STYLE.md)."""

import subprocess
import sys


def run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_import_is_cheap_and_silent():
    code = (
        "import os, sys, builtins\n"
        "opened = []\n"
        "real_open = builtins.open\n"
        "builtins.open = lambda *a, **k: (opened.append(a[0]), real_open(*a, **k))[1]\n"
        "read = []\n"
        "class Env(dict):\n"
        "    def __getitem__(self, k): read.append(k); return dict.__getitem__(self, k)\n"
        "    def get(self, k, d=None): read.append(k); return dict.get(self, k, d)\n"
        "os.environ = Env(os.environ)\n"
        "import hybrid_weather.router, hybrid_weather.agent, hybrid_weather.rules\n"
        "import hybrid_weather.router.cli\n"
        "for heavy in ('openai', 'jieba', 'pypinyin', 'rapidfuzz'):\n"
        "    assert heavy not in sys.modules, heavy\n"
        "assert opened == [], opened\n"
        "ours = [k for k in read if k.startswith(('HYBRID_WEATHER', 'OPENAI', 'AMAP', 'NO_COLOR'))]\n"
        "assert ours == [], ours  # click's gettext reads LANGUAGE; that is click's business\n"
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
        "print('ok')\n"
    )
    assert run(code).strip() == "ok"

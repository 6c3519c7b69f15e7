"""The overlay is checked when it is read, not only when it is taught (issue 49, item 6): a version written by
hand is held to the checks `teach` makes, plus that no entry changes a question about known places or reads
an everyday word away; one that fails is never served (a running `serve` keeps its last good version and says
why; `route` and `ask` say why in one line). Writers take the folder's lock: twenty-four `teach` at once lose
no acknowledged entry."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from live_server import post, serving
from teachers import made_up_words, teach_at_once

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.router import HybridRouter
from hybrid_weather.router.cli import cli
from hybrid_weather.router.learn import teach
from hybrid_weather.router.understand.overlay import OverlayStore

from support import subprocess_env

#: Entries a hand may write that change questions they were never meant for, and what the refusal names.
BAD_ENTRIES = [
    ("alias 北京 上海市", "already a place"),  # every 北京 question would get Shanghai's weather
    ("alias 魔都 北京", "already a place"),  # a name the rules know for Shanghai
    ("alias 开会 上海", "everyday word"),  # 今天开会吗 would become a forecast
    ("inert 公司", "everyday word"),
    ("alias 南山 上海", "part of the place name"),  # 南山区 cut apart
    ("date 后天儿 明天", "already a date"),
    ("inert 适合", "open-ended"),
    ("alias 大本营 纳尼亚", "as one place"),  # the target is no place the rules know
]


def _hand_written(home, *lines: str, version: int = 1) -> None:
    folder = home / "overlay"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"v{version:04d}.txt").write_text(f"# hybrid-weather overlay v{version}\n" + "\n".join(lines) + "\n")
    (folder / "active").write_text(f"{version}\n")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], capture_output=True, text=True,
                          timeout=60, env=subprocess_env(HYBRID_WEATHER_PROVIDER="demo",
                                                          HYBRID_WEATHER_LEDGER="off"))  # fmt: skip


@pytest.mark.parametrize("line,why", BAD_ENTRIES)
def test_a_hand_written_entry_that_teach_would_refuse_is_refused_when_read_naming_its_line(line, why, isolated_home):
    _hand_written(isolated_home, "alias 鹅厂 深圳", line)
    with pytest.raises(ConfigurationError, match=rf"v0001\.txt line 3: `{line}`: .*{why}"):
        HybridRouter(provider="demo", ledger="off").route("北京明天天气")
    for command in (["route", "北京明天天气"], ["北京明天天气"]):  # route as ask: one line, exit 2
        done = _cli(*command)
        assert done.returncode == 2 and "line 3" in done.stderr and why in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("word", ["开会", "公司", "学校"])
def test_teach_refuses_an_everyday_word_and_the_question_that_uses_it_is_unchanged(word, isolated_home):
    with HybridRouter(provider="demo", ledger="off") as router:
        before = router.route(f"今天{word}吗")
        for kind, target in (("alias", "上海"), ("inert", "")):
            with pytest.raises(ConfigurationError, match="everyday word"):
                teach(router, kind, word, target)
        assert router.route(f"今天{word}吗").route == before.route != "rule"
    assert OverlayStore(isolated_home / "overlay").versions() == []


def test_serve_will_not_start_on_an_overlay_it_cannot_serve(isolated_home):
    from fake_weather import free_port

    _hand_written(isolated_home, "alias 鹅厂 深圳", "alias 北京 上海市")
    try:
        done = _cli("serve", "--port", str(free_port()))
    except subprocess.TimeoutExpired:
        pytest.fail("serve started, to answer every question with a 503")
    assert done.returncode == 2 and "v0001.txt line 3: `alias 北京 上海市`" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_an_active_file_of_5000_digits_is_one_typed_line(isolated_home):
    _hand_written(isolated_home, "alias 鹅厂 深圳")
    (isolated_home / "overlay" / "active").write_text("9" * 5000 + "\n")
    with pytest.raises(ConfigurationError, match="names version"):
        HybridRouter(provider="demo", ledger="off").route("上海明天天气")
    for command in (["route", "上海明天天气"], ["上海明天天气"]):
        done = _cli(*command)
        assert done.returncode == 2 and "active names version" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_teach_will_not_write_on_top_of_a_hand_written_entry_that_cannot_be_kept(isolated_home):
    _hand_written(isolated_home, "alias 鹅厂 深圳", "alias 北京 上海市")
    refused = pytest.raises(ConfigurationError, match=r"v0001\.txt line 3: `alias 北京 上海市`")
    with HybridRouter(provider="demo", ledger="off") as router, refused:
        teach(router, "inert", "鲲鹏")
    assert OverlayStore(isolated_home / "overlay").versions() == [1]
    assert CliRunner().invoke(cli, ["teach", "remove", "北京"]).exit_code == 0  # the way out: remove it


def test_a_running_serve_keeps_its_last_good_version_and_says_why(tmp_path, llm_server, isolated_home):
    _hand_written(isolated_home, "alias 鹅厂 深圳")
    log = tmp_path / "serve.log"
    with log.open("w") as stderr, serving(tmp_path, llm_server, stderr=stderr) as server:

        def cities(question: str) -> list[str]:
            return post(f"{server.url}/v1/route", {"query": question})[1]["cities"]

        assert cities("鹅厂明天天气") == ["深圳市"] and cities("北京明天天气") == ["北京市"]
        _hand_written(isolated_home, "alias 鹅厂 深圳", "alias 北京 上海市", version=2)
        time.sleep(2.5)  # the overlay is read again at the first question a second after it changed
        for _ in range(3):
            assert cities("北京明天天气") == ["北京市"]  # never Shanghai's
            assert cities("鹅厂明天天气") == ["深圳市"]  # v1 serves still
            time.sleep(0.5)
        (isolated_home / "overlay" / "active").write_text("9" * 5000 + "\n")
        time.sleep(2.5)
        assert cities("鹅厂明天天气") == ["深圳市"] and cities("北京明天天气") == ["北京市"]
    said = log.read_text()
    assert "v0002.txt line 3: `alias 北京 上海市`" in said and "v1 serves still" in said, said[-3000:]
    assert "Traceback" not in said


def test_twenty_four_concurrent_teach_lose_no_acknowledged_entry(tmp_path, isolated_home):
    words = made_up_words(24)
    results = teach_at_once(words, [subprocess_env(HYBRID_WEATHER_LEDGER="off")] * len(words), tmp_path / "start")
    failed = [(word, err[-500:]) for word, _, err, code in results if code != 0]  # FileExistsError, before
    acknowledged = [word for word, _, _, code in results if code == 0]
    assert not failed, failed
    store = OverlayStore(isolated_home / "overlay")
    active = store.active()
    assert active is not None
    assert sorted(entry.word for entry in active.entries) == sorted(acknowledged)
    assert store.versions() == list(range(1, len(words) + 1))  # one version a writer, none written over

"""The router learns from its own traffic (issue 39): `teach` checks and versions the operator's words, and
`learn` turns the LLM's plain lookups into overlay entries that answer the same kinds of questions by rules.

The learning test plays a scripted model over the wire: the fake OpenAI server calls get_weather with the
place and the day a real model would, for questions of made-up words (an assistant's name, a pet name) that
the rules send to the LLM today. Which questions those are is measured, not assumed: candidates the rules
already answer are left out of the training run.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from corpus import trap_corpus, weather_corpus

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.cli import cli
from hybrid_weather.router.learn import apply_proposals, learn, teach, teach_remove, teach_use
from hybrid_weather.router.understand.overlay import OverlayStore, parse_overlay
from hybrid_weather.rules import today_in_china

from fake_openai import answer, tool_calls
from support import FAST_HTTP, FAST_LLM

DEV_SET = [json.loads(line) for line in (Path(__file__).parent / "data" / "queries.jsonl").open(encoding="utf-8")]
# Words no lexicon has: an assistant's or a pet's name said before the question.
TRAINED_WORDS = ["鲲鹏", "阿福", "贾维斯", "旺财"]
TRAINED_PLACES = ["上海", "北京", "广州", "深圳", "成都", "武汉", "西安", "南京"]
HELD_OUT_PLACES = ["杭州", "重庆", "天津", "苏州", "长沙", "郑州", "青岛", "昆明"]
TRAINED_DAYS = ["今天", "明天", "后天"]
HELD_OUT_DAYS = ["大后天", "周六", "下周一"]
TEMPLATES = [
    ("{w}{p}{d}下雨吗", "rain"), ("{w}，{p}{d}天气怎么样", "weather"), ("问问{w}{p}{d}多少度", "temperature"),
    ("{w}{p}{d}天气", "weather"), ("{w}你好，{p}{d}会下雨吗", "rain"),
]  # fmt: skip


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_kind(request, monkeypatch):
    """The test's ledger: the home folder's SQLite file, or a PostgreSQL schema of its own."""
    if request.param == "postgresql":
        monkeypatch.setenv("HYBRID_WEATHER_LEDGER", request.getfixturevalue("pg_url"))
    return request.param


def make_router(llm_server, **options):
    # From the environment, as a deployment's: HYBRID_WEATHER_HOME (the test's) holds the ledger and overlay.
    settings = dataclasses.replace(
        Settings.from_env(), provider="demo", openai_api_key="sk-test", openai_base_url=llm_server.base_url
    )
    return HybridRouter(settings=settings, http_options=FAST_HTTP, llm_options=FAST_LLM, **options)


def missed_today(router, words, places, days, today):
    """The questions of WORDS, PLACES and DAYS that the rules send to the LLM today, with what they ask."""
    cases = []
    for word, place, day, (template, _aspect) in itertools.product(words, places, days, TEMPLATES):
        query = template.format(w=word, p=place, d=day)
        if router.route(query, today=today).route == "llm":
            cases.append((query, place, day))
    return cases


def played(router, llm_server, cases, today):
    """Each of CASES asked, the model looking up its place and day as a real one would."""
    for query, place, day in cases:
        llm_server.then(tool_calls(("get_weather", {"place": place, "date": day})), answer(f"{place}{day}多云。"))
        answer_ = router.ask(query, today=today)
        assert answer_.route == "llm", query


def reads(router, query, place, day, today):
    decision = router.route(query, today=today)
    expected = router.route(f"{place}{day}天气", today=today)
    return decision.route == "rule" and decision.cities == expected.cities and decision.dates == expected.dates


def test_learn_turns_the_models_plain_lookups_into_rules_for_the_same_kinds_of_questions(llm_server):
    today = today_in_china()  # the ledger's rows are read against the day they were asked
    with make_router(llm_server) as router:
        training = missed_today(router, TRAINED_WORDS, TRAINED_PLACES, TRAINED_DAYS, today)
        held_out = missed_today(router, TRAINED_WORDS, HELD_OUT_PLACES, HELD_OUT_DAYS, today)
        assert len(training) >= 200 and len(held_out) >= 200, (len(training), len(held_out))
        # Questions that were not plain lookups, holding the same words: learn must not make them rules.
        llm_server.then(answer("适合出游。"), answer("带伞吧。"))
        router.ask("阿福北京明天适合出游吗", today=today)
        router.ask("旺财帮我规划一下上海两天行程", today=today)
        played(router, llm_server, training, today)
        router.ledger.flush()
        # The dev set, the generated corpus and its traps: no decision may change with the overlay loaded.
        asked = [(case.query, dt.date(2026, 11, 29)) for case in trap_corpus(2_000) + weather_corpus(2_000)]
        asked += [(case["query"], dt.date.fromisoformat(case["today"])) for case in DEV_SET]
        before = {(query, day): router.route(query, today=day) for query, day in asked}

        proposals = learn(router, 30)
        accepted = {p.entry.word: p for p in proposals if p.accepted}
        assert set(accepted) == set(TRAINED_WORDS), [p.to_json() for p in proposals]
        assert all(p.entry.kind == "inert" and p.questions >= 2 for p in accepted.values())
        written = apply_proposals(router, proposals)
        assert written is not None and written.version == 1

    with make_router(llm_server) as router:  # a new router reads the overlay from the home folder
        learned = [case for case in training if reads(router, *case, today)]
        generalised = [case for case in held_out if reads(router, *case, today)]
        false_rules = [
            case for case in training + held_out
            if router.route(case[0], today=today).route == "rule" and not reads(router, *case, today)
        ]  # fmt: skip
        changed = [q for (q, day), decision in before.items() if router.route(q, today=day) != decision]
        print(
            f"learned misses now answered by rules: {len(learned)} of {len(training)}; held-out: "
            f"{len(generalised)} of {len(held_out)}; false rules: {len(false_rules)}; dev set, corpus and trap "
            f"decisions changed: {len(changed)} of {len(before)}"
        )
        assert len(learned) == len(training)
        assert len(generalised) == len(held_out)
        assert false_rules == [] and changed == []
        assert router.route("阿福北京明天适合出游吗", today=today).route == "llm"
        decision = router.route(training[0][0], today=today)
        assert "overlay v1: inert" in decision.reason


def test_a_word_one_question_supports_or_the_model_read_otherwise_is_not_learned(llm_server):
    today = today_in_china()
    with make_router(llm_server) as router:
        # 鲲鹏 once only; 阿福 twice but a third time the model looked up another day than the question says.
        cases = [("鲲鹏上海明天下雨吗", "上海", "明天"), ("阿福上海明天下雨吗", "上海", "明天"),
                 ("阿福北京后天天气", "北京", "后天"), ("阿福广州明天天气", "广州", "后天")]  # fmt: skip
        played(router, llm_server, cases, today)
        router.ledger.flush()
        verdicts = {p.entry.word: p.rejected for p in learn(router, 30)}
        assert "at least 2 must" in verdicts["鲲鹏"]
        assert "otherwise than the model read them" in verdicts["阿福"]
        assert apply_proposals(router, learn(router, 30)) is None
        assert OverlayStore(router.settings.home_dir() / "overlay").versions() == []


def test_teach_checks_each_word_keeps_every_version_and_rolls_back(llm_server):
    today = today_in_china()
    with make_router(llm_server) as router:
        assert router.route("鹅厂明天天气", today=today).route == "clarify"
        first = teach(router, "alias", "鹅厂", "深圳")
        assert first.overlay.version == 1
        time.sleep(1.1)  # a running router (serve) looks for a new version at most once a second
        decision = router.route("鹅厂明天天气", today=today)
        assert decision.route == "rule" and decision.cities == ["深圳市"] and "alias 鹅厂 → 深圳" in decision.reason
        teach(router, "llm", "报价")
        teach(router, "inert", "鲲鹏")
        for kind, word, target, why in [
            ("inert", "适合", "", "open-ended"), ("inert", "不", "", "cut it apart"), ("inert", "北京", "", "place"),
            ("alias", "大本营", "纳尼亚", "as one place"), ("date", "后儿", "后天", "already a date"),
            ("date", "改天儿", "周末去", "as a date"), ("alias", "公司 总部", "上海", "without spaces"),
        ]:  # fmt: skip
            with pytest.raises(ConfigurationError, match=why):
                teach(router, kind, word, target)
        teach_remove(router, "鲲鹏")
        store = OverlayStore(router.settings.home_dir() / "overlay")
        assert store.versions() == [1, 2, 3, 4] and store.active_version() == 4
        teach_use(router, 2)
    with make_router(llm_server) as router:
        assert router.route("上海明天报价", today=today).route == "llm"
        assert router.route("鲲鹏上海明天下雨吗", today=today).route == "llm"  # v3's word is not in v2


def test_a_broken_overlay_is_one_error_naming_its_line(tmp_path):
    with pytest.raises(ConfigurationError, match=r"v0001\.txt line 3: 'synonym' is not a kind"):
        parse_overlay("# hybrid-weather overlay v1\ninert 鲲鹏\nsynonym 鹅厂 深圳\n", str(tmp_path / "v0001.txt"))
    with pytest.raises(ConfigurationError, match="line 2: write it as `alias WORD TARGET`"):
        parse_overlay("inert 鲲鹏\nalias 鹅厂\n", "v")
    with pytest.raises(ConfigurationError, match="line 3: '鲲鹏' is already given on line 1"):
        parse_overlay("inert 鲲鹏\n\nllm 鲲鹏\n", "v")


def test_the_canary_reads_a_share_of_sessions_through_the_new_version(llm_server, monkeypatch, ledger_kind):
    from hybrid_weather.router.session import Session

    today = today_in_china()
    with make_router(llm_server) as router:
        teach(router, "llm", "报价")
        teach(router, "inert", "鲲鹏")  # v2, made from v1
    monkeypatch.setenv("HYBRID_WEATHER_CANARY", "0.3")
    llm_server.then(answer("上海明天有雨。"))
    llm_server.repeat_last = True  # the questions the old version sends to the model
    with make_router(llm_server) as router:
        sides = []
        for _ in range(400):
            session = Session()
            decision = router.route("鲲鹏上海明天下雨吗", today=today, session=session)
            sides.append(decision.route == "rule")
            # One session stays on its side.
            assert router.route("鲲鹏上海明天下雨吗", today=today, session=session).route == decision.route
        share = sum(sides) / len(sides)
        assert 0.22 < share < 0.38, share
        answered = [router.ask(f"鲲鹏上海明天下雨吗{i}", today=today) for i in range(60)]
        router.ledger.flush()
        db = router.ledger.connect()
        versions = dict(db.execute("SELECT overlay_version, count(*) FROM requests GROUP BY 1").fetchall())
        db.close()
    assert set(versions) == {1, 2} and sum(versions.values()) == len(answered)
    result = CliRunner().invoke(cli, ["savings", "--by", "overlay", "--json", "--include-demo"])  # demo answers
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["groups"]["rows"]
    assert set(rows) == {"v1", "v2"} and rows["v2"]["rule_share"] > rows["v1"]["rule_share"]
    assert "v2" in CliRunner().invoke(cli, ["savings", "--by", "overlay", "--include-demo"]).output


def test_learn_and_teach_from_the_command_line(llm_server, monkeypatch, ledger_kind):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    today = today_in_china()
    with make_router(llm_server) as router:
        played(router, llm_server, [("贾维斯上海明天下雨吗", "上海", "明天"), ("贾维斯北京后天天气", "北京", "后天")],
               today)  # fmt: skip
    runner = CliRunner()
    result = runner.invoke(cli, ["learn", "--json"])
    assert result.exit_code == 0, result.output
    (proposal,) = json.loads(result.output)["proposals"]
    assert (proposal["kind"], proposal["word"], proposal["accepted"], proposal["questions"]) == (
        "inert",
        "贾维斯",
        True,
        2,
    )
    result = runner.invoke(cli, ["learn", "--apply"])
    assert result.exit_code == 0 and "overlay v1 written" in result.output, result.output
    assert "贾维斯" in runner.invoke(cli, ["teach", "list"]).output
    result = runner.invoke(cli, ["teach", "alias", "鹅厂", "深圳"])
    assert result.exit_code == 0 and "overlay v2: alias 鹅厂 → 深圳" in result.output, result.output
    result = runner.invoke(cli, ["learn", "--undo"])
    assert result.exit_code == 0 and "overlay v1 in use again" in result.output, result.output
    result = runner.invoke(cli, ["teach", "inert", "适合"])
    assert result.exit_code == 2 and "open-ended" in result.output and "Traceback" not in result.output


def test_a_running_serve_reads_a_new_version_without_a_restart(tmp_path, llm_server):
    from live_server import post, serving

    runner = CliRunner()
    with serving(tmp_path, llm_server, workers=2) as server:

        def routes() -> set[str]:  # many requests: each of the two workers answers some
            return {post(f"{server.url}/v1/route", {"query": "鹅厂明天天气"})[1]["route"] for _ in range(12)}

        assert routes() == {"clarify"}
        result = runner.invoke(cli, ["teach", "alias", "鹅厂", "深圳"])
        assert result.exit_code == 0, result.output
        deadline = time.monotonic() + 5
        while routes() != {"rule"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert routes() == {"rule"}
        assert runner.invoke(cli, ["teach", "remove", "鹅厂"]).exit_code == 0
        deadline = time.monotonic() + 5
        while routes() != {"clarify"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert routes() == {"clarify"}

"""The generated corpus (tests/corpus.py): rule precision and recall on 20,000 composed weather questions,
and no rule answer on 5,000 composed open-ended ones."""

from corpus import TODAY, trap_corpus, weather_corpus

from hybrid_weather.router import HybridRouter

# Precision first: a wrong rule answer is the worst outcome, so its bar is the higher one.
MIN_PRECISION = 0.995
MIN_RECALL = 0.97


def test_generated_weather_questions_precision_and_recall():
    router = HybridRouter(provider="demo", ledger="off")
    cases = weather_corpus()
    assert len(cases) >= 20_000
    answered = right = 0
    wrong = []
    for case in cases:
        decision = router.route(case.query, today=TODAY)
        if decision.route != "rule":
            continue
        answered += 1
        if (decision.cities, tuple(decision.dates), decision.aspect) == ([case.city], case.dates, case.aspect):
            right += 1
        else:
            wrong.append(f"{case.query!r}: {decision.cities} {decision.dates} {decision.aspect} ({decision.reason})")
    precision, recall = right / answered, right / len(cases)
    print(f"generated corpus: {len(cases)} questions, rule precision {precision:.2%}, recall {recall:.2%}")
    assert precision >= MIN_PRECISION, "\n".join(wrong[:30])
    assert recall >= MIN_RECALL, f"recall {recall:.2%}"


def test_generated_open_ended_questions_never_get_a_rule_answer():
    router = HybridRouter(provider="demo", ledger="off")
    traps = trap_corpus()
    leaks = [case.query for case in traps if router.route(case.query, today=TODAY).route == "rule"]
    print(f"trap corpus: {len(traps)} questions, {len(leaks)} answered by rules")
    assert leaks == []

"""Answering a Decision: rule answers from the weather service, LLM answers, rendering, shadow runs."""

from .answer import Answer, TextPiece, elapsed_ms
from .explain import explanation, explanation_json
from .llm_answers import DEGRADED_NOTE, llm_answer
from .render import Facts, day_label, render
from .rule_answers import RuleAnswerer, clarify_answer

__all__ = [
    "DEGRADED_NOTE",
    "Answer",
    "Facts",
    "RuleAnswerer",
    "TextPiece",
    "clarify_answer",
    "day_label",
    "elapsed_ms",
    "explanation",
    "explanation_json",
    "llm_answer",
    "render",
]

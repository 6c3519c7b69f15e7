"""Property-based fuzzing of the service from its own OpenAPI schema (schemathesis): whatever a client
sends that the schema allows (and much that it does not), no answer is a 5xx and every answer matches
the schema — status code, content type and body. The app runs in-process with the demo provider and a
fake model that answers anything, so a 5xx could only be the service's own fault."""

import pytest
import schemathesis
from fake_answers import answer_anything
from hypothesis import HealthCheck, given, settings

from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.serve import create_app
from hybrid_weather.router.serve.openapi import OPENAPI

from support import FAST_LLM


@pytest.fixture
def api_schema(tmp_path, llm_server):
    answer_anything(llm_server)
    router = HybridRouter(
        settings=Settings(provider="demo", openai_api_key="sk-fuzz", openai_base_url=llm_server.base_url,
                          model="gpt-4o-mini"),
        ledger=str(tmp_path / "ledger.db"), llm_options=FAST_LLM,
    )  # fmt: skip
    yield schemathesis.openapi.from_asgi("/openapi.json", create_app(router))
    router.close()


def test_no_5xx_and_every_answer_matches_the_schema(api_schema):
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert {op.path for op in operations} >= set(OPENAPI["paths"]) - {"/openapi.json"}
    for operation in operations:  # each operation its own property: its own examples, its own shrinking

        @given(case=operation.as_strategy())
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def answers_within_the_schema(case):
            case.call_and_validate()

        answers_within_the_schema()

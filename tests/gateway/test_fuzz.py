"""Fuzz the gateway from its own OpenAPI document: no 5xx, every response matches its schema."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, start_gateway

AGENT_ROUTES = {
    ("POST", "/v1/prompts"),
    ("GET", "/v1/prompts/{prompt_id}/result"),
    ("POST", "/v1/prompts/{prompt_id}/cancel"),
    ("POST", "/v1/runs/{run_id}/cancel"),
}


@pytest.fixture(scope="module")
def fuzzed_gateway(tmp_path_factory):
    running = start_gateway(tmp_path_factory.mktemp("fuzz"))
    yield running
    running.stop()


def _operations():
    """The operations of the OpenAPI document, read from a gateway started for the purpose."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        running = start_gateway(Path(tmp))
        try:
            api = schemathesis.openapi.from_url(f"{running.url}/openapi.json")
            return [
                (op.method.upper(), op.path, op)
                for op in (result.ok() for result in api.get_all_operations())
            ]
        finally:
            running.stop()


OPERATIONS = _operations()


@pytest.mark.parametrize(
    "operation", [op for _, _, op in OPERATIONS], ids=[f"{m} {p}" for m, p, _ in OPERATIONS]
)
def test_no_server_errors_and_responses_match_the_schema(operation, fuzzed_gateway):
    token = (
        AGENT_TOKEN
        if (operation.method.upper(), operation.path) in AGENT_ROUTES
        else (DEVICE_TOKEN)
    )

    @given(case=operation.as_strategy())
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    def check(case):
        if operation.path in ("/v1/events", "/v1/prompts/{prompt_id}/result"):
            case.query = {**(case.query or {}), "wait": 0}  # waking is tested elsewhere
        case.call_and_validate(
            base_url=fuzzed_gateway.url,
            headers={"Authorization": f"Bearer {token}"},
            checks=[
                not_a_server_error,
                status_code_conformance,
                content_type_conformance,
                response_schema_conformance,
            ],
        )

    check()

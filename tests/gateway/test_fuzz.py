"""Fuzz the gateway from its own OpenAPI document: no 5xx, every response matches its schema,
and a request the document calls valid is not refused as invalid (#39: schemathesis' ST202
found blank texts, cursors, URLs and an undocumented 404 where the two disagreed)."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from app.gateway.http.endpoints import ENDPOINTS
from app.protocol.text import fold
from tests.support import ADMIN_TOKEN, AGENT_TOKEN, DEVICE_TOKEN, start_gateway

TOKENS = {"agent": AGENT_TOKEN, "device": DEVICE_TOKEN, "admin": ADMIN_TOKEN}
ROLES = {(e.method, e.path): e.role for e in ENDPOINTS}
# /mcp is JSON-RPC behind one path: whether a message is accepted depends on the session an
# `initialize` opened, which OpenAPI cannot state. Its responses are still checked.
STATEFUL = "/mcp"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))  # a deeper probe: FUZZ_EXAMPLES=2000


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
    role = ROLES[(operation.method.upper(), operation.path)]
    headers = {"Authorization": f"Bearer {TOKENS[role]}"} if role else {}
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    ]
    if operation.path != STATEFUL:
        checks.append(positive_data_acceptance)

    @given(case=operation.as_strategy(generation_mode=schemathesis.GenerationMode.POSITIVE))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def check(case):
        if operation.path in ("/v1/events", "/v1/prompts/{prompt_id}/result", "/v1/late-answers"):
            case.query = {**(case.query or {}), "wait": 0}  # waking is tested elsewhere
        if operation.path == "/v1/late-answers/claim" and isinstance(case.body, dict):
            case.body["wait"] = 0
        if operation.path == "/v1/events":
            case.query.pop("after", None)  # any number is a cursor; another gateway's is 410
        if (operation.method.upper(), operation.path) == ("POST", "/v1/prompts"):
            assume(_unique_as_the_contract_says(case.body))
            assume(_kind_as_the_contract_says(case.body))
        case.call_and_validate(base_url=fuzzed_gateway.url, headers=headers, checks=checks)

    check()


def _unique_as_the_contract_says(body: object) -> bool:
    """What JSON Schema cannot say and the document's descriptions do: question ids unique,
    option labels unique ignoring case (and the spaces around them)."""
    if not isinstance(body, dict) or not isinstance(body.get("questions"), list):
        return True
    questions = [q for q in body["questions"] if isinstance(q, dict)]
    ids = [q.get("id") for q in questions]
    if len(ids) != len(set(map(str, ids))):
        return False
    for question in questions:
        labels = [o.get("label") for o in question.get("options") or [] if isinstance(o, dict)]
        folded = [fold(label) for label in labels if isinstance(label, str)]
        if len(folded) != len(set(folded)):
            return False
    return True


def _kind_as_the_contract_says(body: object) -> bool:
    """What the descriptions of `kind` and `stop` say (v1.5): a question carries no stop; a
    permission or a plan carries one, is one single-select question, and its `always` is
    one of its labels."""
    if not isinstance(body, dict):
        return True
    kind, stop = body.get("kind", "question"), body.get("stop")
    if kind == "question":
        return stop is None
    questions = body.get("questions")
    if not isinstance(stop, dict) or not isinstance(questions, list) or len(questions) != 1:
        return False
    [question] = questions
    if not isinstance(question, dict) or question.get("multiSelect"):
        return False
    labels = [o.get("label") for o in question.get("options") or [] if isinstance(o, dict)]
    return stop.get("always") is None or stop.get("always") in labels

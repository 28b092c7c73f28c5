"""Control characters in ids and keys are refused with 422 naming the field, on every store
(#52): PostgreSQL answered 500 to a NUL in a path id, a query string, a sessionKey, an agentId,
a requestId or a name, where SQLite answered 4xx."""

from __future__ import annotations

import pytest

from tests.support import prompt_body

pytestmark = pytest.mark.both_stores


def _refused(response, field: str | None = None) -> None:
    assert response.status_code == 422, (response.status_code, response.text)
    error = response.json()["error"]
    if field is not None:
        assert field in error["message"] or any(f["path"] == field for f in error["fields"])


@pytest.mark.parametrize("field", ["sessionKey", "agentId", "requestId", "runId"])
@pytest.mark.parametrize("control", ["\x00", "\n", "\x1b"])
def test_a_control_character_in_an_id_or_key_of_a_new_prompt(gateway, field, control):
    body = prompt_body(**{field: f"shop{control}x"})
    if field == "sessionKey":
        body["sessionKey"] = f"shop{control}x"
    _refused(gateway.agent.post("/v1/prompts", json=body), field)
    assert gateway.device.get("/v1/prompts", params={"status": "all"}).json()["prompts"] == []


def test_a_nul_in_free_text_is_kept_on_every_store_and_refused_in_a_name(gateway):
    """Text a person reads may hold anything JSON can (both stores keep it as JSON text); a
    name becomes a column, so it holds no control character."""
    body = prompt_body()
    body["questions"][0]["question"] = "Where\u0000?"
    created = gateway.agent.post("/v1/prompts", json=body)
    assert created.status_code == 201, created.text
    prompt = created.json()
    assert (
        gateway.device.get(f"/v1/prompts/{prompt['id']}").json()["questions"][0]["question"]
        == "Where\u0000?"
    )
    answer = {"answers": {"deploy_target": ["Prod\u0000"]}}
    answered = gateway.device.post(f"/v1/prompts/{prompt['id']}/answer", json=answer)
    assert answered.status_code == 200, answered.text
    _refused(gateway.admin.post("/v1/pairings", json={"name": "Pixel\u0000"}), "name")


@pytest.mark.parametrize(
    ("method", "path", "role"),
    [
        ("GET", "/v1/prompts/pr_%00x", "device"),
        ("GET", "/v1/prompts/pr_%00x/result", "agent"),
        ("POST", "/v1/prompts/pr_%00x/cancel", "agent"),
        ("POST", "/v1/prompts/pr_%00x/dismiss", "device"),
        ("GET", "/v1/prompts?sessionKey=a%00b", "device"),
        ("GET", "/v1/late-answers?sessionKey=a%00b", "agent"),
        ("GET", "/v1/events?after=1%00", "device"),
        ("POST", "/v1/late-answers/pr_%00x/ack", "agent"),
        ("DELETE", "/v1/devices/dv_%00x", "admin"),
        ("POST", "/v1/runs/r%00n/cancel", "agent"),
    ],
)
def test_a_nul_in_the_path_or_the_query_is_refused(gateway, method, path, role):
    caller = getattr(gateway, role)
    _refused(caller.request(method, path))


def test_claims_refuse_control_characters(gateway):
    body = {"sessionKey": "main", "claimId": "cl\u0000"}
    _refused(gateway.agent.post("/v1/late-answers/claim", json=body), "claimId")

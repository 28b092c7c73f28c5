"""Creating, reading and listing prompts over real HTTP: rules, roles and errors."""

from __future__ import annotations

import pytest

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, OTHER_AGENT_TOKEN, prompt_body

pytestmark = pytest.mark.both_stores  # the same rules on SQLite and PostgreSQL


def test_health_needs_no_token(gateway):
    response = gateway.client(None).get("/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_create_returns_the_record(gateway):
    response = gateway.agent.post(
        "/v1/prompts", json=prompt_body(agentId="build-bot", runId="run_42", timeoutSeconds=60)
    )
    assert response.status_code == 201
    record = response.json()
    assert record["id"].startswith("pr_")
    assert record["status"] == "pending"
    assert record["sessionKey"] == "main"
    assert record["agentId"] == "build-bot"
    assert record["runId"] == "run_42"
    assert record["version"] == 1
    assert record["answers"] is None and record["resolvedAt"] is None
    assert record["resolvedBy"] is None
    assert record["questions"][0]["options"][1] == {"label": "Production"}
    assert record["questions"][0]["multiSelect"] is False
    assert record["createdAt"].endswith("Z") and record["expiresAt"].endswith("Z")
    assert gateway.device.get(f"/v1/prompts/{record['id']}").json() == record


def test_expires_at_follows_the_clamped_timeout(gateway):
    from datetime import datetime

    record = gateway.create(timeoutSeconds=5)  # clamped to 30
    created = datetime.fromisoformat(record["createdAt"])
    expires = datetime.fromisoformat(record["expiresAt"])
    assert (expires - created).total_seconds() == 30


def test_idempotent_create_returns_the_same_prompt(gateway):
    first = gateway.agent.post("/v1/prompts", json=prompt_body(requestId="req-1"))
    again = gateway.agent.post("/v1/prompts", json=prompt_body(requestId="req-1"))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    events = gateway.device.get("/v1/events", params={"after": "0", "wait": 0}).json()["events"]
    assert [e["type"] for e in events] == ["prompt.created"]


def test_one_pending_prompt_per_session(gateway):
    first = gateway.create()
    second = gateway.agent.post("/v1/prompts", json=prompt_body(requestId="other"))
    assert second.status_code == 409
    error = second.json()["error"]
    assert error["code"] == "pending_exists"
    assert error["promptId"] == first["id"]
    # another agent in the same session, or another session, may ask
    assert gateway.agent.post("/v1/prompts", json=prompt_body(agentId="x")).status_code == 201
    assert gateway.agent.post("/v1/prompts", json=prompt_body(session="s2")).status_code == 201


def test_a_session_prompt_past_its_deadline_gives_way_to_the_next_create(gateway):
    """The one pending prompt per session is met at the insert (#27): when the one in the way
    is overdue (its timer not run yet), it expires there and then, and the new one is made."""
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    first = gateway.create(timeoutSeconds=60)
    gateway.clock._now += 61_000  # time passes without telling the timer
    response = gateway.agent.post("/v1/prompts", json=prompt_body(requestId="after"))
    assert response.status_code == 201, response.text
    second = response.json()
    assert second["id"] != first["id"] and second["status"] == "pending"
    events = gateway.device.get("/v1/events", params={"after": cursor, "wait": 0}).json()
    assert [(e["type"], e["prompt"]["id"], e["prompt"]["status"]) for e in events["events"]] == [
        ("prompt.created", first["id"], "pending"),
        ("prompt.resolved", first["id"], "expired"),
        ("prompt.created", second["id"], "pending"),
    ]
    # and a create while that one is pending is refused, naming it, with nothing written
    again = gateway.agent.post("/v1/prompts", json=prompt_body(requestId="again"))
    assert again.status_code == 409 and again.json()["error"]["promptId"] == second["id"]
    pending = gateway.device.get("/v1/prompts").json()["prompts"]
    assert [p["id"] for p in pending] == [second["id"]]


def test_non_main_session_is_forbidden(gateway):
    response = gateway.agent.post("/v1/prompts", json=prompt_body(sessionKind="subagent"))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "not_main_session"


def test_invalid_prompt_names_each_field(gateway):
    body = prompt_body()
    body["questions"][0]["options"] = [{"label": "Only one"}]
    body["questions"][0]["id"] = "Deploy Target"
    body["colour"] = "red"
    response = gateway.agent.post("/v1/prompts", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_prompt"
    fields = {f["path"]: f["message"] for f in error["fields"]}
    assert fields["questions[0].options"] == "2 to 4 options allowed, got 1"
    assert fields["questions[0].id"].startswith("must be snake_case")
    assert fields["colour"] == "unknown property: the contract does not define it"
    assert gateway.device.get("/v1/prompts").json()["prompts"] == []


def test_snake_case_property_names_are_not_accepted(gateway):
    body = prompt_body()
    body["session_key"] = body.pop("sessionKey")
    response = gateway.agent.post("/v1/prompts", json=body)
    assert response.status_code == 422
    paths = {f["path"] for f in response.json()["error"]["fields"]}
    assert paths == {"sessionKey", "session_key"}


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{not json", "not valid JSON"),
        (b"", "a JSON body is required"),
        (b"[]", "must be an object"),
    ],
)
def test_malformed_bodies(gateway, content, message):
    response = gateway.agent.post(
        "/v1/prompts", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert message in response.json()["error"]["message"]


def test_json_without_content_type_is_read(gateway):
    import json

    response = gateway.agent.post("/v1/prompts", content=json.dumps(prompt_body()).encode())
    assert response.status_code == 201


def test_form_encoded_body_gets_a_clear_error(gateway):
    response = gateway.agent.post(
        "/v1/prompts",
        content=b'{"sessionKey": "x"}',
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 422
    assert "Content-Type: application/json" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "method, path, token",
    [
        ("POST", "/v1/prompts", DEVICE_TOKEN),
        ("GET", "/v1/prompts", AGENT_TOKEN),
        ("GET", "/v1/events", AGENT_TOKEN),
        ("GET", "/v1/prompts/pr_x/result", DEVICE_TOKEN),
        ("POST", "/v1/prompts/pr_x/answer", AGENT_TOKEN),
        ("POST", "/v1/prompts/pr_x/dismiss", AGENT_TOKEN),
        ("POST", "/v1/prompts/pr_x/cancel", DEVICE_TOKEN),
        ("POST", "/v1/runs/run_1/cancel", DEVICE_TOKEN),
        ("GET", "/v1/prompts/pr_x/text", AGENT_TOKEN),
    ],
)
def test_roles(gateway, method, path, token):
    wrong = gateway.client(token).request(method, path, json={})
    assert wrong.status_code == 403
    assert wrong.json()["error"]["code"] == "forbidden"
    for anonymous in (gateway.client(None), gateway.client("not-a-token")):
        response = anonymous.request(method, path, json={})
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"


def test_an_agent_cannot_see_another_agents_prompt(gateway):
    record = gateway.create()
    other = gateway.client(OTHER_AGENT_TOKEN)
    assert other.get(f"/v1/prompts/{record['id']}/result", params={"wait": 0}).status_code == 404
    assert other.post(f"/v1/prompts/{record['id']}/cancel").status_code == 404


def test_body_over_64_kib_is_413(gateway):
    body = prompt_body()
    body["questions"][0]["question"] = "x" * (64 * 1024)
    response = gateway.agent.post("/v1/prompts", json=body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_chunked_body_over_64_kib_is_413(gateway):
    def chunks():
        yield b'{"sessionKey": "main", "pad": "'
        for _ in range(70):
            yield b"x" * 1024
        yield b'"}'

    response = gateway.agent.post(
        "/v1/prompts", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413


def test_unknown_prompt_is_404(gateway):
    for response in (
        gateway.device.get("/v1/prompts/pr_nope"),
        gateway.device.get("/v1/prompts/pr_nope/text"),
        gateway.device.post("/v1/prompts/pr_nope/answer", json={"answers": {}}),
        gateway.device.post("/v1/prompts/pr_nope/dismiss", json={}),
        gateway.agent.get("/v1/prompts/pr_nope/result", params={"wait": 0}),
        gateway.agent.post("/v1/prompts/pr_nope/cancel"),
    ):
        assert response.status_code == 404, response.request.url
        assert response.json()["error"]["code"] == "not_found"


def test_list_newest_first_with_filters_and_paging(gateway):
    ids = [gateway.create(session=f"s{i}")["id"] for i in range(5)]
    gateway.device.post(f"/v1/prompts/{ids[0]}/dismiss", json={})
    page = gateway.device.get("/v1/prompts").json()
    assert [p["id"] for p in page["prompts"]] == ids[:0:-1]  # pending only, newest first
    assert page["cursor"] == "6" and page["serverTime"].endswith("Z")
    every = gateway.device.get("/v1/prompts", params={"status": "all", "limit": 2}).json()
    assert [p["id"] for p in every["prompts"]] == [ids[4], ids[3]]
    older = gateway.device.get(
        "/v1/prompts", params={"status": "all", "limit": 10, "before": ids[3]}
    ).json()
    assert [p["id"] for p in older["prompts"]] == [ids[2], ids[1], ids[0]]
    one = gateway.device.get("/v1/prompts", params={"status": "all", "sessionKey": "s0"}).json()
    assert [(p["id"], p["status"]) for p in one["prompts"]] == [(ids[0], "dismissed")]


@pytest.mark.parametrize(
    "path, params, field",
    [
        ("/v1/prompts", {"limit": 501}, "limit"),
        ("/v1/prompts", {"limit": 0}, "limit"),
        ("/v1/prompts", {"status": "open"}, "status"),
        ("/v1/events", {"wait": 61}, "wait"),
        ("/v1/events", {"wait": -1}, "wait"),
        ("/v1/events", {"limit": 501}, "limit"),
        ("/v1/events", {"after": "abc"}, "after"),
        ("/v1/events", {"wait": "soon"}, "wait"),
    ],
)
def test_query_limits(gateway, path, params, field):
    response = gateway.device.get(path, params=params)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert [f["path"] for f in error["fields"]] == [field]


def test_result_wait_over_60_is_rejected(gateway):
    record = gateway.create()
    response = gateway.agent.get(f"/v1/prompts/{record['id']}/result", params={"wait": 61})
    assert response.status_code == 422
    assert response.json()["error"]["fields"][0] == {
        "path": "wait",
        "message": "must be at most 60",
    }


def test_text_rendering(gateway):
    record = gateway.create()
    response = gateway.device.get(f"/v1/prompts/{record['id']}/text")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text.startswith("Target — Where should this deploy?\n1. Staging (Recommended)")


def test_openapi_describes_every_route(gateway):
    spec = gateway.client(None).get("/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert routes == {
        ("GET", "/v1/health"),
        ("POST", "/v1/prompts"),
        ("POST", "/v1/prompts/{prompt_id}/engaged"),
        ("PUT", "/v1/prompts/{prompt_id}/draft"),
        ("GET", "/v1/prompts"),
        ("GET", "/v1/prompts/{prompt_id}"),
        ("GET", "/v1/prompts/{prompt_id}/result"),
        ("POST", "/v1/prompts/{prompt_id}/cancel"),
        ("POST", "/v1/runs/{run_id}/cancel"),
        ("GET", "/v1/prompts/{prompt_id}/text"),
        ("GET", "/v1/events"),
        ("POST", "/v1/prompts/{prompt_id}/answer"),
        ("POST", "/v1/prompts/{prompt_id}/dismiss"),
        ("POST", "/v1/prompts/{prompt_id}/reply"),
        ("POST", "/v1/prompts/{prompt_id}/late-answer"),
        ("GET", "/v1/late-answers"),
        ("POST", "/v1/late-answers/claim"),
        ("POST", "/v1/late-answers/{prompt_id}/ack"),
        ("POST", "/v1/pairings"),
        ("POST", "/v1/devices"),
        ("GET", "/v1/devices"),
        ("DELETE", "/v1/devices/{device_id}"),
        ("POST", "/mcp"),
        ("GET", "/mcp"),
        ("DELETE", "/mcp"),
        ("GET", "/a/{token}"),
        ("POST", "/a/{token}"),
        ("POST", "/v1/people"),
        ("GET", "/v1/people"),
        ("DELETE", "/v1/people/{person_id}"),
        ("POST", "/v1/people/{person_id}/agent-tokens"),
    }
    create = spec["paths"]["/v1/prompts"]["post"]
    assert set(create["responses"]) >= {"200", "201", "401", "403", "409", "413", "422"}
    schema = spec["components"]["schemas"]["CreatePromptRequest"]
    assert "sessionKey" in schema["properties"] and schema["additionalProperties"] is False


def test_ids_sort_in_creation_order_even_within_one_millisecond():
    from app.gateway.core.ids import new_prompt_id

    ids = [new_prompt_id(1_000) for _ in range(100)]
    assert ids == sorted(ids) and len(set(ids)) == 100
    assert new_prompt_id(999) > ids[-1]  # a clock that steps back does not reorder

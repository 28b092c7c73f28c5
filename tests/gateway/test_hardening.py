"""The faults a review found trying to break the gateway (#14), each held to a test over HTTP:
bad input is a 4xx with a JSON error code, a failed write moves nothing, a key reused for a
different request is a 409, and routes outside the table answer in the contract's shape."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, prompt_body

JSON = {"Content-Type": "application/json"}
DEEP = b'{"a":' + b"[" * 10_000 + b"]" * 10_000 + b"}"
DEEP_ARRAY = b"[" * 10_000 + b"]" * 10_000
DEEP_ANSWER = b'{"answers": {"deploy_target": ' + b"[" * 900 + b"]" * 900 + b"}}"
SURROGATE = "\\ud800"  # a JSON escape of half a character, which no store or screen can hold


def _raw_prompt(**replace: str) -> bytes:
    """A prompt's JSON text with some values swapped for raw JSON text (escapes kept)."""
    body = prompt_body("s-raw")
    text = json.dumps(body)
    for original, raw in replace.items():
        text = text.replace(json.dumps(original), raw)
    return text.encode()


def _post(gateway, token: str, path: str, content: bytes) -> httpx.Response:
    return gateway.client(token).post(path, content=content, headers=JSON)


def _assert_refused(response: httpx.Response, status: int = 422) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] and error["message"]
    return error


# ---- 500s for bad input (#14, 2) --------------------------------------------------------------


@pytest.mark.parametrize("action", ["answer", "reply", "dismiss"])
def test_a_null_body_is_refused_not_a_crash(gateway, action):
    record = gateway.create()
    error = _assert_refused(
        _post(gateway, DEVICE_TOKEN, f"/v1/prompts/{record['id']}/{action}", b"null")
    )
    assert "must be an object" in error["message"] and "null" in error["message"]
    assert gateway.device.get(f"/v1/prompts/{record['id']}").json()["status"] == "pending"


def test_a_null_body_on_cancel_is_refused_and_the_prompt_stays(gateway):
    record = gateway.create()
    _assert_refused(_post(gateway, AGENT_TOKEN, f"/v1/prompts/{record['id']}/cancel", b"null"))
    _assert_refused(_post(gateway, AGENT_TOKEN, "/v1/runs/r1/cancel", b"null"))
    assert gateway.device.get(f"/v1/prompts/{record['id']}").json()["status"] == "pending"


@pytest.mark.parametrize(
    "token, path",
    [
        (AGENT_TOKEN, "/v1/prompts"),
        (DEVICE_TOKEN, "/v1/prompts/{id}/answer"),
        (DEVICE_TOKEN, "/v1/prompts/{id}/reply"),
        (DEVICE_TOKEN, "/v1/prompts/{id}/dismiss"),
        (AGENT_TOKEN, "/v1/prompts/{id}/cancel"),
        (None, "/v1/devices"),
    ],
)
@pytest.mark.parametrize(
    "content", [DEEP, DEEP_ARRAY, DEEP_ANSWER], ids=["deep-object", "deep-array", "900-deep"]
)
def test_ten_thousand_levels_deep_is_refused(gateway, token, path, content):
    record = gateway.create(sessionKey=f"deep-{path}-{len(content)}")
    response = gateway.client(token).post(
        path.format(id=record["id"]), content=content, headers=JSON
    )
    error = _assert_refused(response)
    assert "nested deeper" in error["message"] or "must be an object" in error["message"]


def test_a_timeout_with_five_thousand_digits_is_refused(gateway):
    content = _raw_prompt()[:-1] + b', "timeoutSeconds": ' + b"9" * 5000 + b"}"
    error = _assert_refused(_post(gateway, AGENT_TOKEN, "/v1/prompts", content))
    assert error["code"] == "invalid_prompt"
    assert "digits" in error["message"]


@pytest.mark.parametrize(
    "field",
    ["s-raw", "Target", "Where should this deploy?", "Production", "Safe default"],
    ids=["sessionKey", "header", "question", "label", "description"],
)
def test_lone_surrogates_in_a_prompt_are_refused(gateway, field):
    content = _raw_prompt(**{field: f'"x{SURROGATE}y"'})
    error = _assert_refused(_post(gateway, AGENT_TOKEN, "/v1/prompts", content))
    assert error["code"] == "invalid_prompt"
    assert "lone surrogate" in error["message"]
    assert gateway.device.get("/v1/prompts").json()["prompts"] == []


def test_lone_surrogates_in_identifiers_and_answers_are_refused(gateway):
    content = _raw_prompt()[:-1] + f', "requestId": "r{SURROGATE}"}}'.encode()
    _assert_refused(_post(gateway, AGENT_TOKEN, "/v1/prompts", content))
    record = gateway.create()
    path = f"/v1/prompts/{record['id']}"
    bodies = {
        "answer": f'{{"answers": {{"deploy_target": ["a{SURROGATE}"]}}}}',
        "reply": f'{{"text": "a{SURROGATE}"}}',
        "dismiss": f'{{"deviceId": "d{SURROGATE}"}}',
    }
    bodies["answer-key"] = (
        f'{{"answers": {{"deploy_target": ["Production"]}}, "idempotencyKey": "{SURROGATE}"}}'
    )
    for action, body in bodies.items():
        response = _post(gateway, DEVICE_TOKEN, f"{path}/{action.split('-')[0]}", body.encode())
        assert "lone surrogate" in _assert_refused(response)["message"]
    assert gateway.device.get(path).json()["status"] == "pending"


@pytest.mark.parametrize("after", ["%C2%B2", "%D9%A1", "%EF%BC%91", "-1", "1e3", "abc"])
def test_cursors_are_ascii_digits_only(gateway, after):
    gateway.create()
    response = gateway.device.get(f"/v1/events?after={after}&wait=0")
    error = _assert_refused(response)
    assert error["fields"][0]["path"] == "after"


def test_invalid_utf8_on_cancel_is_the_same_422_as_everywhere(gateway):
    record = gateway.create()
    content = b'{"reason": "\xff\xfe"}'
    for token, path in [
        (AGENT_TOKEN, f"/v1/prompts/{record['id']}/cancel"),
        (AGENT_TOKEN, "/v1/runs/r1/cancel"),
        (DEVICE_TOKEN, f"/v1/prompts/{record['id']}/dismiss"),
    ]:
        error = _assert_refused(_post(gateway, token, path, content))
        assert "not UTF-8" in error["fields"][0]["message"]


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", "\u200b \u2060\u00ad"])
@pytest.mark.parametrize("field", ["header", "question", "label"])
def test_invisible_only_text_is_blank(gateway, field, invisible):
    body = prompt_body("invisible")
    question = body["questions"][0]
    if field == "label":
        question["options"][1]["label"] = invisible
    else:
        question[field] = invisible
    error = _assert_refused(gateway.agent.post("/v1/prompts", json=body))
    assert any("blank" in f["message"] for f in error["fields"]), error


def test_head_health_and_json_for_unknown_routes_and_methods(gateway):
    assert gateway.client(None).head("/v1/health").status_code == 200
    missing = gateway.device.get("/v1/nothing")
    assert _assert_refused(missing, 404)["code"] == "not_found"
    wrong = gateway.device.put("/v1/prompts")
    assert _assert_refused(wrong, 405)["code"] == "method_not_allowed"


# ---- keys reused with another body (#14, 7) ---------------------------------------------------


def test_an_idempotency_key_reused_for_another_answer_is_a_conflict(gateway):
    record = gateway.create()
    path = f"/v1/prompts/{record['id']}"
    first = {"answers": {"deploy_target": ["Production"]}, "idempotencyKey": "k1"}
    answered = gateway.device.post(f"{path}/answer", json=first)
    assert answered.status_code == 200
    retry = gateway.device.post(f"{path}/answer", json=first)
    assert retry.status_code == 200 and retry.json() == answered.json()
    other = {"answers": {"deploy_target": ["Staging (Recommended)"]}, "idempotencyKey": "k1"}
    assert _assert_refused(gateway.device.post(f"{path}/answer", json=other), 409)["code"] == (
        "idempotency_conflict"
    )
    dismiss = gateway.device.post(f"{path}/dismiss", json={"idempotencyKey": "k1"})
    assert _assert_refused(dismiss, 409)["code"] == "idempotency_conflict"
    assert gateway.device.get(path).json()["answers"] == {"deploy_target": ["Production"]}


def test_a_request_id_reused_for_another_prompt_is_a_conflict(gateway):
    made = gateway.agent.post("/v1/prompts", json=prompt_body("a", requestId="r1"))
    assert made.status_code == 201
    again = gateway.agent.post("/v1/prompts", json=prompt_body("a", requestId="r1"))
    assert again.status_code == 200 and again.json()["id"] == made.json()["id"]
    other = prompt_body("b", requestId="r1")
    refused = gateway.agent.post("/v1/prompts", json=other)
    assert _assert_refused(refused, 409)["code"] == "idempotency_conflict"
    assert len(gateway.device.get("/v1/prompts").json()["prompts"]) == 1


# ---- a failed write moves nothing (#14, 1) ----------------------------------------------------


def test_a_write_the_store_cannot_take_is_a_503_and_the_cursor_stays(gateway):
    """Disk full, made real with SQLite's own page limit on the gateway's connection."""
    gateway.create(sessionKey="before")
    listed = gateway.device.get("/v1/prompts").json()
    cursor = listed["cursor"]
    db = gateway.server.app.state.gateway.store.connection
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count={pages}")
    try:
        big = prompt_body(
            "full",
            questions=[
                {**prompt_body()["questions"][0], "id": f"q{i}", "question": "x" * 1000}
                for i in range(3)
            ],
        )
        failures = 0
        for i in range(40):  # until the file must grow
            body = {**big, "sessionKey": f"full-{i}"}
            response = gateway.agent.post("/v1/prompts", json=body)
            if response.status_code == 503:
                assert _assert_refused(response, 503)["code"] == "unavailable"
                failures += 1
                break
            assert response.status_code == 201
        assert failures == 1, "the page limit never made a write fail"
        after = gateway.device.get("/v1/prompts").json()
        stored = db.execute("SELECT MAX(seq) FROM events").fetchone()[0]
        assert after["cursor"] == str(stored)  # what is served is what the store holds
        poll = gateway.device.get(f"/v1/events?after={after['cursor']}&wait=0")
        assert poll.json()["events"] == [] and poll.json()["cursor"] == after["cursor"]
    finally:
        db.execute("PRAGMA max_page_count=4294967294")
    resumed = gateway.device.get(f"/v1/events?after={after['cursor']}&wait=0")
    assert resumed.json()["events"] == []
    made = gateway.create(sessionKey="after")
    heard = gateway.device.get(f"/v1/events?after={after['cursor']}&wait=5").json()
    assert [e["prompt"]["id"] for e in heard["events"]] == [made["id"]]
    assert int(cursor) < int(heard["cursor"])


def test_a_write_failing_after_its_event_leaves_no_trace_in_memory(gateway):
    """The failure comes after the event row was written (the idempotency key's row), the
    place where the served cursor once ran ahead of the store."""
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    db = gateway.server.app.state.gateway.store.connection
    db.execute(
        "CREATE TEMP TRIGGER fail_keys BEFORE INSERT ON idempotency "
        "BEGIN SELECT RAISE(ABORT, 'disk full (test)'); END"
    )
    try:
        response = gateway.agent.post("/v1/prompts", json=prompt_body("k", requestId="r9"))
        assert _assert_refused(response, 503)["code"] == "unavailable"
    finally:
        db.execute("DROP TRIGGER temp.fail_keys")
    listed = gateway.device.get("/v1/prompts").json()
    assert listed["cursor"] == cursor and listed["prompts"] == []
    assert gateway.device.get(f"/v1/events?after={cursor}&wait=0").json()["events"] == []
    made = gateway.agent.post("/v1/prompts", json=prompt_body("k", requestId="r9"))
    assert made.status_code == 201
    heard = gateway.device.get(f"/v1/events?after={cursor}&wait=5").json()["events"]
    assert [e["prompt"]["id"] for e in heard] == [made.json()["id"]]


# ---- a busy store (#14, 5) --------------------------------------------------------------------


def test_a_store_locked_by_another_process_is_a_503_and_reads_go_on(gateway):
    import sqlite3

    gateway.create(sessionKey="before")
    other = sqlite3.connect(gateway.data_dir / "gateway.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # holds the write lock, as a backup or a shell could
    try:
        refused = gateway.agent.post("/v1/prompts", json=prompt_body("while-locked"))
        assert _assert_refused(refused, 503)["code"] == "unavailable"
        assert "nothing changed" in refused.json()["error"]["message"]
        assert gateway.client(None).get("/v1/health").status_code == 200
        listed = gateway.device.get("/v1/prompts").json()
        assert [p["sessionKey"] for p in listed["prompts"]] == ["before"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert gateway.agent.post("/v1/prompts", json=prompt_body("while-locked")).status_code == 201


@pytest.mark.parametrize("query", ["status=", "sessionKey=", "before=", "limit="])
def test_a_query_parameter_given_empty_is_refused_by_name(gateway, query):
    """`?status=` was read as not given (#39): an empty value is refused, naming the field."""
    refused = gateway.device.get(f"/v1/prompts?{query}")
    error = _assert_refused(refused)
    name = query.rstrip("=")
    assert error["fields"][0]["path"] == name, error


def test_a_pairing_for_an_unknown_person_is_the_documented_404(gateway):
    document = gateway.client(None).get("/openapi.json").json()
    assert "404" in document["paths"]["/v1/pairings"]["post"]["responses"]
    refused = gateway.admin.post("/v1/pairings", json={"personId": "ps_nobody"})
    assert _assert_refused(refused, 404)["code"] == "not_found"

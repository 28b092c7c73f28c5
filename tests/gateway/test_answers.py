"""Answering, dismissing, replying and cancelling: first answer wins, retries are safe."""

from __future__ import annotations

import threading

import pytest

from tests.support import prompt_body

THREE = prompt_body(
    questions=[
        {
            "id": "target",
            "header": "Target",
            "question": "Where?",
            "options": [{"label": "Staging"}, {"label": "Production"}],
        },
        {
            "id": "features",
            "header": "Features",
            "question": "Which?",
            "multiSelect": True,
            "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Dark mode"}],
        },
        {
            "id": "when",
            "header": "When",
            "question": "When?",
            "options": [{"label": "Now"}, {"label": "Tonight"}],
        },
    ]
)

pytestmark = pytest.mark.both_stores  # the same rules on SQLite and PostgreSQL


def _create(gateway, body=None):
    response = gateway.agent.post("/v1/prompts", json=body or prompt_body())
    assert response.status_code == 201
    return response.json()


def test_answer_is_canonicalised_and_recorded(gateway):
    record = _create(gateway, THREE)
    response = gateway.device.post(
        f"/v1/prompts/{record['id']}/answer",
        json={
            "answers": {
                "target": [" production "],
                "features": ["search", "my own"],
                "when": ["Now"],
            },
            "deviceId": "phone-1",
        },
    )
    assert response.status_code == 200
    answered = response.json()
    assert answered["status"] == "answered" and answered["version"] == 2
    assert answered["answers"] == {
        "target": ["Production"],
        "features": ["Search", "my own"],
        "when": ["Now"],
    }
    assert answered["resolvedBy"] == {"kind": "device", "deviceId": "phone-1"}
    assert answered["resolvedAt"].endswith("Z")
    result = gateway.agent.get(f"/v1/prompts/{record['id']}/result", params={"wait": 0}).json()
    assert result == {"status": "answered", "answers": {"answers": answered["answers"]}}


def test_invalid_answer_leaves_the_prompt_pending(gateway):
    record = _create(gateway, THREE)
    response = gateway.device.post(
        f"/v1/prompts/{record['id']}/answer",
        json={"answers": {"target": ["Staging", "Production"], "features": [], "colour": ["red"]}},
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_answer"
    assert {f["path"] for f in error["fields"]} == {
        "answers.target",
        "answers.features",
        "answers.when",
        "answers.colour",
    }
    assert gateway.device.get(f"/v1/prompts/{record['id']}").json()["status"] == "pending"


def test_answer_body_must_be_well_formed(gateway):
    record = _create(gateway)
    response = gateway.device.post(
        f"/v1/prompts/{record['id']}/answer", json={"answers": [], "extra": 1}
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_answer"


def test_two_devices_at_once_exactly_one_wins(gateway):
    record = _create(gateway)
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def answer(device: str, label: str) -> None:
        client = gateway.client("device-token-for-tests")
        barrier.wait()
        results[device] = client.post(
            f"/v1/prompts/{record['id']}/answer",
            json={"answers": {"deploy_target": [label]}, "deviceId": device},
        )

    threads = [
        threading.Thread(target=answer, args=(d, lbl))
        for d, lbl in (("phone", "Production"), ("laptop", "Staging (Recommended)"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    statuses = sorted(r.status_code for r in results.values())
    assert statuses == [200, 409]
    winner = next(r.json() for r in results.values() if r.status_code == 200)
    loser = next(r.json() for r in results.values() if r.status_code == 409)
    assert loser["error"]["code"] == "already_resolved"
    assert loser["error"]["prompt"] == winner  # the loser sees what won


def test_idempotent_retry_gets_the_original_200(gateway):
    record = _create(gateway)
    body = {"answers": {"deploy_target": ["Production"]}, "deviceId": "p", "idempotencyKey": "k1"}
    first = gateway.device.post(f"/v1/prompts/{record['id']}/answer", json=body)
    again = gateway.device.post(f"/v1/prompts/{record['id']}/answer", json=body)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    other_key = dict(body, idempotencyKey="k2")
    late = gateway.device.post(f"/v1/prompts/{record['id']}/answer", json=other_key)
    assert late.status_code == 409


def test_dismiss_then_answer_is_409(gateway):
    record = _create(gateway)
    dismissed = gateway.device.post(
        f"/v1/prompts/{record['id']}/dismiss", json={"deviceId": "phone"}
    )
    assert dismissed.status_code == 200
    assert dismissed.json()["status"] == "dismissed"
    late = gateway.device.post(
        f"/v1/prompts/{record['id']}/answer", json={"answers": {"deploy_target": ["Production"]}}
    )
    assert late.status_code == 409
    assert late.json()["error"]["prompt"]["status"] == "dismissed"
    again = gateway.device.post(f"/v1/prompts/{record['id']}/dismiss", json={})
    assert again.status_code == 409


def test_dismiss_without_a_body(gateway):
    record = _create(gateway)
    assert gateway.device.post(f"/v1/prompts/{record['id']}/dismiss").status_code == 200


def test_plain_text_reply(gateway):
    record = _create(gateway, THREE)
    bad = gateway.device.post(f"/v1/prompts/{record['id']}/reply", json={"text": "1: 2"})
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid_reply"
    assert "question 2 (Features)" in bad.json()["error"]["message"]
    ok = gateway.device.post(
        f"/v1/prompts/{record['id']}/reply",
        json={"text": "2\n1, 3\nwhen: 21:30", "deviceId": "sms"},
    )
    assert ok.status_code == 200
    assert ok.json()["answers"] == {
        "target": ["Production"],
        "features": ["Search", "Dark mode"],
        "when": ["21:30"],
    }


def test_cancel_and_cancel_again(gateway):
    record = _create(gateway)
    cancelled = gateway.agent.post(
        f"/v1/prompts/{record['id']}/cancel", json={"reason": "run-abort"}
    )
    assert cancelled.status_code == 200
    assert cancelled.json()["resolvedBy"] == {"kind": "agent", "reason": "run-abort"}
    again = gateway.agent.post(f"/v1/prompts/{record['id']}/cancel")
    assert again.status_code == 409
    assert again.json()["error"]["prompt"]["status"] == "cancelled"
    result = gateway.agent.get(f"/v1/prompts/{record['id']}/result", params={"wait": 0})
    assert result.json() == {"status": "no_answer", "reason": "cancelled"}


def test_run_cancel_cancels_only_that_runs_pending_prompts(gateway):
    a = _create(gateway, prompt_body(session="a", runId="run_1"))
    b = _create(gateway, prompt_body(session="b", runId="run_1"))
    c = _create(gateway, prompt_body(session="c", runId="run_2"))
    gateway.device.post(f"/v1/prompts/{b['id']}/dismiss", json={})
    response = gateway.agent.post("/v1/runs/run_1/cancel")
    assert response.status_code == 200
    assert response.json() == {"cancelled": [a["id"]]}
    assert gateway.device.get(f"/v1/prompts/{a['id']}").json()["resolvedBy"]["reason"] == (
        "run-abort"
    )
    assert gateway.device.get(f"/v1/prompts/{c['id']}").json()["status"] == "pending"
    assert gateway.agent.post("/v1/runs/run_unknown/cancel").json() == {"cancelled": []}


def test_a_new_prompt_may_follow_a_resolved_one(gateway):
    record = _create(gateway)
    gateway.device.post(f"/v1/prompts/{record['id']}/dismiss", json={})
    assert gateway.agent.post("/v1/prompts", json=prompt_body()).status_code == 201

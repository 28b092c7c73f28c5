"""Late answers (docs/PROTOCOL.md v1.4, #44): for a day after a prompt expired or its run
stopped, the person may still answer it; the record keeps its terminal status and gains
`lateAnswer`; agents collect what they have not picked up and acknowledge it. Over a real
gateway on 127.0.0.1, on both stores."""

from __future__ import annotations

import threading

import pytest

from tests.support import prompt_body

pytestmark = pytest.mark.both_stores  # the same rules on SQLite and PostgreSQL

ANSWER = {"answers": {"deploy_target": ["Production"]}, "deviceId": "phone"}


def _expired(gateway, session: str = "main", **overrides) -> dict:
    created = gateway.create(**prompt_body(session, timeoutSeconds=30, **overrides))
    gateway.clock.advance(31)
    record = gateway.device.get(f"/v1/prompts/{created['id']}").json()
    assert record["status"] == "expired", record
    return record


def test_an_expired_prompt_answered_late_reaches_its_agent_once(gateway):
    record = _expired(gateway)
    cursor = gateway.device.get("/v1/events", params={"wait": 0}).json()["cursor"]
    url = f"/v1/prompts/{record['id']}/late-answer"
    answered = gateway.device.post(url, json={**ANSWER, "idempotencyKey": "k1"})
    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert body["status"] == "expired" and body["version"] == record["version"] + 1
    late = body["lateAnswer"]
    assert late["answers"] == {"deploy_target": ["Production"]}
    assert late["resolvedBy"] == {"kind": "device", "deviceId": "phone"}
    assert late["deliveredAt"] is None
    # A retry with its key gets the original 200; another late answer is refused.
    again = gateway.device.post(url, json={**ANSWER, "idempotencyKey": "k1"})
    assert again.status_code == 200 and again.json() == body
    other = gateway.device.post(url, json={**ANSWER, "answers": {"deploy_target": ["Staging"]}})
    assert other.status_code == 409 and "already answered late" in other.json()["error"]["message"]
    # The agent collects it, acknowledges it, and it is not handed out again.
    listed = gateway.agent.get("/v1/late-answers", params={"sessionKey": "main"}).json()
    [item] = listed["lateAnswers"]
    assert item["promptId"] == record["id"] and item["sessionKey"] == "main"
    assert item["answers"] == {"deploy_target": ["Production"]}
    assert item["questions"][0]["question"] == "Where should this deploy?"
    assert gateway.agent.get("/v1/late-answers", params={"sessionKey": "other"}).json() == {
        "lateAnswers": []
    }
    acked = gateway.agent.post(f"/v1/late-answers/{record['id']}/ack")
    assert acked.status_code == 200 and acked.json()["lateAnswer"]["deliveredAt"] is not None
    assert gateway.agent.get("/v1/late-answers").json() == {"lateAnswers": []}
    twice = gateway.agent.post(f"/v1/late-answers/{record['id']}/ack")
    assert twice.status_code == 200 and twice.json() == acked.json()  # idempotent
    # Devices heard each change as prompt.updated.
    page = gateway.device.get("/v1/events", params={"wait": 0, "after": cursor}).json()
    events = page["events"]
    updates = [e for e in events if e["type"] == "prompt.updated"]
    assert [e["prompt"]["version"] for e in updates] == [body["version"], body["version"] + 1]


def test_only_an_expired_or_run_stopped_prompt_takes_a_late_answer_and_for_a_day(gateway):
    pending = gateway.create(**prompt_body("pending"))
    refused = gateway.device.post(f"/v1/prompts/{pending['id']}/late-answer", json=ANSWER)
    assert refused.status_code == 409 and "still pending" in refused.json()["error"]["message"]
    dismissed = gateway.create(**prompt_body("dismissed"))
    gateway.device.post(f"/v1/prompts/{dismissed['id']}/dismiss", json={})
    refused = gateway.device.post(f"/v1/prompts/{dismissed['id']}/late-answer", json=ANSWER)
    assert refused.status_code == 409 and "is dismissed" in refused.json()["error"]["message"]
    by_hand = gateway.create(**prompt_body("by-hand"))
    gateway.agent.post(f"/v1/prompts/{by_hand['id']}/cancel", json={"reason": "changed-mind"})
    refused = gateway.device.post(f"/v1/prompts/{by_hand['id']}/late-answer", json=ANSWER)
    assert refused.status_code == 409
    stopped = gateway.create(**prompt_body("stopped", runId="run_7"))
    assert gateway.agent.post("/v1/runs/run_7/cancel", json={}).status_code == 200
    taken = gateway.device.post(f"/v1/prompts/{stopped['id']}/late-answer", json=ANSWER)
    assert taken.status_code == 200, taken.text
    assert taken.json()["status"] == "cancelled"
    # A bad answer is refused, saying which question, and changes nothing.
    record = _expired(gateway, "bad")
    bad = gateway.device.post(
        f"/v1/prompts/{record['id']}/late-answer",
        json={"answers": {"deploy_target": ["Production", "Staging (Recommended)"]}},
    )
    assert bad.status_code == 422 and "deploy_target" in bad.text
    assert gateway.device.get(f"/v1/prompts/{record['id']}").json()["lateAnswer"] is None
    # A day later, it is too late.
    gateway.clock.advance(24 * 3600 + 1)
    late = gateway.device.post(f"/v1/prompts/{record['id']}/late-answer", json=ANSWER)
    assert late.status_code == 409 and "24 hours" in late.json()["error"]["message"]


def test_an_agent_waiting_for_late_answers_hears_one_at_once(gateway):
    record = _expired(gateway, "waited")
    heard: list[dict] = []
    waiting = threading.Thread(
        target=lambda: heard.append(
            gateway.agent.get(
                "/v1/late-answers", params={"sessionKey": "waited", "wait": 30}
            ).json()
        )
    )
    waiting.start()
    # The wait is parked (no late answer yet) before the person answers.
    assert gateway.agent.get("/v1/late-answers", params={"wait": 0}).json()["lateAnswers"] == []
    answered = gateway.device.post(f"/v1/prompts/{record['id']}/late-answer", json=ANSWER)
    assert answered.status_code == 200
    waiting.join(timeout=20)
    assert not waiting.is_alive()
    [item] = heard[0]["lateAnswers"]
    assert item["promptId"] == record["id"]

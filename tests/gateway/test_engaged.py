"""More time while the person answers (docs/PROTOCOL.md v1.4, #44): over real HTTP, on the
gateway's clock, which the tests move."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from tests.support import start_gateway, wait_until

pytestmark = pytest.mark.both_stores

ANSWER = {"answers": {"deploy_target": ["Production"]}}


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _engaged(gateway, prompt_id: str):
    return gateway.device.post(f"/v1/prompts/{prompt_id}/engaged", json={"deviceId": "phone"})


def test_the_person_starts_choosing_near_the_end_and_the_agent_still_gets_the_answer(gateway):
    """At 25 s of a 30 s prompt the person starts choosing: the deadline moves to 120 s from
    then; at 40 s the agent is still waiting, and gets the answer; the devices hear of it."""
    created = gateway.create(timeoutSeconds=30)
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    state = gateway.server.app.state.gateway
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(
            gateway.agent.get, f"/v1/prompts/{created['id']}/result", params={"wait": 60}
        )
        wait_until(lambda: state.waiters.waiting == 1)
        gateway.clock.advance(25)
        moved = _engaged(gateway, created["id"])
        assert moved.status_code == 200, moved.text
        record = moved.json()
        assert _ms(record["expiresAt"]) == gateway.clock.now_ms() + 120_000
        assert record["originalExpiresAt"] == created["expiresAt"]
        assert record["version"] == created["version"] + 1
        # The agent's wait hears it at once (and waits again).
        told = waiting.result(timeout=30).json()
        assert told == {"status": "pending", "secondsLeft": 120, "answering": True}
        waiting = pool.submit(
            gateway.agent.get, f"/v1/prompts/{created['id']}/result", params={"wait": 60}
        )
        wait_until(lambda: state.waiters.waiting == 1)
        gateway.clock.advance(15)  # 40 s: past the deadline it was created with
        assert gateway.device.get(f"/v1/prompts/{created['id']}").json()["status"] == "pending"
        assert not waiting.done()
        answered = gateway.device.post(f"/v1/prompts/{created['id']}/answer", json=ANSWER)
        assert answered.status_code == 200, answered.text
        assert waiting.result(timeout=30).json() == {"status": "answered", "answers": ANSWER}
    events = gateway.device.get("/v1/events", params={"after": cursor}).json()["events"]
    assert [e["type"] for e in events] == ["prompt.updated", "prompt.resolved"]
    assert events[0]["prompt"]["expiresAt"] == record["expiresAt"]


def test_time_enough_left_moves_nothing_and_the_most_is_ten_minutes_past(gateway):
    created = gateway.create(timeoutSeconds=900)
    gateway.clock.advance(5)
    same = _engaged(gateway, created["id"]).json()
    assert (same["expiresAt"], same["version"]) == (created["expiresAt"], created["version"])
    short = gateway.create(sessionKey="short", timeoutSeconds=30)
    deadline, latest = _ms(short["expiresAt"]), _ms(short["expiresAt"]) + 600_000
    for _ in range(10):  # keeps answering, always near the end
        gateway.clock.advance((deadline - gateway.clock.now_ms()) / 1000 - 5)
        deadline = _ms(_engaged(gateway, short["id"]).json()["expiresAt"])
    assert deadline == latest
    gateway.clock.advance(6)
    assert gateway.device.get(f"/v1/prompts/{short['id']}").json()["status"] == "expired"


def test_engaged_on_a_prompt_no_longer_pending_or_not_the_persons(gateway):
    created = gateway.create()
    assert gateway.device.post(f"/v1/prompts/{created['id']}/dismiss", json={}).status_code == 200
    late = _engaged(gateway, created["id"])
    assert late.status_code == 409 and late.json()["error"]["code"] == "already_resolved"
    missing = _engaged(gateway, "pr_nothing")
    assert missing.status_code == 404
    bad = gateway.device.post(f"/v1/prompts/{created['id']}/engaged", json={"deviceId": 7})
    assert bad.status_code == 422 and "deviceId" in bad.text


def test_extensions_can_be_turned_off(tmp_path):
    gateway = start_gateway(tmp_path / "gateway", engaged_grace_seconds=0)
    try:
        created = gateway.create(timeoutSeconds=30)
        gateway.clock.advance(25)
        same = _engaged(gateway, created["id"])
        assert same.status_code == 200 and same.json()["expiresAt"] == created["expiresAt"]
        gateway.clock.advance(6)
        assert gateway.device.get(f"/v1/prompts/{created['id']}").json()["status"] == "expired"
    finally:
        gateway.stop()

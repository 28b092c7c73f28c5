"""Long-polls and result waits are woken by the change that concerns them, over real HTTP."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import wait_until


@pytest.fixture
def pool():
    with ThreadPoolExecutor(4) as executor:
        yield executor


def _poll(gateway, after: str, wait: float = 30):
    return gateway.device.get("/v1/events", params={"after": after, "wait": wait})


def _idle_polls(gateway) -> int:
    return gateway.server.app.state.gateway.feed.parked


def _start_poll(gateway, pool, after):
    future = pool.submit(_poll, gateway, after)
    wait_until(lambda: _idle_polls(gateway) == 1)  # the request is parked, not answered
    assert not future.done()
    return future


def _cursor(gateway) -> str:
    return gateway.device.get("/v1/prompts").json()["cursor"]


def test_empty_poll_returns_200_with_the_same_cursor(gateway):
    cursor = _cursor(gateway)
    response = _poll(gateway, cursor, wait=0.2)
    assert response.status_code == 200
    assert response.json()["events"] == [] and response.json()["cursor"] == cursor


def test_poll_without_after_starts_from_now(gateway):
    gateway.create()
    response = gateway.device.get("/v1/events", params={"wait": 0})
    assert response.json()["events"] == [] and response.json()["cursor"] == "1"


def test_woken_by_create(gateway, pool):
    future = _start_poll(gateway, pool, _cursor(gateway))
    record = gateway.create()
    page = future.result(timeout=10).json()
    assert [(e["type"], e["prompt"]["id"]) for e in page["events"]] == [
        ("prompt.created", record["id"])
    ]
    assert page["cursor"] == str(page["events"][-1]["seq"])


@pytest.mark.parametrize("action", ["answer", "dismiss", "cancel", "expire"])
def test_woken_by_every_resolution(gateway, pool, action):
    record = gateway.create()
    cursor = _cursor(gateway)
    poll = _start_poll(gateway, pool, cursor)
    result = pool.submit(
        gateway.agent.get, f"/v1/prompts/{record['id']}/result", params={"wait": 30}
    )
    if action == "answer":
        response = gateway.device.post(
            f"/v1/prompts/{record['id']}/answer",
            json={"answers": {"deploy_target": ["production"]}, "deviceId": "phone"},
        )
        assert response.status_code == 200
        expected = {"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}}
    elif action == "dismiss":
        assert gateway.device.post(f"/v1/prompts/{record['id']}/dismiss", json={}).is_success
        expected = {"status": "no_answer", "reason": "dismissed"}
    elif action == "cancel":
        assert gateway.agent.post(
            f"/v1/prompts/{record['id']}/cancel", json={"reason": "run-abort"}
        ).is_success
        expected = {"status": "no_answer", "reason": "cancelled"}
    else:
        gateway.clock.advance(900)  # the deadline; no real waiting
        expected = {"status": "no_answer", "reason": "expired"}
    events = poll.result(timeout=10).json()["events"]
    assert [e["type"] for e in events] == ["prompt.resolved"]
    assert (
        events[0]["prompt"]["status"]
        == {
            "answer": "answered",
            "dismiss": "dismissed",
            "cancel": "cancelled",
            "expire": "expired",
        }[action]
    )
    assert events[0]["prompt"]["version"] == 2
    assert result.result(timeout=10).json() == expected


def test_expiry_waits_for_the_deadline(gateway, pool):
    record = gateway.create(timeoutSeconds=60)
    poll = _start_poll(gateway, pool, _cursor(gateway))
    gateway.clock.advance(59)
    assert gateway.device.get(f"/v1/prompts/{record['id']}").json()["status"] == "pending"
    assert not poll.done()
    gateway.clock.advance(1)
    event = poll.result(timeout=10).json()["events"][0]
    assert event["prompt"]["status"] == "expired"
    assert event["prompt"]["resolvedBy"] == {"kind": "system", "reason": "expired"}


def test_answer_after_the_deadline_is_409_expired_even_before_the_timer(gateway):
    record = gateway.create()
    gateway.clock._now += 901_000  # time passes without telling the timer
    response = gateway.device.post(
        f"/v1/prompts/{record['id']}/answer", json={"answers": {"deploy_target": ["Production"]}}
    )
    assert response.status_code == 409
    assert response.json()["error"]["prompt"]["status"] == "expired"


def test_result_wait_ends_pending(gateway):
    record = gateway.create()
    response = gateway.agent.get(f"/v1/prompts/{record['id']}/result", params={"wait": 0.2})
    assert response.json() == {"status": "pending", "secondsLeft": 900, "answering": False}
    gateway.clock.advance(899.5)
    gateway.device.post(f"/v1/prompts/{record['id']}/engaged", json={})  # the person answers
    response = gateway.agent.get(f"/v1/prompts/{record['id']}/result", params={"wait": 0})
    assert response.json() == {"status": "pending", "secondsLeft": 120, "answering": True}


def test_missed_events_come_back_in_order(gateway):
    cursor = _cursor(gateway)
    first = gateway.create(session="a")
    second = gateway.create(session="b")
    gateway.device.post(f"/v1/prompts/{first['id']}/dismiss", json={})
    page = _poll(gateway, cursor).json()
    assert [(e["seq"], e["type"], e["prompt"]["id"]) for e in page["events"]] == [
        (1, "prompt.created", first["id"]),
        (2, "prompt.created", second["id"]),
        (3, "prompt.resolved", first["id"]),
    ]
    limited = gateway.device.get("/v1/events", params={"after": cursor, "limit": 2}).json()
    assert [e["seq"] for e in limited["events"]] == [1, 2] and limited["cursor"] == "2"
    rest = _poll(gateway, limited["cursor"]).json()
    assert [e["seq"] for e in rest["events"]] == [3]


def test_cursor_from_the_future_is_410(gateway):
    response = _poll(gateway, "999")
    assert response.status_code == 410
    assert response.json()["error"]["code"] == "cursor_expired"


def test_old_cursor_is_410_and_resync_continues(gateway):
    old = _cursor(gateway)
    gateway.create(session="a")
    gateway.clock.advance(25 * 3600)  # older than the 24 h of events kept
    gateway = gateway.restart()  # retention runs at start
    try:
        response = _poll(gateway, old)
        assert response.status_code == 410
        snapshot = gateway.device.get("/v1/prompts", params={"status": "all"}).json()
        assert [p["status"] for p in snapshot["prompts"]] == ["expired"]
        record = gateway.create(session="b")
        events = _poll(gateway, snapshot["cursor"]).json()["events"]
        assert [(e["type"], e["prompt"]["id"]) for e in events] == [
            ("prompt.created", record["id"])
        ]
    finally:
        gateway.stop()

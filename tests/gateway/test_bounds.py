"""Bounds a person never meets (#52, PROTOCOL v1.5): a quota of pending prompts per agent
token and per person (429 `too_many_pending`, saying which), a rate of drafts per device (429
`too_many_drafts`), and the deadline moved by the person's answering at most once per 30 s.
A real gateway on 127.0.0.1 with a clock the test moves, on both stores."""

from __future__ import annotations

import pytest

from app.protocol import limits
from tests.support import OTHER_AGENT_TOKEN, prompt_body, wait_until

pytestmark = pytest.mark.both_stores


def test_one_agent_token_cannot_fill_the_store_and_others_still_ask(gateway):
    for n in range(limits.MAX_PENDING_PER_TOKEN):
        gateway.create(session=f"s{n}")
    refused = gateway.agent.post("/v1/prompts", json=prompt_body("one-more"))
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "too_many_pending" and "agent token" in error["message"]
    listed = gateway.device.get("/v1/prompts", params={"limit": 500}).json()["prompts"]
    assert len(listed) == limits.MAX_PENDING_PER_TOKEN  # nothing written
    # The other token of the same person still has room (until the person's own quota).
    other = gateway.client(OTHER_AGENT_TOKEN).post("/v1/prompts", json=prompt_body("other"))
    assert other.status_code == 201, other.text
    # An answer frees a slot.
    first = listed[-1]
    answered = gateway.device.post(
        f"/v1/prompts/{first['id']}/answer", json={"answers": {"deploy_target": ["Production"]}}
    )
    assert answered.status_code == 200
    assert gateway.agent.post("/v1/prompts", json=prompt_body("one-more")).status_code == 201


def test_a_flood_of_drafts_is_refused_and_a_persons_pace_is_not(gateway):
    prompt = gateway.create(timeoutSeconds=900)
    url = f"/v1/prompts/{prompt['id']}/draft"
    draft = {"answers": {"deploy_target": ["Prod"]}, "deviceId": "phone"}
    statuses = []
    while 429 not in statuses and len(statuses) < 1000:  # a loop outpaces the refill
        statuses.append(gateway.device.put(url, json=draft).status_code)
    assert statuses[: limits.DRAFT_BURST] == [200] * limits.DRAFT_BURST
    assert statuses[-1] == 429, statuses
    refused = gateway.device.put(url, json=draft)
    assert refused.json()["error"]["code"] == "too_many_drafts"
    assert refused.json()["error"]["retryAfter"] == 1
    # A person's pace (a few a second) is taken again, in real time: the clock the
    # protocol's deadlines run on stands still here and does not hold the refill back.
    wait_until(lambda: gateway.device.put(url, json=draft).status_code == 200, timeout=10)


def test_drafts_in_the_last_minutes_move_the_deadline_once_per_30_s(gateway):
    prompt = gateway.create(timeoutSeconds=300)
    gateway.clock.advance(300 - 60)  # a minute left
    url = f"/v1/prompts/{prompt['id']}/draft"
    versions, deadlines = [prompt["version"]], [prompt["expiresAt"]]
    for n in range(40):  # typing: a draft every quarter second for 10 s (on the test's
        # clock; in real time faster, so on two devices' shares of the draft rate)
        draft = {"answers": {"deploy_target": ["Pr"]}, "deviceId": f"p{n % 2}"}
        put = gateway.device.put(url, json=draft)
        assert put.status_code == 200, put.text
        versions.append(put.json()["version"])
        deadlines.append(put.json()["expiresAt"])
        gateway.clock.advance(0.25)
    assert len(set(deadlines)) == 2  # the original, and one move to 120 s from then
    assert len(set(versions)) == 2
    events = gateway.device.get("/v1/events", params={"after": 0, "limit": 500}).json()
    moved = [e for e in events["events"] if e["type"] == "prompt.updated"]
    assert len(moved) == 1  # the agent's wait woken once, not forty times


def test_a_draft_holds_no_more_than_a_card_can(gateway):
    prompt = gateway.create()
    url = f"/v1/prompts/{prompt['id']}/draft"
    many = ["x" * 2000] * 30  # ~60 KB of "choices" for a question of two options
    refused = gateway.device.put(url, json={"answers": {"deploy_target": many}, "deviceId": "p"})
    assert refused.status_code == 422
    assert refused.json()["error"]["fields"][0]["path"] == "answers.deploy_target"
    card = {"answers": {"deploy_target": ["Production"]}, "deviceId": "p"}
    assert gateway.device.put(url, json=card).status_code == 200


def _paired(gateway, name: str):
    code = gateway.admin.post("/v1/pairings", json={}).json()["code"]
    paired = gateway.client(None).post("/v1/devices", json={"code": code, "name": name})
    assert paired.status_code == 201, paired.text
    return gateway.client(paired.json()["token"])


def test_a_device_cannot_draft_under_another_paired_devices_id(gateway):
    """The phone would take the tablet's draft for its own and ignore it (#52)."""
    pixel, tablet = _paired(gateway, "Pixel"), _paired(gateway, "Tablet")
    prompt = gateway.create()
    url = f"/v1/prompts/{prompt['id']}/draft"
    draft = {"answers": {"deploy_target": ["Prod"]}}
    assert pixel.put(url, json={**draft, "deviceId": "pixel-self"}).status_code == 200
    spoofed = tablet.put(url, json={**draft, "deviceId": "pixel-self"})
    assert (
        spoofed.status_code == 403 and "another paired device" in spoofed.json()["error"]["message"]
    )
    assert tablet.put(url, json={**draft, "deviceId": "tablet-self"}).status_code == 200
    assert pixel.put(url, json={**draft, "deviceId": "pixel-self"}).status_code == 200

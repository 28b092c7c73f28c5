"""Drafts follow the person (docs/PROTOCOL.md v1.4, #44): what is chosen and typed on one
device reaches the person's other devices as a `prompt.draft` event, checked like an answer
except that it may be partial, and never reaches the agent. Over a real gateway on 127.0.0.1,
on both stores."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.support import prompt_body

pytestmark = pytest.mark.both_stores

TWO = [
    {
        "id": "target",
        "header": "Target",
        "question": "Where should this deploy?",
        "options": [{"label": "Staging"}, {"label": "Production"}],
    },
    {
        "id": "features",
        "header": "Features",
        "question": "Which features?",
        "options": [{"label": "Search"}, {"label": "Export"}],
        "multiSelect": True,
    },
]


def _paired(gateway, name: str):
    code = gateway.admin.post("/v1/pairings", json={}).json()["code"]
    paired = gateway.client(None).post("/v1/devices", json={"code": code, "name": name})
    assert paired.status_code in (200, 201), paired.text
    return gateway.client(paired.json()["token"]), paired.json()["deviceId"]


def _events_after(gateway, cursor: str) -> list[dict]:
    return gateway.device.get("/v1/events", params={"wait": 0, "after": cursor}).json()["events"]


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_a_draft_reaches_the_other_devices_and_never_the_agent(gateway):
    created = gateway.create(**prompt_body("main", questions=TWO))
    url = f"/v1/prompts/{created['id']}/draft"
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    pixel, pixel_id = _paired(gateway, "Pixel")
    # Partial: one question chosen (any case, as an answer), the other not yet; a free text.
    put = pixel.put(url, json={"answers": {"target": ["production"], "features": ["Lin"]}})
    assert put.status_code == 200, put.text
    assert put.json()["version"] == created["version"] and "draft" not in put.json()
    [event] = _events_after(gateway, cursor)
    assert event["type"] == "prompt.draft"
    draft = event["prompt"]["draft"]
    assert draft["answers"] == {"target": ["Production"], "features": ["Lin"]}
    assert draft["deviceId"] == pixel_id and draft["deviceName"] == "Pixel"
    # The id a device gives itself (as in resolvedBy) is the one it knows its draft by.
    named = pixel.put(url, json={"answers": {"target": ["Staging"]}, "deviceId": "pixel-app"})
    assert named.status_code == 200
    draft = _events_after(gateway, cursor)[-1]["prompt"]["draft"]
    assert draft["deviceId"] == "pixel-app" and draft["deviceName"] == "Pixel"
    assert event["prompt"]["version"] == created["version"]  # the prompt itself did not change
    # The last write wins on the devices: a second draft is the newest event.
    again = pixel.put(url, json={"answers": {"target": ["Staging"]}})
    assert again.status_code == 200
    newest = _events_after(gateway, cursor)[-1]["prompt"]["draft"]
    assert newest["answers"] == {"target": ["Staging"]}
    # Nothing of it is stored with the prompt: not for a device, not for the agent.
    assert "draft" not in gateway.device.get(f"/v1/prompts/{created['id']}").json()
    assert "draft" not in gateway.agent.get(f"/v1/prompts/{created['id']}").json()
    listed = gateway.device.get("/v1/prompts", params={"status": "pending"}).json()["prompts"]
    assert all("draft" not in p for p in listed)
    result = gateway.agent.get(f"/v1/prompts/{created['id']}/result", params={"wait": 0})
    assert result.json()["status"] == "pending"


def test_a_device_that_was_not_paired_gives_its_name_and_a_paired_ones_name_wins(gateway):
    """#53 (8): the app's own embedded gateway's device (the configured device token, never
    paired) showed as "another device" on the paired phone: it names itself now; a paired
    device cannot go by another name than the one it was paired with."""
    created = gateway.create(**prompt_body("main", questions=TWO))
    url = f"/v1/prompts/{created['id']}/draft"
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    laptop = {"answers": {"target": ["Staging"]}, "deviceId": "desk", "deviceName": "laptop"}
    assert gateway.device.put(url, json=laptop).status_code == 200
    assert _events_after(gateway, cursor)[-1]["prompt"]["draft"]["deviceName"] == "laptop"
    pixel, _ = _paired(gateway, "Pixel")
    posing = {"answers": {"target": ["Staging"]}, "deviceName": "laptop"}
    assert pixel.put(url, json=posing).status_code == 200
    assert _events_after(gateway, cursor)[-1]["prompt"]["draft"]["deviceName"] == "Pixel"
    refused = gateway.device.put(url, json={**laptop, "deviceName": "lap\u0000top"})
    assert refused.status_code == 422
    assert refused.json()["error"]["fields"][0]["path"] == "deviceName"


def test_a_wrong_draft_says_which_field_and_changes_nothing(gateway):
    created = gateway.create(**prompt_body("main", questions=TWO))
    url = f"/v1/prompts/{created['id']}/draft"
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    unknown = gateway.device.put(url, json={"answers": {"nope": ["x"]}})
    assert unknown.status_code == 422
    error = unknown.json()["error"]
    assert error["code"] == "invalid_answer"
    assert [f["path"] for f in error["fields"]] == ["answers.nope"]
    two = gateway.device.put(url, json={"answers": {"target": ["Staging", "Production"]}})
    assert two.status_code == 422 and "single-select" in two.text
    blank = gateway.device.put(url, json={"answers": {"target": ["  "]}})
    assert blank.status_code == 422 and "answers.target[0]" in blank.text
    missing = gateway.device.put(url, json={"deviceId": "phone"})
    assert missing.status_code == 422 and "answers" in missing.text
    assert _events_after(gateway, cursor) == []  # nothing was told
    gone = gateway.device.put("/v1/prompts/pr_nope/draft", json={"answers": {}})
    assert gone.status_code == 404
    gateway.device.post(f"/v1/prompts/{created['id']}/dismiss", json={})
    late = gateway.device.put(url, json={"answers": {"target": ["Staging"]}})
    assert late.status_code == 409 and late.json()["error"]["code"] == "already_resolved"


def test_a_draft_is_the_person_answering_so_the_deadline_moves(gateway):
    created = gateway.create(**prompt_body("main", timeoutSeconds=30))
    gateway.clock.advance(25)
    put = gateway.device.put(
        f"/v1/prompts/{created['id']}/draft", json={"answers": {"deploy_target": ["Staging"]}}
    )
    assert put.status_code == 200, put.text
    record = put.json()
    assert _ms(record["expiresAt"]) > _ms(created["expiresAt"])
    assert record["originalExpiresAt"] == created["expiresAt"]

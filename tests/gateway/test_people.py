"""People on one gateway (PROTOCOL.md v1.3): each person's prompts reach only their devices.

Black-box over HTTP against the real gateway: two people, each with an agent token minted by
the admin and a phone paired with a code made for them, beside the default person (the
environment's tokens).
"""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest

from tests.gateway.test_notify import Receiver
from tests.support import (
    AGENT_TOKEN,
    GatewayProcess,
    RunningGateway,
    client,
    prompt_body,
    start_gateway,
    wait_until,
)

pytestmark = pytest.mark.both_stores  # the same rules on SQLite and PostgreSQL


@dataclass
class Member:
    person_id: str
    agent: httpx.Client
    phone: httpx.Client
    device_id: str


def _person(gateway: RunningGateway, name: str) -> Member:
    added = gateway.admin.post("/v1/people", json={"name": name})
    assert added.status_code == 201, added.text
    person_id = added.json()["personId"]
    assert person_id.startswith("ps_") and added.json()["name"] == name
    minted = gateway.admin.post(f"/v1/people/{person_id}/agent-tokens")
    assert minted.status_code == 201, minted.text
    assert minted.json()["personId"] == person_id
    code = gateway.admin.post("/v1/pairings", json={"personId": person_id}).json()["code"]
    paired = gateway.client(None).post("/v1/devices", json={"code": code, "name": f"{name}'s"})
    assert paired.status_code == 201, paired.text
    return Member(
        person_id,
        gateway.client(minted.json()["token"]),
        gateway.client(paired.json()["token"]),
        paired.json()["deviceId"],
    )


def _ask(agent: httpx.Client, session: str = "main") -> dict:
    created = agent.post("/v1/prompts", json=prompt_body(session))
    assert created.status_code == 201, created.text
    return created.json()


def _pending_ids(phone: httpx.Client) -> list[str]:
    return [p["id"] for p in phone.get("/v1/prompts").json()["prompts"]]


ANSWER = {"answers": {"deploy_target": ["Production"]}}


def test_with_no_people_everything_belongs_to_the_default_person(gateway):
    assert gateway.admin.get("/v1/people").json() == {
        "people": [{"personId": "ps_default", "name": "default", "createdAt": None}]
    }
    record = gateway.create()
    assert _pending_ids(gateway.device) == [record["id"]]
    code = gateway.admin.post("/v1/pairings").json()["code"]
    paired = gateway.client(None).post("/v1/devices", json={"code": code}).json()
    assert _pending_ids(gateway.client(paired["token"])) == [record["id"]]
    (device,) = gateway.admin.get("/v1/devices").json()["devices"]
    assert device["personId"] == "ps_default"


def test_a_persons_device_never_sees_or_answers_another_persons_prompt(gateway):
    ann, bob = _person(gateway, "Ann"), _person(gateway, "Bob")
    anns = _ask(ann.agent)
    assert _pending_ids(ann.phone) == [anns["id"]]
    for outsider in (bob.phone, gateway.device):  # another person, and the default one
        assert _pending_ids(outsider) == []
        assert outsider.get("/v1/prompts", params={"status": "all"}).json()["prompts"] == []
        listed_before = outsider.get("/v1/prompts", params={"before": anns["id"]})
        assert listed_before.status_code == 404
        base = f"/v1/prompts/{anns['id']}"
        for response in (
            outsider.get(base),
            outsider.get(f"{base}/text"),
            outsider.post(f"{base}/answer", json=ANSWER),
            outsider.post(f"{base}/dismiss", json={}),
            outsider.post(f"{base}/reply", json={"text": "2"}),
        ):
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "not_found"
        events = outsider.get("/v1/events", params={"after": "0", "wait": 0}).json()
        assert events["events"] == []
    assert ann.phone.get(f"/v1/prompts/{anns['id']}").json()["status"] == "pending"  # untouched
    answered = ann.phone.post(f"/v1/prompts/{anns['id']}/answer", json=ANSWER)
    assert answered.status_code == 200, answered.text
    result = ann.agent.get(f"/v1/prompts/{anns['id']}/result", params={"wait": 0}).json()
    assert result["status"] == "answered"


def test_an_event_wakes_only_the_polls_of_its_person(gateway):
    ann, bob = _person(gateway, "Ann"), _person(gateway, "Bob")
    cursor = ann.phone.get("/v1/prompts").json()["cursor"]
    feed = gateway.server.app.state.gateway.feed
    with ThreadPoolExecutor(2) as pool:
        anns_poll = pool.submit(ann.phone.get, "/v1/events", params={"after": cursor, "wait": 30})
        bobs_poll = pool.submit(bob.phone.get, "/v1/events", params={"after": cursor, "wait": 4})
        wait_until(lambda: feed.parked == 2)
        anns = _ask(ann.agent)
        heard = anns_poll.result(timeout=10).json()
        assert [(e["type"], e["prompt"]["id"]) for e in heard["events"]] == [
            ("prompt.created", anns["id"])
        ]
        assert feed.parked == 1  # Bob's, still parked: Ann's event did not wake it
        timed_out = bobs_poll.result(timeout=20).json()
    assert timed_out["events"] == []
    # Bob's cursor moved past Ann's event: he never reads it, now or later.
    assert timed_out["cursor"] == heard["cursor"]
    bobs = _ask(bob.agent)
    later = bob.phone.get("/v1/events", params={"after": cursor, "wait": 0}).json()
    assert [e["prompt"]["id"] for e in later["events"]] == [bobs["id"]]


def test_a_full_page_of_another_persons_events_is_skipped_not_served(gateway):
    ann, bob = _person(gateway, "Ann"), _person(gateway, "Bob")
    cursor = bob.phone.get("/v1/prompts").json()["cursor"]
    for n in range(3):
        record = _ask(ann.agent, session=f"s{n}")
        ann.phone.post(f"/v1/prompts/{record['id']}/dismiss", json={})
    bobs = _ask(bob.agent)
    page = bob.phone.get("/v1/events", params={"after": cursor, "limit": 1, "wait": 0}).json()
    assert [e["prompt"]["id"] for e in page["events"]] == [bobs["id"]]


def test_each_persons_agents_have_their_own_sessions(gateway):
    ann, bob = _person(gateway, "Ann"), _person(gateway, "Bob")
    _ask(ann.agent)
    _ask(bob.agent)  # Bob's "main" is not Ann's
    gateway.create()  # nor is the default person's
    second = gateway.admin.post(f"/v1/people/{ann.person_id}/agent-tokens").json()["token"]
    again = gateway.client(second).post("/v1/prompts", json=prompt_body())
    assert again.status_code == 409 and again.json()["error"]["code"] == "pending_exists"


def test_removing_a_person_cancels_their_prompts_and_stops_their_tokens_at_once(gateway):
    ann, bob = _person(gateway, "Ann"), _person(gateway, "Bob")
    anns, bobs = _ask(ann.agent), _ask(bob.agent)
    cursor = ann.phone.get("/v1/prompts").json()["cursor"]
    feed = gateway.server.app.state.gateway.feed
    with ThreadPoolExecutor(2) as pool:
        waiting = pool.submit(
            ann.agent.get, f"/v1/prompts/{anns['id']}/result", params={"wait": 60}
        )
        parked = pool.submit(ann.phone.get, "/v1/events", params={"after": cursor, "wait": 60})
        wait_until(lambda: feed.parked == 1)
        removed = gateway.admin.delete(f"/v1/people/{ann.person_id}")
        assert removed.status_code == 204, removed.text
        assert waiting.result(timeout=10).json() == {"status": "no_answer", "reason": "cancelled"}
        ended = parked.result(timeout=10)
    # The parked poll ends at once with what the removal did to Ann's own prompt (the devices
    # parked are woken as each event commits, #27), and nothing of Bob's; then 401.
    assert ended.status_code == 200
    assert [
        (e["prompt"]["id"], e["prompt"]["resolvedBy"]["reason"]) for e in ended.json()["events"]
    ] == [(anns["id"], "person-removed")]
    assert ann.phone.get("/v1/events", params={"after": ended.json()["cursor"]}).status_code == 401
    for token_gone in (
        ann.agent.post("/v1/prompts", json=prompt_body()),
        ann.phone.get("/v1/prompts"),
    ):
        assert token_gone.status_code == 401
    record = bob.phone.get(f"/v1/prompts/{bobs['id']}").json()
    assert record["status"] == "pending"  # Bob is untouched
    people = gateway.admin.get("/v1/people").json()["people"]
    assert [p["personId"] for p in people] == ["ps_default", bob.person_id]
    devices = gateway.admin.get("/v1/devices").json()["devices"]
    assert [d["deviceId"] for d in devices] == [bob.device_id]
    [(stored,)] = gateway.sql("SELECT record FROM prompts WHERE id = ?", (anns["id"],))
    assert '"reason":"person-removed"' in stored
    again = gateway.admin.delete(f"/v1/people/{ann.person_id}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"


def test_the_default_person_cannot_be_removed(gateway):
    refused = gateway.admin.delete("/v1/people/ps_default")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "default_person"
    assert gateway.agent.post("/v1/prompts", json=prompt_body()).status_code == 201


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        ({"name": "ann"}, 409, "name_taken", "name: a person named 'ann' already exists"),
        ({"name": "  ANN "}, 409, "name_taken", "already exists"),
        ({"name": "Default"}, 409, "name_taken", "already exists"),
        ({"name": "   "}, 422, "invalid_request", "must not be blank"),
        ({"name": "x" * 65}, 422, "invalid_request", "at most 64 characters"),
        ({}, 422, "invalid_request", "required"),
    ],
)
def test_a_bad_person_is_refused_and_nothing_is_added(gateway, body, status, code, says):
    gateway.admin.post("/v1/people", json={"name": "Ann"})
    refused = gateway.admin.post("/v1/people", json=body)
    assert refused.status_code == status, refused.text
    error = refused.json()["error"]
    assert error["code"] == code
    assert says in error["message"] + " ".join(f["message"] for f in error.get("fields", []))
    if status == 422:
        assert [f["path"] for f in error["fields"]] == ["name"]
    assert [p["name"] for p in gateway.admin.get("/v1/people").json()["people"]] == [
        "default",
        "Ann",
    ]


def test_a_code_or_token_for_an_unknown_person_is_refused(gateway):
    for response in (
        gateway.admin.post("/v1/pairings", json={"personId": "ps_nobody"}),
        gateway.admin.post("/v1/people/ps_nobody/agent-tokens"),
    ):
        assert response.status_code == 404, response.text
        assert "ps_nobody" in response.json()["error"]["message"]
    assert (
        "personId"
        in gateway.admin.post("/v1/pairings", json={"personId": "ps_nobody"}).json()["error"][
            "message"
        ]
    )
    assert gateway.sql("SELECT COUNT(*) FROM pairings") == [(0,)]
    assert gateway.sql("SELECT COUNT(*) FROM agent_tokens") == [(0,)]


@pytest.mark.parametrize(
    ("who", "method", "path"),
    [
        ("device", "GET", "/v1/people"),
        ("agent", "POST", "/v1/people"),
        ("device", "DELETE", "/v1/people/ps_x"),
        ("agent", "POST", "/v1/people/ps_default/agent-tokens"),
    ],
)
def test_people_are_the_admins_business(gateway, who, method, path):
    response = getattr(gateway, who).request(
        method, path, json={"name": "Eve"} if method == "POST" else None
    )
    assert response.status_code == 403, response.text


def test_a_minted_agent_token_is_an_agents_only(gateway):
    ann = _person(gateway, "Ann")
    assert ann.agent.get("/v1/prompts").status_code == 403
    assert ann.agent.get("/v1/people").status_code == 403


def test_people_tokens_and_devices_survive_a_restart(gateway):
    ann = _person(gateway, "Ann")
    anns = _ask(ann.agent)
    agent_token = ann.agent.headers["authorization"]
    phone_token = ann.phone.headers["authorization"]
    restarted = gateway.restart()
    try:
        agent = restarted.client(agent_token.split()[1])
        phone = restarted.client(phone_token.split()[1])
        assert _pending_ids(phone) == [anns["id"]]
        assert _pending_ids(restarted.device) == []
        waited = agent.get(f"/v1/prompts/{anns['id']}/result", params={"wait": 0}).json()
        assert waited["status"] == "pending"
        assert [p["name"] for p in restarted.admin.get("/v1/people").json()["people"]] == [
            "default",
            "Ann",
        ]
        only_hashes = b"".join(p.read_bytes() for p in gateway.data_dir.glob("gateway.sqlite3*"))
        assert agent_token.split()[1].encode() not in only_hashes
    finally:
        restarted.stop()


# The tables as they were before people (the gateway of PROTOCOL.md v1.2).
_BEFORE_PEOPLE = """
CREATE TABLE prompts (
    n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL,
    session_key TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '', run_id TEXT,
    status TEXT NOT NULL, expires_ms INTEGER NOT NULL, resolved_ms INTEGER, record TEXT NOT NULL,
    link_hash TEXT
);
CREATE UNIQUE INDEX prompts_one_pending_per_session
    ON prompts(session_key, agent_id) WHERE status = 'pending';
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, prompt_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL, record TEXT NOT NULL
);
CREATE TABLE devices (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL, last_seen_ms INTEGER
);
CREATE TABLE pairings (
    code_hash TEXT PRIMARY KEY, name TEXT, created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL, used_ms INTEGER
);
"""


def test_a_file_from_before_people_is_the_default_persons(tmp_path):
    from app.gateway.core.devices import secret_hash
    from app.gateway.core.service import fingerprint

    first = start_gateway(tmp_path / "then")
    record = first.create()
    stored_record = first.device.get(f"/v1/prompts/{record['id']}").text
    first.stop()
    data = tmp_path / "old"
    data.mkdir()
    db = sqlite3.connect(data / "gateway.sqlite3")
    db.executescript(_BEFORE_PEOPLE)
    db.execute(
        "INSERT INTO prompts (id, owner, session_key, status, expires_ms, record) "
        "VALUES (?, ?, 'main', 'pending', ?, ?)",
        (record["id"], fingerprint(AGENT_TOKEN), 4_000_000_000_000, stored_record),
    )
    db.execute(
        "INSERT INTO events (type, prompt_id, created_ms, record) VALUES (?, ?, ?, ?)",
        ("prompt.created", record["id"], first.clock.now_ms(), stored_record),
    )
    db.execute(
        "INSERT INTO devices (id, name, token_hash, created_ms) VALUES (?, ?, ?, 0)",
        ("dv_old", "Old phone", secret_hash("dvt_an-old-phone-token")),
    )
    db.commit()
    db.close()
    gateway = start_gateway(data, first.clock)
    try:
        phone = gateway.client("dvt_an-old-phone-token")
        assert _pending_ids(phone) == [record["id"]] == _pending_ids(gateway.device)
        events = phone.get("/v1/events", params={"after": "0", "wait": 0}).json()["events"]
        assert [e["prompt"]["id"] for e in events] == [record["id"]]
        (device,) = gateway.admin.get("/v1/devices").json()["devices"]
        assert device["personId"] == "ps_default"
        again = gateway.agent.post("/v1/prompts", json=prompt_body())
        assert again.status_code == 409 and again.json()["error"]["code"] == "pending_exists"
    finally:
        gateway.stop()


def test_notifiers_of_the_environment_announce_only_the_default_persons_prompts(tmp_path):
    receiver = Receiver()
    process = GatewayProcess(tmp_path / "data", extra_env={"ASK_USER_NOTIFY": receiver.url})
    process.start()
    try:
        admin = client(process.url, "admin-token-for-tests")
        person_id = admin.post("/v1/people", json={"name": "Ann"}).json()["personId"]
        token = admin.post(f"/v1/people/{person_id}/agent-tokens").json()["token"]
        anns = client(process.url, token).post("/v1/prompts", json=prompt_body()).json()
        defaults = client(process.url, AGENT_TOKEN).post("/v1/prompts", json=prompt_body())
        wait_until(lambda: receiver.received, timeout=20)
        (message,) = receiver.received  # one at a time, in order: Ann's would have come first
        assert defaults.json()["id"] in message["message"]
        assert anns["id"] not in message["message"]
    finally:
        process.terminate()
        receiver.close()

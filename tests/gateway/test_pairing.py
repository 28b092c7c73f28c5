"""Pairing a phone with a single-use code, a token per device, and cutting one device off."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from app.protocol import PairLink, parse_link
from tests.support import wait_until


def _pairing(gateway, **body):
    response = gateway.admin.post("/v1/pairings", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _pair(gateway, code, name="Pixel 8"):
    return gateway.client(None).post("/v1/devices", json={"code": code, "name": name})


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_a_code_pairs_one_device_once_and_its_token_works(gateway):
    pairing = _pairing(gateway, gatewayUrl="http://192.168.1.20:8765")
    assert pairing["code"][4] == "-" and len(pairing["code"]) == 9
    assert _ms(pairing["expiresAt"]) - gateway.clock.now_ms() == 600_000
    assert parse_link(pairing["link"]) == PairLink("http://192.168.1.20:8765", pairing["code"])

    typed = pairing["code"].lower().replace("-", " ")  # read off a screen and typed
    paired = _pair(gateway, typed)
    assert paired.status_code == 201, paired.text
    device = paired.json()
    assert device["deviceId"].startswith("dv_") and device["name"] == "Pixel 8"

    phone = gateway.client(device["token"])
    assert phone.get("/v1/prompts").status_code == 200
    record = gateway.create()
    answered = phone.post(
        f"/v1/prompts/{record['id']}/answer", json={"answers": {"deploy_target": ["Production"]}}
    )
    assert answered.status_code == 200, answered.text

    again = _pair(gateway, pairing["code"])
    assert again.status_code == 403
    assert again.json()["error"]["code"] == "pairing_invalid"

    listed = gateway.admin.get("/v1/devices").json()["devices"]
    assert [(d["deviceId"], d["name"]) for d in listed] == [(device["deviceId"], "Pixel 8")]
    assert listed[0]["lastSeenAt"] is not None


def test_the_link_names_the_address_the_gateway_was_reached_by_when_none_is_given(gateway):
    pairing = _pairing(gateway)
    assert parse_link(pairing["link"]).gateway_url == gateway.url


def test_only_a_hash_of_the_device_token_is_stored(gateway):
    token = _pair(gateway, _pairing(gateway)["code"]).json()["token"]
    db = sqlite3.connect(gateway.data_dir / "gateway.sqlite3")
    rows = db.execute("SELECT * FROM devices").fetchall()
    db.close()
    assert rows and token not in repr(rows)
    for path in gateway.data_dir.glob("gateway.sqlite3*"):
        assert token.encode() not in path.read_bytes()


def test_a_code_expires_after_ten_minutes(gateway):
    first, second = _pairing(gateway)["code"], _pairing(gateway)["code"]
    gateway.clock.advance(599)
    assert _pair(gateway, first).status_code == 201
    gateway.clock.advance(2)
    late = _pair(gateway, second)
    assert late.status_code == 403 and late.json()["error"]["code"] == "pairing_invalid"


def test_ten_wrong_codes_a_minute_then_429_but_a_good_code_still_pairs(gateway):
    """Behind a proxy or a shared NAT everyone has one address: one guesser there must not
    block everyone's pairing (#23, 11)."""
    good = _pairing(gateway)["code"]
    for _ in range(10):
        assert _pair(gateway, "AAAA-AAAA").status_code == 403
    limited = _pair(gateway, "BBBB-BBBB")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "too_many_attempts"
    assert _pair(gateway, good).status_code == 201
    gateway.clock.advance(61)
    assert _pair(gateway, "AAAA-AAAA").status_code == 403  # the minute has passed


def test_a_code_is_spent_once_too_many_wrong_codes_were_tried_while_it_lived(gateway):
    from app.protocol import limits

    good = _pairing(gateway)["code"]
    guesser = gateway.client(None)
    for n in range(limits.MAX_WRONG_GUESSES_PER_CODE):
        wrong = guesser.post("/v1/devices", json={"code": f"Z{n:07d}", "name": "x"})
        assert wrong.status_code in (403, 429)
    spent = _pair(gateway, good)
    assert spent.status_code == 403 and "too many wrong" in spent.json()["error"]["message"]
    assert _pair(gateway, _pairing(gateway)["code"]).status_code == 201  # a new code works


def test_a_flood_of_one_off_failures_does_not_free_a_blocked_address(tmp_path):
    """The table of addresses is capped; what it forgets first is never a blocked address."""
    from app.gateway.core.devices import DeviceRegistry
    from app.gateway.core.eager import finished
    from app.gateway.core.guesses import MAX_ADDRESSES
    from app.gateway.store.sqlite import PromptStore

    registry = DeviceRegistry(PromptStore(tmp_path / "d.sqlite3").db)
    now = 1_000_000

    def attempt(address: str) -> int:
        try:
            finished(registry.pair("AAAA-AAAA", None, address, now))
        except Exception as exc:
            return exc.http_status  # type: ignore[attr-defined]
        return 201

    for _ in range(10):
        attempt("10.0.0.1")
    assert attempt("10.0.0.1") == 429
    for n in range(MAX_ADDRESSES + 50):
        attempt(f"172.16.{n // 250}.{n % 250}")
    assert attempt("10.0.0.1") == 429


@pytest.mark.parametrize(
    "who, method, path, status",
    [
        ("device", "POST", "/v1/pairings", 403),
        ("agent", "POST", "/v1/pairings", 403),
        (None, "POST", "/v1/pairings", 401),
        ("device", "GET", "/v1/devices", 403),
        ("agent", "DELETE", "/v1/devices/dv_x", 403),
        ("admin", "POST", "/v1/prompts", 403),
        ("admin", "GET", "/v1/events", 403),
    ],
)
def test_each_call_needs_its_role(gateway, who, method, path, status):
    caller = getattr(gateway, who) if who else gateway.client(None)
    response = caller.request(method, path, json={} if method == "POST" else None)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == ("unauthorized" if status == 401 else "forbidden")


def test_revoking_a_device_ends_its_parked_poll_and_its_token(gateway):
    kept = _pair(gateway, _pairing(gateway)["code"]).json()
    lost = _pair(gateway, _pairing(gateway)["code"]).json()
    lost_phone, kept_phone = gateway.client(lost["token"]), gateway.client(kept["token"])
    cursor = lost_phone.get("/v1/prompts").json()["cursor"]
    feed = gateway.server.app.state.gateway.feed
    with ThreadPoolExecutor(2) as pool:
        parked = pool.submit(lost_phone.get, "/v1/events", params={"after": cursor, "wait": 60})
        other = pool.submit(kept_phone.get, "/v1/events", params={"after": cursor, "wait": 60})
        wait_until(lambda: feed.parked == 2)
        assert gateway.admin.delete(f"/v1/devices/{lost['deviceId']}").status_code == 204
        ended = parked.result(timeout=10)  # long before its 60 s wait
        assert ended.status_code == 401
        assert ended.json()["error"]["code"] == "unauthorized"
        assert not other.done()  # the other device's poll stays parked
        gateway.create()
        assert [e["type"] for e in other.result(timeout=10).json()["events"]] == ["prompt.created"]
    assert lost_phone.get("/v1/prompts").status_code == 401
    assert kept_phone.get("/v1/prompts").status_code == 200
    assert gateway.device.get("/v1/prompts").status_code == 200  # env tokens unaffected
    assert [d["deviceId"] for d in gateway.admin.get("/v1/devices").json()["devices"]] == [
        kept["deviceId"]
    ]
    again = gateway.admin.delete(f"/v1/devices/{lost['deviceId']}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"


def test_paired_and_revoked_devices_survive_a_restart(gateway):
    kept = _pair(gateway, _pairing(gateway)["code"]).json()
    lost = _pair(gateway, _pairing(gateway)["code"]).json()
    unused = _pairing(gateway)["code"]
    gateway.admin.delete(f"/v1/devices/{lost['deviceId']}")
    restarted = gateway.restart()
    try:
        assert restarted.client(kept["token"]).get("/v1/prompts").status_code == 200
        assert restarted.client(lost["token"]).get("/v1/prompts").status_code == 401
        assert _pair(restarted, unused).status_code == 201  # a code made before still works
    finally:
        restarted.stop()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"gatewayUrl": "ftp://example.com"}, "gatewayUrl"),
        ({"name": "x" * 65}, "name"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_pairing_request_names_the_field(gateway, body, field):
    response = gateway.admin.post("/v1/pairings", json=body)
    assert response.status_code == 422
    assert [f["path"] for f in response.json()["error"]["fields"]] == [field]


def test_device_registry_writes_on_a_locked_store_are_503_and_change_nothing(gateway):
    """Make a code, pair, revoke and lastSeenAt while another process holds the write lock:
    503 `unavailable` (never 500), the revoked token still works until the revoke goes
    through, and a device's own requests are not failed by its lastSeenAt (#23, 5)."""
    code = _pairing(gateway)["code"]
    paired = _pair(gateway, code).json()
    phone = gateway.client(paired["token"])
    spare = _pairing(gateway)["code"]
    gateway.clock.advance(120)  # lastSeenAt is due again
    other = sqlite3.connect(gateway.data_dir / "gateway.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        for response in (
            gateway.admin.post("/v1/pairings", json={}),
            _pair(gateway, spare),
            gateway.admin.delete(f"/v1/devices/{paired['deviceId']}"),
        ):
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "unavailable"
        assert phone.get("/v1/prompts").status_code == 200  # not revoked; lastSeenAt waits
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _pair(gateway, spare).status_code == 201  # the failed try did not use it up
    assert gateway.admin.delete(f"/v1/devices/{paired['deviceId']}").status_code == 204
    assert phone.get("/v1/prompts").status_code == 401


def test_the_name_given_with_the_code_wins_over_the_devices_own(gateway):
    """#44 (5): `pair --name "Work laptop"` was ignored when the app already had a name (its
    host's, say): the device proposes a name, the person who made the code chose one."""
    named = _pair(gateway, _pairing(gateway, name="Work laptop")["code"], name="vm")
    assert named.json()["name"] == "Work laptop"
    unnamed = _pair(gateway, _pairing(gateway)["code"], name="vm")
    assert unnamed.json()["name"] == "vm"
    listed = {d["deviceId"]: d["name"] for d in gateway.admin.get("/v1/devices").json()["devices"]}
    assert listed == {named.json()["deviceId"]: "Work laptop", unnamed.json()["deviceId"]: "vm"}

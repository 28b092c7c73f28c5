"""A resolution never undoes what it raced with (#52): an answer, a dismissal or an expiry made
from a record read before the person's answering moved its deadline is made again from the
record as it is; versions strictly increase per prompt; no event follows a resolution; no
acknowledged extension is lost. On SQLite (one gateway) and on PostgreSQL with two gateway
processes sharing the database, each side of every race through a different one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import start_gateway, wait_until

pytestmark = pytest.mark.both_stores

RACES = 30
ANSWER = {"answers": {"deploy_target": ["Production"]}, "deviceId": "phone"}
DRAFT = {"answers": {"deploy_target": ["Prod"]}, "deviceId": "tablet"}


@pytest.fixture
def sides(gateway, tmp_path):
    """Two gateways to race through: the same one on SQLite, a second process's on PostgreSQL."""
    if not gateway.config.get("database_url"):
        yield gateway, gateway
        return
    other = start_gateway(tmp_path / "other", clock=gateway.clock, **gateway.config)
    yield gateway, other
    other.stop()


def test_an_answer_racing_the_persons_answering_keeps_the_moved_deadline(gateway, sides):
    one, two = sides
    with ThreadPoolExecutor(2) as pool:
        for _ in range(RACES):
            prompt = one.create(timeoutSeconds=30, session=f"race-{_}")
            gateway.clock.advance(25)  # under the grace: the person's answering moves it
            url = f"/v1/prompts/{prompt['id']}"
            moving = pool.submit(one.device.post, f"{url}/engaged", json={"deviceId": "p"})
            # A device id per race: drafts are counted per device in real time (5 a second),
            # and these races come faster than a person types.
            tablet = {**DRAFT, "deviceId": f"tablet-{_}"}
            drafting = pool.submit(two.device.put, f"{url}/draft", json=tablet)
            answering = pool.submit(two.device.post, f"{url}/answer", json=ANSWER)
            moved, drafted, answered = moving.result(), drafting.result(), answering.result()
            assert answered.status_code == 200, answered.text
            final = one.device.get(url).json()
            assert final["status"] == "answered"
            if moved.status_code == 200 and moved.json()["version"] > prompt["version"]:
                # The extension was acknowledged: the answer was written over it, not under.
                assert final["version"] > moved.json()["version"]
                assert final["expiresAt"] == moved.json()["expiresAt"]
            assert drafted.status_code in (200, 409)
            _versions_grow_and_nothing_follows_the_resolution(one, prompt["id"])


def _versions_grow_and_nothing_follows_the_resolution(gateway, prompt_id: str) -> None:
    def mine() -> list[dict]:
        page = gateway.device.get("/v1/events", params={"after": 0, "limit": 500, "wait": 0})
        return [e for e in page.json()["events"] if e["prompt"]["id"] == prompt_id]

    # Made through the other process, the resolution reaches this one's feed a moment later
    # (PostgreSQL): waited for, then the order is checked.
    events = wait_until(
        lambda: (found := mine()) and any(e["type"] == "prompt.resolved" for e in found) and found,
        timeout=10,
    )
    versions = [e["prompt"]["version"] for e in events if e["type"] != "prompt.draft"]
    assert versions == sorted(set(versions)), events  # strictly increasing
    resolved_at = next(i for i, e in enumerate(events) if e["type"] == "prompt.resolved")
    assert resolved_at == len(events) - 1, [e["type"] for e in events]


def test_an_expiry_racing_an_extension_is_no_expiry(gateway, sides):
    one, two = sides
    with ThreadPoolExecutor(2) as pool:
        for n in range(RACES):
            prompt = one.create(timeoutSeconds=30, session=f"expiry-{n}")
            gateway.clock.advance(29.9)
            url = f"/v1/prompts/{prompt['id']}"
            moving = pool.submit(one.device.post, f"{url}/engaged", json={"deviceId": "p"})
            gateway.clock.advance(0.2)  # the deadline passes as the extension is written
            looking = pool.submit(two.device.get, url)  # a look expires an overdue prompt
            moved, looked = moving.result(), looking.result()
            final = one.device.get(url).json()
            if moved.status_code == 200:
                assert final["status"] == "pending", (moved.json(), looked.json(), final)
                assert final["expiresAt"] == moved.json()["expiresAt"]
            else:
                assert final["status"] == "expired"
            _versions_grow(one, prompt["id"])


def _versions_grow(gateway, prompt_id: str) -> None:
    page = gateway.device.get("/v1/events", params={"after": 0, "limit": 500}).json()
    versions = [
        e["prompt"]["version"]
        for e in page["events"]
        if e["prompt"]["id"] == prompt_id and e["type"] != "prompt.draft"
    ]
    assert versions == sorted(set(versions))

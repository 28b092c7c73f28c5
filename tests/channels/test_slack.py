"""Slack over real HTTP: a real gateway, an agent's `ask_user`, the Slack adapter's endpoints
receiving presses signed with the signing secret, and a local stand-in for the Web API."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from app import http_deadlines
from app.channels import adapter as channel
from app.channels.runtime import Joining
from app.channels.slack import serve
from tests.support import DEVICE_TOKEN, free_port, wait_until

from .fake_slack import FakeSlack
from .harness import SEVERAL, SINGLE, Agent, RunningChannel, stalled_bodies_are_cut

BOT_TOKEN = "xoxb-test-token"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0ASKUSER"


class SlackAdapter(RunningChannel):
    def __init__(self, fake: FakeSlack, gateway, data_dir) -> None:
        self.port = free_port()
        super().__init__(
            lambda stop, started: serve(
                bot_token=BOT_TOKEN,
                signing_secret=SECRET,
                channels=[CHANNEL],
                data_dir=data_dir,
                joining=Joining(gateway.url, DEVICE_TOKEN),
                port=self.port,
                api_url=f"{fake.url}/api",
                stop=stop,
                started=started,
            )
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _signed(
    body: bytes, secret: str = SECRET, age: int = 0, timestamp: str | None = None
) -> dict[str, str | bytes]:
    timestamp = str(int(time.time()) - age) if timestamp is None else timestamp
    return {
        "X-Slack-Request-Timestamp": timestamp.encode(),  # bytes: "²" is not ASCII
        "X-Slack-Signature": SignatureVerifier(secret).generate_signature(
            timestamp=timestamp, body=body
        ),
        "Content-Type": "application/x-www-form-urlencoded",
    }


def _press(adapter: SlackAdapter, fake: FakeSlack, channel_id: str, ts: str, value: str, **kw):
    payload = {
        "type": "block_actions",
        "user": {"id": "U1"},
        "channel": {"id": channel_id},
        "message": {"ts": ts},
        "response_url": f"{fake.url}/respond/{ts}",
        "actions": [{"action_id": "ask_user_1", "value": value}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    return httpx.post(
        f"{adapter.url}/slack/interactions", content=body, headers=_signed(body, **kw)
    )


@pytest.fixture
def fake():
    server = FakeSlack(BOT_TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def adapter(fake, gateway, tmp_path):
    running = SlackAdapter(fake, gateway, tmp_path / "slack")
    yield running
    running.stop()


def _the_message(fake: FakeSlack) -> str:
    wait_until(lambda: fake.posted(), timeout=20)
    return next(ts for (ch, ts) in fake.messages if ch == CHANNEL)


def test_a_signed_press_answers_and_the_message_becomes_its_summary(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE, session="slack")
    ts = _the_message(fake)
    buttons = fake.buttons(CHANNEL, ts)
    assert list(buttons) == ["Staging (Recommended)", "Production", "Dismiss"]
    assert _press(adapter, fake, CHANNEL, ts, buttons["Production"]).status_code == 200
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}

    def summarised() -> bool:
        message = fake.messages[(CHANNEL, ts)]
        return "Answered here." in message["text"] and len(message["blocks"]) == 1

    wait_until(summarised, timeout=20)


def test_unsigned_stale_or_forged_requests_change_nothing(fake, gateway, adapter):
    Agent(gateway, SINGLE, session="slack")
    ts = _the_message(fake)
    value = fake.buttons(CHANNEL, ts)["Production"]
    assert _press(adapter, fake, CHANNEL, ts, value, secret="wrong").status_code == 401
    assert _press(adapter, fake, CHANNEL, ts, value, age=600).status_code == 401
    response = httpx.post(f"{adapter.url}/slack/interactions", content=b"payload=%7B%7D")
    assert response.status_code == 401
    assert [p["status"] for p in gateway.device.get("/v1/prompts").json()["prompts"]] == ["pending"]


def test_a_press_from_another_channel_is_told_and_changes_nothing(fake, gateway, adapter):
    Agent(gateway, SINGLE, session="slack")
    ts = _the_message(fake)
    value = fake.buttons(CHANNEL, ts)["Production"]
    assert _press(adapter, fake, "C0OUTSIDER", ts, value).status_code == 200
    wait_until(lambda: any(e["text"] == channel.NOT_ALLOWED for e in fake.ephemeral))
    assert [p["status"] for p in gateway.device.get("/v1/prompts").json()["prompts"]] == ["pending"]


def test_a_reply_in_the_thread_answers(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE, session="slack")
    ts = _the_message(fake)
    event = {
        "type": "event_callback",
        "event": {"type": "message", "channel": CHANNEL, "thread_ts": ts, "text": "2"},
    }
    body = json.dumps(event).encode()
    headers = {**_signed(body), "Content-Type": "application/json"}
    assert (
        httpx.post(f"{adapter.url}/slack/events", content=body, headers=headers).status_code == 200
    )
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}


def test_the_events_url_is_verified_with_its_challenge(adapter):
    body = json.dumps({"type": "url_verification", "challenge": "abc123"}).encode()
    headers = {**_signed(body), "Content-Type": "application/json"}
    response = httpx.post(f"{adapter.url}/slack/events", content=body, headers=headers)
    assert response.json() == {"challenge": "abc123"}


@pytest.mark.parametrize("timestamp", ["²", "9" * 5000, ""], ids=["sup2", "long", "empty"])
def test_a_malformed_timestamp_is_refused_not_a_crash(fake, gateway, adapter, timestamp):
    Agent(gateway, SINGLE, session="slack")
    ts = _the_message(fake)
    value = fake.buttons(CHANNEL, ts)["Production"]
    assert _press(adapter, fake, CHANNEL, ts, value, timestamp=timestamp).status_code == 401


def test_a_replayed_press_acts_once(fake, gateway, adapter):
    """A captured signed press sent again within the five minutes: it un-ticked the option."""
    agent = Agent(gateway, SEVERAL, session="slack")
    ts = _the_message(fake)
    assert _press(adapter, fake, CHANNEL, ts, fake.buttons(CHANNEL, ts)["Production"]).is_success
    wait_until(lambda: "Search" in fake.buttons(CHANNEL, ts), timeout=20)
    buttons = fake.buttons(CHANNEL, ts)
    timestamp = str(int(time.time()))
    for _ in range(2):  # the same signed request twice
        replayed = _press(adapter, fake, CHANNEL, ts, buttons["Search"], timestamp=timestamp)
        assert replayed.status_code == 200
    assert _press(adapter, fake, CHANNEL, ts, buttons["Submit"]).status_code == 200
    assert agent.wait()["answers"]["answers"]["features"] == ["Search"]


def test_an_unsigned_body_is_not_read_and_a_huge_one_is_refused(adapter):
    url = f"{adapter.url}/slack/interactions"
    assert httpx.post(url, content=b"x" * 1_000_000).status_code == 401
    signed_looking = {"X-Slack-Request-Timestamp": "1", "X-Slack-Signature": "v0=00"}
    assert httpx.post(url, content=b"x" * 1_000_000, headers=signed_looking).status_code == 413


def test_a_body_that_never_comes_is_cut_at_its_deadline(adapter, monkeypatch):
    monkeypatch.setattr(http_deadlines, "BODY_TIMEOUT_SECONDS", 0.5)
    stalled_bodies_are_cut(
        adapter.port,
        "/slack/interactions",
        {"X-Slack-Request-Timestamp": "1", "X-Slack-Signature": "v0=00"},
    )

"""Discord over real HTTP: a real gateway, an agent's `ask_user`, the Discord adapter's
interactions endpoint receiving interactions signed with a real Ed25519 key, and a local
stand-in for the REST API."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from app import http_deadlines
from app.channels import adapter as channel
from app.channels.discord import serve
from app.channels.runtime import Joining
from tests.support import DEVICE_TOKEN, free_port, wait_until

from .fake_discord import FakeDiscord
from .harness import SEVERAL, SINGLE, Agent, RunningChannel, stalled_bodies_are_cut

BOT_TOKEN = "discord-bot-token"
CHANNEL = "112233445566"
KEY = Ed25519PrivateKey.generate()
PUBLIC_KEY = KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


class DiscordAdapter(RunningChannel):
    def __init__(self, fake: FakeDiscord, gateway, data_dir) -> None:
        self.port = free_port()
        super().__init__(
            lambda stop, started: serve(
                bot_token=BOT_TOKEN,
                public_key=PUBLIC_KEY,
                channels=[CHANNEL],
                data_dir=data_dir,
                joining=Joining(gateway.url, DEVICE_TOKEN),
                port=self.port,
                api_url=fake.url,
                stop=stop,
                started=started,
            )
        )

    def interact(
        self,
        interaction: dict,
        key: Ed25519PrivateKey = KEY,
        timestamp: str | None = None,
        spell: Callable[[str], str] = str,
    ) -> httpx.Response:
        """Signed as Discord signs; `spell` re-spells the signature's hex (a replayer's)."""
        body = json.dumps(interaction).encode()
        timestamp = str(int(time.time())) if timestamp is None else timestamp
        headers = {
            "X-Signature-Ed25519": spell(key.sign(timestamp.encode() + body).hex()),
            "X-Signature-Timestamp": timestamp.encode(),  # bytes: "²" is not ASCII
            "Content-Type": "application/json",
        }
        return httpx.post(
            f"http://127.0.0.1:{self.port}/discord/interactions", content=body, headers=headers
        )


def _component(message: str, custom_id: str, channel_id: str = CHANNEL) -> dict:
    return {
        "id": f"ix{message}{custom_id}",
        "type": 3,
        "channel_id": channel_id,
        "message": {"id": message},
        "data": {"custom_id": custom_id, "component_type": 2},
    }


@pytest.fixture
def fake():
    server = FakeDiscord(BOT_TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def adapter(fake, gateway, tmp_path):
    running = DiscordAdapter(fake, gateway, tmp_path / "discord")
    yield running
    running.stop()


def _the_message(fake: FakeDiscord) -> str:
    wait_until(lambda: fake.created, timeout=20)
    return next(m for (ch, m) in fake.messages if ch == CHANNEL)


def test_ping_is_answered_and_a_forged_signature_is_refused(adapter):
    assert adapter.interact({"type": 1}).json() == {"type": 1}
    forged = adapter.interact({"type": 1}, key=Ed25519PrivateKey.generate())
    assert forged.status_code == 401


@pytest.mark.parametrize(
    "timestamp", ["1733212800", "", "²", "9" * 5000], ids=["a-year-old", "empty", "sup2", "long"]
)
def test_a_stale_or_malformed_timestamp_is_refused_even_when_signed(adapter, timestamp):
    assert adapter.interact({"type": 1}, timestamp=timestamp).status_code == 401


def test_a_replayed_interaction_is_refused(adapter):
    timestamp = str(int(time.time()))
    assert adapter.interact({"type": 1}, timestamp=timestamp).status_code == 200
    assert adapter.interact({"type": 1}, timestamp=timestamp).status_code == 401


@pytest.mark.parametrize(
    "respell", [str.upper, lambda hex_: " ".join(hex_[i : i + 2] for i in range(0, 128, 2))]
)
def test_a_replay_with_the_signature_spelled_otherwise_is_refused(adapter, respell):
    """The same signature bytes in other hex (#39): only Discord's own lower-case form counts,
    so a replay cannot pass as a new press by changing how its signature is written."""
    timestamp = str(int(time.time()))
    assert adapter.interact({"type": 1}, timestamp=timestamp).status_code == 200
    replayed = adapter.interact({"type": 1}, timestamp=timestamp, spell=respell)
    assert replayed.status_code == 401


def test_an_unsigned_body_is_not_read_and_a_huge_one_is_refused(adapter):
    url = f"http://127.0.0.1:{adapter.port}/discord/interactions"
    assert httpx.post(url, content=b"x" * 1_000_000).status_code == 401
    huge = httpx.post(
        url,
        content=b"x" * 1_000_000,
        headers={"X-Signature-Ed25519": "00" * 64, "X-Signature-Timestamp": "1"},
    )
    assert huge.status_code == 413


def test_a_press_answers_and_the_buttons_go(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE, session="discord")
    message = _the_message(fake)
    buttons = fake.buttons(CHANNEL, message)
    assert list(buttons) == ["Staging (Recommended)", "Production", "Other…", "Dismiss"]
    response = adapter.interact(_component(message, buttons["Production"]))
    assert response.json() == {"type": 6}  # acknowledged; the message updates itself
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}

    def summarised() -> bool:
        state = fake.messages[(CHANNEL, message)]
        return "Answered here." in state["content"] and not state["components"]

    wait_until(summarised, timeout=20)


def test_other_opens_a_text_box_whose_answer_is_taken(fake, gateway, adapter):
    agent = Agent(gateway, SEVERAL, session="discord")
    message = _the_message(fake)
    box = adapter.interact(_component(message, fake.buttons(CHANNEL, message)["Other…"])).json()
    assert box["type"] == 9
    submit = {
        "id": "ix-modal",
        "type": 5,
        "channel_id": CHANNEL,
        "data": {
            "custom_id": box["data"]["custom_id"],
            "components": [
                {
                    "type": 1,
                    "components": [{"type": 4, "custom_id": "text", "value": "1: 2\n2: 1, 3"}],
                }
            ],
        },
    }
    assert adapter.interact(submit).json() == {"type": 6}
    assert agent.wait()["answers"]["answers"] == {
        "deploy_target": ["Production"],
        "features": ["Search", "Dark mode"],
    }


def test_a_press_from_another_channel_is_told_only_to_the_presser(fake, gateway, adapter):
    Agent(gateway, SINGLE, session="discord")
    message = _the_message(fake)
    custom_id = fake.buttons(CHANNEL, message)["Production"]
    response = adapter.interact(_component(message, custom_id, channel_id="999"))
    assert response.json() == {"type": 4, "data": {"content": channel.NOT_ALLOWED, "flags": 64}}
    assert [p["status"] for p in gateway.device.get("/v1/prompts").json()["prompts"]] == ["pending"]


def test_a_body_that_never_comes_is_cut_at_its_deadline(adapter, monkeypatch):
    monkeypatch.setattr(http_deadlines, "BODY_TIMEOUT_SECONDS", 0.5)
    stalled_bodies_are_cut(
        adapter.port,
        "/discord/interactions",
        {"X-Signature-Ed25519": "00" * 64, "X-Signature-Timestamp": "1"},
    )

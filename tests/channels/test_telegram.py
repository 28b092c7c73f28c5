"""The whole loop over real HTTP: a real gateway, an agent's `ask_user`, the Telegram adapter, and
a local Bot API server that records what the bot sends and hands out presses and replies."""

from __future__ import annotations

import pytest

from app.channels import adapter as channel
from app.channels.render import MAX_CALLBACK_BYTES
from app.channels.runtime import Joining
from app.channels.telegram import serve
from tests.support import DEVICE_TOKEN, wait_until

from .fake_telegram import FakeTelegram
from .harness import SEVERAL, SINGLE, Agent, RunningChannel

BOT_TOKEN = "123456:test-bot-token"
CHAT = 4242
OUTSIDER = 9999


def running_telegram(fake: FakeTelegram, data_dir, joining: Joining) -> RunningChannel:
    return RunningChannel(
        lambda stop, _started: serve(
            bot_token=BOT_TOKEN,
            chats=[str(CHAT)],
            data_dir=data_dir,
            joining=joining,
            api_url=fake.url,
            poll_seconds=1,
            stop=stop,
        ),
        waits_for_start=False,
    )


def Adapter(fake: FakeTelegram, gateway, data_dir, pair_link: str | None = "") -> RunningChannel:
    """With a token (the default), by a pairing link, or (None) as paired before."""
    if pair_link == "":
        return running_telegram(fake, data_dir, Joining(gateway.url, DEVICE_TOKEN))
    return running_telegram(fake, data_dir, Joining(pair_link=pair_link))


@pytest.fixture
def fake():
    server = FakeTelegram(BOT_TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def adapter(fake, gateway, tmp_path):
    running = Adapter(fake, gateway, tmp_path / "telegram")
    yield running
    running.stop()


def _the_message(fake: FakeTelegram, count: int = 1) -> int:
    wait_until(lambda: len(fake.sent("sendMessage")) >= count, timeout=20)
    return max(number for chat, number in fake.messages if chat == CHAT)


def _button(fake: FakeTelegram, message: int, label: str) -> str:
    return dict(fake.buttons(CHAT, message))[label]


def _summary(fake: FakeTelegram, message: int, *needles: str) -> str:
    def shown() -> bool:
        state = fake.messages[(CHAT, message)]
        return not state.get("reply_markup") and all(n in state["text"] for n in needles)

    wait_until(shown, timeout=20)
    return fake.messages[(CHAT, message)]["text"]


def test_a_tap_answers_the_agent_with_exactly_the_option_tapped(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    text = fake.messages[(CHAT, message)]["text"]
    assert "Target — Where should this deploy?" in text and "reply to this message" in text
    labels = [label for label, _ in fake.buttons(CHAT, message)]
    assert labels == ["Staging (Recommended)", "Production", "Dismiss"]
    assert all(len(data.encode()) <= MAX_CALLBACK_BYTES for _, data in fake.buttons(CHAT, message))
    fake.press(CHAT, message, _button(fake, message, "Production"))
    assert agent.wait() == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert "→ Production" in _summary(fake, message, "Answered here.")


def test_a_text_reply_answers(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    fake.reply(CHAT, message, "the canary cluster, please")
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["the canary cluster, please"]}
    _summary(fake, message, "→ the canary cluster, please")


def test_several_questions_one_at_a_time_with_ticks_then_submit(fake, gateway, adapter):
    agent = Agent(gateway, SEVERAL)
    message = _the_message(fake)
    # Who asks first (#40: the Agent asks in session "tg"), then where the person is.
    assert fake.messages[(CHAT, message)]["text"].startswith("tg\nQuestion 1 of 2")
    fake.press(CHAT, message, _button(fake, message, "Staging (Recommended)"))
    wait_until(lambda: "Question 2 of 2" in fake.messages[(CHAT, message)]["text"], timeout=20)
    fake.press(CHAT, message, _button(fake, message, "Submit"))  # nothing ticked yet
    wait_until(
        lambda: any(p.get("text") == channel.CHOOSE_ONE for p in fake.sent("answerCallbackQuery"))
    )
    fake.press(CHAT, message, _button(fake, message, "Search"))
    wait_until(lambda: "✓ Search" in dict(fake.buttons(CHAT, message)), timeout=20)
    fake.press(CHAT, message, _button(fake, message, "Dark mode"))
    wait_until(lambda: "✓ Dark mode" in dict(fake.buttons(CHAT, message)), timeout=20)
    fake.press(CHAT, message, _button(fake, message, "Submit"))
    assert agent.wait()["answers"]["answers"] == {
        "deploy_target": ["Staging (Recommended)"],
        "features": ["Search", "Dark mode"],
    }


def test_answered_on_the_phone_edits_the_message_and_a_late_tap_is_told(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    data = _button(fake, message, "Production")
    prompt_id = gateway.device.get("/v1/prompts").json()["prompts"][0]["id"]
    answered = gateway.device.post(
        f"/v1/prompts/{prompt_id}/answer",
        json={"answers": {"deploy_target": ["staging (recommended)"]}},
    )
    assert answered.status_code == 200
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}
    _summary(fake, message, "Answered elsewhere.", "→ Staging (Recommended)")
    fake.press(CHAT, message, data)  # a tap on the stale keyboard of another client
    wait_until(
        lambda: any(
            p.get("text") == "Answered elsewhere." for p in fake.sent("answerCallbackQuery")
        )
    )
    assert gateway.device.get(f"/v1/prompts/{prompt_id}").json()["answers"] == {
        "deploy_target": ["Staging (Recommended)"]
    }


def test_an_outsiders_tap_changes_nothing(fake, gateway, adapter):
    Agent(gateway, SINGLE)
    message = _the_message(fake)
    fake.press(OUTSIDER, message, _button(fake, message, "Production"))
    wait_until(
        lambda: any(p.get("text") == channel.NOT_ALLOWED for p in fake.sent("answerCallbackQuery"))
    )
    prompts = gateway.device.get("/v1/prompts").json()["prompts"]
    assert [p["status"] for p in prompts] == ["pending"]


def test_expiry_and_dismiss_are_summarised(fake, gateway, adapter):
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    fake.press(CHAT, message, _button(fake, message, "Dismiss"))
    assert agent.wait() == {"status": "no_answer", "reason": "dismissed"}
    _summary(fake, message, "Dismissed.")


def test_a_restart_sends_no_duplicate_and_keeps_the_message(fake, gateway, tmp_path):
    first = Adapter(fake, gateway, tmp_path / "telegram")
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    first.stop()
    second = Adapter(fake, gateway, tmp_path / "telegram")
    try:
        fake.press(CHAT, message, _button(fake, message, "Production"))
        assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}
        _summary(fake, message, "Answered here.")
        assert len(fake.sent("sendMessage")) == 1
    finally:
        second.stop()


def test_paired_by_a_link_like_a_phone_then_restarted_without_it(fake, gateway, tmp_path):
    link = gateway.admin.post("/v1/pairings", json={"gatewayUrl": gateway.url}).json()["link"]
    first = Adapter(fake, gateway, tmp_path / "telegram", pair_link=link)
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    devices = gateway.admin.get("/v1/devices").json()["devices"]
    assert [d["name"] for d in devices] == ["Telegram"]  # its own token, revocable on its own
    first.stop()
    second = Adapter(fake, gateway, tmp_path / "telegram", pair_link=None)  # as paired before
    try:
        fake.press(CHAT, message, _button(fake, message, "Production"))
        assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}
    finally:
        second.stop()


def test_the_command_says_what_is_missing(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    env["ASK_USER_TELEGRAM_TOKEN"] = BOT_TOKEN
    done = subprocess.run(
        [sys.executable, "-m", "app", "telegram"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "ASK_USER_TELEGRAM_CHAT_ID" in done.stderr
    assert "ASK_USER_TELEGRAM_TOKEN" not in done.stderr
    env["ASK_USER_TELEGRAM_CHAT_ID"] = str(CHAT)
    unpaired = subprocess.run(
        [sys.executable, "-m", "app", "telegram", "--data-dir", str(tmp_path / "tg")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert unpaired.returncode == 2
    assert "--pair" in unpaired.stderr and "ASK_USER_DEVICE_TOKEN" in unpaired.stderr


@pytest.mark.parametrize(
    "forged", ["{key}:t:0", "{key}:q:0", "{key}:n:0", "{key}:p:7", "{key}:p:" + "9" * 5000, "x"]
)
def test_forged_button_data_is_told_and_changes_nothing(fake, gateway, adapter, forged):
    """Data the keyboard never had, from the allowed chat: a tick on a single choice, an
    unknown action, Done where there is none, an option out of range, digits past int()."""
    agent = Agent(gateway, SINGLE)
    message = _the_message(fake)
    key = _button(fake, message, "Production").split(":")[0]
    fake.press(CHAT, message, forged.format(key=key))
    wait_until(
        lambda: any(
            p.get("text") == "This button is no longer valid."
            for p in fake.sent("answerCallbackQuery")
        )
    )
    assert not any(p.get("text") == "Sent." for p in fake.sent("answerCallbackQuery"))
    prompts = gateway.device.get("/v1/prompts").json()["prompts"]
    assert [p["status"] for p in prompts] == ["pending"]
    fake.press(CHAT, message, _button(fake, message, "Production"))  # the real one still works
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}


@pytest.mark.parametrize("how", ["tap", "reply"])
def test_a_tap_or_a_reply_before_the_send_came_back_is_taken(fake, gateway, adapter, how):
    """Seen in CI: the person taps (or replies) while the bot still waits for sendMessage's
    answer, so the adapter does not know the message's id yet; it waits for it."""
    fake.send_answer_delay = 1.5
    agent = Agent(gateway, SINGLE)
    wait_until(lambda: fake.messages, timeout=20)  # there, before its sender knows its id
    message = max(number for chat, number in fake.messages if chat == CHAT)
    if how == "tap":
        fake.press(CHAT, message, _button(fake, message, "Production"))
    else:
        fake.reply(CHAT, message, "2")
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}


def test_the_message_names_who_is_asking(fake, gateway, adapter):
    """#40: with several agents waiting, each message says which one asks, in the app's words."""
    agent = Agent(gateway, SINGLE, session="claude-code:~/code/shop-api")
    message = _the_message(fake)
    assert fake.messages[(CHAT, message)]["text"].startswith("Claude Code · shop-api\n")
    fake.press(CHAT, message, _button(fake, message, "Production"))
    assert agent.wait()["answers"]["answers"] == {"deploy_target": ["Production"]}
    _summary(fake, message, "Claude Code · shop-api")

"""Every stop (docs/PROTOCOL.md v1.5, #54): a permission or a plan is a prompt of its kind,
carrying what the person must see to decide; its shape is checked field by field; its
deadline decides nothing. Over a real gateway on 127.0.0.1, on both stores."""

from __future__ import annotations

import pytest

from tests.support import prompt_body

pytestmark = pytest.mark.both_stores

RUN_TESTS = {
    "id": "decision",
    "header": "Permission",
    "question": "Claude Code · shop wants to run a command",
    "options": [
        {"label": "Allow once"},
        {"label": "Allow always", "description": "Adds the rule Bash(npm test:*)"},
        {"label": "Deny"},
    ],
}
STOP = {
    "program": "Claude Code",
    "tool": "Bash",
    "command": "npm test -- --watch=false\n# and then\nnpm run lint",
    "always": "Allow always",
    "rule": "Bash(npm test:*)",
}


def test_a_permission_carries_what_it_is_about_to_every_device(gateway):
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    made = gateway.agent.post(
        "/v1/prompts",
        json=prompt_body("claude-code:~/shop", questions=[RUN_TESTS], kind="permission", stop=STOP),
    )
    assert made.status_code == 201, made.text
    record = made.json()
    assert record["kind"] == "permission" and record["stop"] == STOP
    listed = gateway.device.get("/v1/prompts").json()["prompts"]
    assert [p["stop"]["command"] for p in listed] == [STOP["command"]]
    [event] = gateway.device.get("/v1/events", params={"after": cursor, "wait": 0}).json()["events"]
    assert event["prompt"]["kind"] == "permission" and event["prompt"]["stop"] == STOP
    # A plain question is what it always was.
    plain = gateway.create(session="plain")
    assert plain["kind"] == "question" and plain.get("stop") is None


@pytest.mark.parametrize(
    ("overrides", "field", "said"),
    [
        ({"kind": "permission"}, "stop", "needs it"),
        ({"stop": STOP}, "stop", "only a permission or a plan carries it"),
        (
            {
                "kind": "plan",
                "stop": {**STOP, "always": None},
                "questions": [RUN_TESTS, {**RUN_TESTS, "id": "again"}],
            },
            "questions",
            "one single-select question",
        ),
        (
            {"kind": "permission", "stop": {**STOP, "always": "Always"}},
            "stop.always",
            "must be one of",
        ),
        (
            {"kind": "permission", "stop": {**STOP, "command": "rm -rf /\x00"}},
            "stop.command",
            "NUL",
        ),
        ({"kind": "permission", "stop": {**STOP, "tool": "Ba\nsh"}}, "stop.tool", "control"),
        ({"kind": "permission", "stop": {**STOP, "diff": "+" * 12_001}}, "stop.diff", "12000"),
        ({"kind": "vote", "stop": STOP}, "kind", "question"),
    ],
)
def test_a_wrong_stop_says_which_field_and_makes_nothing(gateway, overrides, field, said):
    body = {**prompt_body("claude-code:~/shop", questions=[RUN_TESTS]), **overrides}
    refused = gateway.agent.post("/v1/prompts", json=body)
    assert refused.status_code == 422, refused.text
    fields = refused.json()["error"]["fields"]
    assert [f["path"] for f in fields] == [field], fields
    assert said in fields[0]["message"]
    assert gateway.device.get("/v1/prompts").json()["prompts"] == []


def test_a_permissions_deadline_decides_nothing(gateway):
    made = gateway.agent.post(
        "/v1/prompts",
        json=prompt_body(
            "s", questions=[RUN_TESTS], kind="permission", stop=STOP, timeoutSeconds=30
        ),
    ).json()
    gateway.clock.advance(31)
    result = gateway.agent.get(f"/v1/prompts/{made['id']}/result", params={"wait": 0}).json()
    assert result == {"status": "no_answer", "reason": "expired"}  # the program asks itself


def test_allow_always_is_never_a_notification_action_a_chat_button_or_a_link_choice(gateway):
    """#54 (4): a notification's one-tap actions, a chat's buttons and an answer link's
    `?choose=N` offer allow once and deny; "allow always" only in front of its rule."""
    from app.channels.render import View, keyboard
    from app.gateway.core.notify import announcement
    from app.protocol import PromptRecord

    made = gateway.agent.post(
        "/v1/prompts",
        json=prompt_body("s", questions=[RUN_TESTS], kind="permission", stop=STOP),
    )
    record = PromptRecord.model_validate(made.json())
    link = "https://gw.example/a/token"
    actions = announcement(record, link).one_tap
    assert actions == (("Allow once", f"{link}?choose=1"), ("Deny", f"{link}?choose=3"))
    buttons = [b.label for row in keyboard(record, View(), key=7) for b in row]
    assert "Allow always" not in buttons and {"Allow once", "Deny"} <= set(buttons)
    # A plain question offers every option, as before.
    plain = PromptRecord.model_validate(gateway.create(session="plain"))
    assert len(announcement(plain, link).one_tap) == len(plain.questions[0].options)

"""`ask-user claude-hook` as Claude Code's PermissionRequest hook (#54): the documented JSON on
stdin, a real gateway, the person's choice on a device, Claude Code's decision on stdout; and
every path where nobody chose makes no decision, so the terminal's own dialog asks."""

from __future__ import annotations

import json

import pytest

from tests.support import device_post, next_pending

from .test_claude_hook import PROJECT, _finish, _hook

SUGGESTION = {
    "type": "addRules",
    "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
    "behavior": "allow",
    "destination": "localSettings",
}


def _permission(tool: str, tool_input: dict, suggestions: list | None = None) -> dict:
    """What Claude Code sends a PermissionRequest hook before it shows its dialog."""
    return {
        "session_id": "8c35adc1-5f2e-4b7e-9d0a-1b2c3d4e5f60",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-code-shop/8c35adc1.jsonl",
        "cwd": PROJECT,
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": tool,
        "tool_input": tool_input,
        **({"permission_suggestions": suggestions} if suggestions is not None else {}),
    }


def _decision(out: str) -> dict:
    output = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "PermissionRequest"
    return output["decision"]


def test_a_command_is_a_card_with_the_command_and_allow_always_adds_the_rule(gateway):
    asked = _permission("Bash", {"command": "npm test -- --watch=false"}, [SUGGESTION])
    process = _hook(gateway.url, asked)
    prompt = next_pending(gateway.url)
    assert prompt["kind"] == "permission" and prompt["sessionKey"] == f"claude-code:{PROJECT}"
    assert prompt["stop"] == {
        "program": "Claude Code",
        "tool": "Bash",
        "command": "npm test -- --watch=false",
        "always": "Allow always",
        "rule": "Bash(npm test:*) (this project, on this machine)",
    }
    [question] = prompt["questions"]
    assert [o["label"] for o in question["options"]] == ["Allow once", "Allow always", "Deny"]
    assert question["options"][1]["description"] == (
        "Adds Bash(npm test:*) (this project, on this machine)"
    )
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow always"]}})
    code, out, err = _finish(process)
    assert code == 0, err
    assert _decision(out) == {"behavior": "allow", "updatedPermissions": [SUGGESTION]}


@pytest.mark.parametrize(
    ("chosen", "decided"),
    [
        ("Allow once", {"behavior": "allow"}),
        (
            "Deny",
            {"behavior": "deny", "message": "The user denied this on their phone (Ask User)."},
        ),
        (
            "Build it with make instead",
            {
                "behavior": "deny",
                "message": "The user denied this on their phone (Ask User) and said: "
                "Build it with make instead",
            },
        ),
    ],
)
def test_allow_once_deny_and_deny_with_a_note(gateway, chosen, decided):
    process = _hook(gateway.url, _permission("Bash", {"command": "rm -rf build/"}))
    prompt = next_pending(gateway.url)
    labels = [o["label"] for o in prompt["questions"][0]["options"]]
    assert labels == ["Allow once", "Deny"]  # no suggestion offered: no "allow always"
    assert "always" not in prompt["stop"]
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": [chosen]}})
    code, out, err = _finish(process)
    assert code == 0, err
    assert _decision(out) == decided


def test_an_edit_shows_its_file_and_change_as_a_diff(gateway):
    edit = {
        "file_path": "/home/dev/code/shop/app/config.py",
        "old_string": "DEBUG = True\nPORT = 8000",
        "new_string": "DEBUG = False\nPORT = 8000",
    }
    process = _hook(gateway.url, _permission("Edit", edit))
    prompt = next_pending(gateway.url)
    stop = prompt["stop"]
    assert stop["path"] == edit["file_path"]
    assert stop["diff"].splitlines() == [
        "--- a/config.py",
        "+++ b/config.py",
        "@@ -1,2 +1,2 @@",
        "-DEBUG = True",
        "+DEBUG = False",
        " PORT = 8000",
    ]
    assert prompt["questions"][0]["question"] == "Claude Code asks to change config.py."
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow once"]}})
    assert _decision(_finish(process)[1]) == {"behavior": "allow"}


def test_a_plan_is_a_plan_card_and_keep_planning_carries_the_feedback(gateway):
    plan = "# Plan\n\n1. Add the `users` table\n2. Migrate\n\n```sql\nCREATE TABLE users;\n```"
    process = _hook(gateway.url, _permission("ExitPlanMode", {"plan": plan}))
    prompt = next_pending(gateway.url)
    assert prompt["kind"] == "plan" and prompt["stop"]["plan"] == plan
    labels = [o["label"] for o in prompt["questions"][0]["options"]]
    assert labels == ["Approve the plan", "Keep planning"]
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Split step 2"]}})
    assert _decision(_finish(process)[1]) == {
        "behavior": "deny",
        "message": "The user wants you to keep planning (Ask User) and said: Split step 2",
    }


def test_a_dismissed_or_expired_card_decides_nothing_and_the_terminal_asks(gateway):
    process = _hook(gateway.url, _permission("Bash", {"command": "git push --force"}))
    prompt = next_pending(gateway.url)
    device_post(gateway.url, prompt["id"], "dismiss")
    code, out, err = _finish(process)
    assert (code, out) == (0, "") and "Claude Code asks itself" in err
    process = _hook(gateway.url, _permission("Bash", {"command": "git push --force"}))
    prompt = next_pending(gateway.url)
    gateway.clock.advance(901)  # its deadline: no_answer, never a decision
    code, out, _ = _finish(process)
    assert (code, out) == (0, "")


def test_a_long_command_is_cut_with_a_mark_and_the_gateway_takes_it(gateway):
    command = "echo " + "x" * 5000
    process = _hook(gateway.url, _permission("Bash", {"command": command}))
    prompt = next_pending(gateway.url)
    shown = prompt["stop"]["command"]
    assert len(shown) == 4000 and shown.endswith("(cut: the whole of it is in the terminal)")
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow once"]}})
    assert _decision(_finish(process)[1]) == {"behavior": "allow"}


def test_answered_at_the_terminal_the_card_leaves_the_phone(gateway, tmp_path):
    """Claude Code shows its own dialog while the hook waits and tells the hook nothing when
    the person answers there; the session's transcript does: once the call has its result
    the card is cancelled and the hook decides nothing. An earlier run of the same command,
    answered long ago, is not mistaken for it."""
    command = {"command": "npm test"}
    transcript = tmp_path / "session.jsonl"

    def line(kind: str, block: dict) -> str:
        return json.dumps({"type": kind, "message": {"content": [block]}}) + "\n"

    transcript.write_text(
        line("assistant", {"type": "tool_use", "id": "toolu_old", "name": "Bash", "input": command})
        + line("user", {"type": "tool_result", "tool_use_id": "toolu_old", "content": "ok"})
        + line(
            "assistant", {"type": "tool_use", "id": "toolu_new", "name": "Bash", "input": command}
        )
    )
    asked = {**_permission("Bash", command), "transcript_path": str(transcript)}
    process = _hook(gateway.url, asked)
    prompt = next_pending(gateway.url)
    with transcript.open("a") as file:  # the person chose "Yes" at the terminal
        file.write(
            line("user", {"type": "tool_result", "tool_use_id": "toolu_new", "content": "ok"})
        )
    code, out, err = _finish(process)
    assert (code, out) == (0, "") and "answered in the terminal" in err
    record = gateway.device.get(f"/v1/prompts/{prompt['id']}").json()
    assert record["status"] == "cancelled"


def test_a_plan_claude_code_keeps_out_of_the_hook_input_is_read_from_the_transcript(
    gateway, tmp_path
):
    """Claude Code 2.1.332 gives the hook an empty ExitPlanMode input (measured in the TUI);
    the plan is the model's own call in the session's transcript. Approving allows with the
    input as given, the one shape its plan dialog takes from a hook."""
    plan = "# Add sign-in\n\n1. Add the users table"
    transcript = tmp_path / "session.jsonl"
    call = {"type": "tool_use", "id": "toolu_plan", "name": "ExitPlanMode", "input": {"plan": plan}}
    transcript.write_text(json.dumps({"type": "assistant", "message": {"content": [call]}}) + "\n")
    asked = {**_permission("ExitPlanMode", {}), "transcript_path": str(transcript)}
    process = _hook(gateway.url, asked)
    prompt = next_pending(gateway.url)
    assert prompt["kind"] == "plan" and prompt["stop"]["plan"] == plan
    answer = {"answers": {"decision": ["Approve the plan"]}}
    device_post(gateway.url, prompt["id"], "answer", answer)
    assert _decision(_finish(process)[1]) == {"behavior": "allow", "updatedInput": {}}

"""`ask-user codex-hook` as Codex 0.171 runs it (#54): the JSON its hooks are sent (as measured
with the real program: docs/agents.md), a real gateway, the person's choice on a device, and
Codex's decision on stdout. Every path where nobody chose makes no decision; a hook Codex
kills with SIGKILL still takes its card off the phone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx

from tests.support import AGENT_TOKEN, device_post, next_pending, wait_until

from .test_claude_hook import _finish, _hook
from .test_real_agents import _prompts

PROJECT = "/home/dev/code/shop"
SESSION = "01a25339-cbe2-7332-a707-96428c38250d"
ROLLOUT = {
    "id": "rollout",
    "header": "Rollout",
    "question": "How should the release roll out?",
    "options": [
        {"label": "Canary (Recommended)", "description": "5% first, then all"},
        {"label": "All at once", "description": "Everyone in one step"},
    ],
}


def _codex_input(event: str, tool: str, tool_input: dict) -> dict:
    return {
        "session_id": SESSION,
        "turn_id": "01a25334-c08d-76f3-b3aa-b9c73abf00d2",
        "transcript_path": f"/home/dev/.codex/sessions/2026/12/08/rollout-{SESSION}.jsonl",
        "cwd": PROJECT,
        "hook_event_name": event,
        "model": "gpt-5.1-codex",
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": tool_input,
        **({"tool_use_id": "call_0"} if event == "PreToolUse" else {}),
    }


def _codex_hook(url: str | None, hook_input: dict, **env: str) -> subprocess.Popen:
    return _hook(url, hook_input, "codex-hook", **env)


def _output(out: str) -> dict:
    return json.loads(out)["hookSpecificOutput"]


def test_plan_mode_questions_keep_their_ids_and_the_answer_comes_back_in_codexs_shape(gateway):
    process = _codex_hook(
        gateway.url, _codex_input("PreToolUse", "request_user_input", {"questions": [ROLLOUT]})
    )
    prompt = next_pending(gateway.url)
    assert prompt["kind"] == "question" and prompt["sessionKey"] == f"codex:{PROJECT}"
    assert prompt["agentId"] == "codex/01a25339" and prompt["runId"] == SESSION
    [question] = prompt["questions"]
    assert question["id"] == "rollout" and question["options"] == ROLLOUT["options"]
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"rollout": ["All at once"]}})
    code, out, err = _finish(process)
    assert code == 0, err
    output = _output(out)
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    said = output["permissionDecisionReason"]
    assert said.startswith("The user answered on their phone (Ask User)")
    answer = json.loads(said[said.index("{") :])
    assert answer == {"answers": {"rollout": {"answers": ["All at once"]}}}


def test_dismissed_questions_tell_the_model_to_go_on_and_an_expiry_lets_codex_ask(gateway):
    asked = _codex_input("PreToolUse", "request_user_input", {"questions": [ROLLOUT]})
    process = _codex_hook(gateway.url, asked)
    device_post(gateway.url, next_pending(gateway.url)["id"], "dismiss")
    code, out, _ = _finish(process)
    assert code == 0 and "best judgment" in _output(out)["permissionDecisionReason"]

    process = _codex_hook(gateway.url, asked)
    prompt = next_pending(gateway.url)
    with_agent = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    httpx.post(f"{gateway.url}/v1/prompts/{prompt['id']}/cancel", headers=with_agent, json={})
    code, out, err = _finish(process)
    assert code == 0 and out == "" and "Codex asks itself" in err


def test_an_approval_names_codex_the_command_and_its_reason_and_allows_once(gateway):
    command = {"command": "npm publish --tag next", "description": "Publish the release"}
    process = _codex_hook(gateway.url, _codex_input("PermissionRequest", "Bash", command))
    prompt = next_pending(gateway.url)
    assert prompt["kind"] == "permission"
    assert prompt["stop"] == {"program": "Codex", "tool": "Bash", "command": command["command"]}
    [question] = prompt["questions"]
    assert question["question"] == "Codex asks to run this command: Publish the release"
    # Codex takes allow or deny only: no rule to add, so never "Allow always".
    assert [o["label"] for o in question["options"]] == ["Allow once", "Deny"]
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow once"]}})
    code, out, err = _finish(process)
    assert code == 0, err
    assert _output(out) == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}


def test_a_denial_with_a_note_tells_codex_what_to_do_instead(gateway):
    command = {"command": "rm -rf dist"}
    process = _codex_hook(gateway.url, _codex_input("PermissionRequest", "Bash", command))
    prompt = next_pending(gateway.url)
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Use make clean"]}})
    code, out, _ = _finish(process)
    assert code == 0 and _output(out)["decision"] == {
        "behavior": "deny",
        "message": "The user denied this on their phone (Ask User) and said: Use make clean",
    }


def test_a_patch_is_shown_as_its_file_and_diff(gateway):
    patch = (
        "*** Begin Patch\n*** Update File: src/config.py\n@@\n-DEBUG = True\n+DEBUG = False\n"
        "*** End Patch\n"
    )
    process = _codex_hook(
        gateway.url, _codex_input("PermissionRequest", "apply_patch", {"command": patch})
    )
    prompt = next_pending(gateway.url)
    assert prompt["stop"]["path"] == "src/config.py"
    assert "-DEBUG = True\n+DEBUG = False" in prompt["stop"]["diff"]
    assert prompt["questions"][0]["question"] == "Codex asks to change config.py."
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Deny"]}})
    code, out, _ = _finish(process)
    assert code == 0 and _output(out)["decision"]["behavior"] == "deny"


def test_a_hook_killed_with_sigkill_takes_its_card_off_the_phone(gateway):
    """Esc in Codex's TUI ends the hook with SIGKILL: no code of the hook runs after it."""
    command = {"command": "make deploy"}
    process = _codex_hook(gateway.url, _codex_input("PermissionRequest", "Bash", command))
    prompt = next_pending(gateway.url)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    [cancelled] = wait_until(lambda: _prompts(gateway, "cancelled"), 15, 0.1)
    assert cancelled["id"] == prompt["id"]
    assert cancelled["resolvedBy"] == {"kind": "agent", "reason": "run-abort"}


def test_an_answer_ends_the_guard_without_cancelling(gateway):
    process = _codex_hook(
        gateway.url, _codex_input("PermissionRequest", "Bash", {"command": "make test"})
    )
    prompt = next_pending(gateway.url)
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow once"]}})
    assert _finish(process)[0] == 0
    guards = ["pgrep", "-f", f"app.agent.guard {SESSION}"]
    wait_until(lambda: subprocess.run(guards, capture_output=True).returncode == 1, 10, 0.1)
    assert _prompts(gateway, "answered")[0]["id"] == prompt["id"]


def test_the_hook_asks_the_gateway_setup_wrote_for_codexs_server(gateway, tmp_path):
    """Codex passes hooks none of our settings: the hook reads the MCP server's env that
    `setup codex` wrote into config.toml."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_USER_", "CODEX"))}
    done = subprocess.run(
        [sys.executable, "-m", "app", "setup", "codex", "--gateway-url", gateway.url,
         "--token", AGENT_TOKEN],
        env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    process = _codex_hook(
        None,
        _codex_input("PermissionRequest", "Bash", {"command": "make test"}),
        HOME=str(home),
        ASK_USER_GATEWAY_DATA=str(tmp_path / "no-gateway-here"),
    )
    prompt = next_pending(gateway.url)
    assert prompt["stop"]["command"] == "make test"
    device_post(gateway.url, prompt["id"], "dismiss")
    code, out, err = _finish(process)
    assert code == 0 and out == "", err  # dismissed: no decision, Codex's own dialog asks

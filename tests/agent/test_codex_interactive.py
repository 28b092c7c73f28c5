"""Codex's interactive UI as people run it (#51, #54): the real Codex in tmux, configured only by
`ask-user setup codex` in a temporary HOME, in a git project it was told to trust, its hooks
trusted once as the person is asked to; a scripted model on 127.0.0.1; the person answering
from the device API.

Codex shows its own approval dialog only after its hooks return, so while a card waits its
terminal says what `setup` told it to ("Waiting for your answer on your phone"); Esc there
ends the hook with SIGKILL, and the card still leaves the phone (guard.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.agent.scripted_models import ScriptedModels
from tests.agent.terminal import Terminal
from tests.agent.test_codex_hook import ROLLOUT
from tests.agent.test_real_agents import _home, _prompts, codex
from tests.support import device_post, wait_until

READY = "for shortcuts"  # Codex's footer once it takes a request
WAITING = "Waiting for your answer on your phone"
OUTSIDE = "release-notes.txt"


@pytest.fixture
def project(tmp_path) -> Path:
    """A git project: Codex asks whether to trust it, and then asks before escalations."""
    folder = tmp_path / "shop-api"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def _codex_tui(
    tmp_path: Path, gateway, models: ScriptedModels, project: Path, terminals: list[Terminal]
) -> Terminal:
    """Codex's TUI, past its first-run questions (trust the folder, trust the new hooks) as a
    person answers them."""
    env = _home(tmp_path, gateway, "codex")
    env.update(SCRIPTED_API_KEY="sk-scripted", TERM="xterm-256color")
    provider = (
        f'{{name="scripted", base_url="{models.url}/v1", wire_api="responses", '
        'env_key="SCRIPTED_API_KEY"}'
    )
    terminal = Terminal(
        [str(codex()), "-c", 'model_provider="scripted"',
         "-c", f"model_providers.scripted={provider}", "-c", 'model="scripted-model"',
         "-c", "analytics.enabled=false", "--disable", "plugins", "--disable", "remote_plugin"],
        env, project,
    )  # fmt: skip
    terminals.append(terminal)
    terminal.choose("Trust and continue")
    terminal.choose("Trust all and continue")  # the hooks `setup codex` wrote, once
    terminal.wait_for(lambda s: READY in s)
    return terminal


def _escalated(target: Path) -> dict:
    """A command Codex's sandbox asks about first: it writes outside the project."""
    return {
        "cmd": f"echo shipped > {target}",
        "sandbox_permissions": "require_escalated",
        "justification": "Write the release notes next to the project",
    }


def _request(terminal: Terminal, gateway, text: str) -> dict:
    terminal.type(text)
    terminal.wait_for(lambda s: text in s)
    terminal.keys("Enter")
    [prompt] = wait_until(lambda: _prompts(gateway), 60, 0.2)
    return prompt


def _outputs(models: ScriptedModels) -> list[str]:
    """The tool results Codex sent the model, oldest first."""
    return [
        json.dumps(item.get("output"))
        for _, body in list(models.requests)
        for item in body.get("input") or []
        if item.get("type") == "function_call_output"
    ]


@pytest.mark.timeout(300)
def test_codex_tui_approval_is_answered_on_the_phone_and_esc_takes_the_card_back(
    gateway, project, tmp_path, terminals
):
    """An escalated command's approval is a permission card naming Codex, the command and its
    reason; Allow once runs it. Asked again, Esc at the terminal ends the hook with SIGKILL,
    and the card leaves the phone anyway."""
    target = tmp_path / OUTSIDE  # outside the project: Codex's sandbox asks first
    command = _escalated(target)
    models = ScriptedModels(call=("exec_command", command))
    try:
        terminal = _codex_tui(tmp_path, gateway, models, project, terminals)
        prompt = _request(terminal, gateway, "Write the release notes")
        assert prompt["kind"] == "permission"
        assert prompt["sessionKey"] == f"codex:{project}"
        assert prompt["stop"] == {"program": "Codex", "tool": "Bash", "command": command["cmd"]}
        [question] = prompt["questions"]
        assert question["question"] == (
            "Codex asks to run this command: Write the release notes next to the project"
        )
        assert [o["label"] for o in question["options"]] == ["Allow once", "Deny"]
        assert WAITING in terminal.screen()

        device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow once"]}})
        wait_until(lambda: target.exists(), 60, 0.2)
        assert target.read_text() == "shipped\n"
        terminal.wait_for(lambda s: "ANSWERED:" in s and READY in s)

        again = _request(terminal, gateway, "Write them once more")
        assert again["id"] != prompt["id"]
        terminal.wait_for(lambda s: WAITING in s)
        terminal.keys("Escape")
        cancelled = wait_until(lambda: _prompts(gateway, "cancelled"), 15, 0.2)
        assert [p["id"] for p in cancelled] == [again["id"]]
        assert cancelled[0]["resolvedBy"] == {"kind": "agent", "reason": "run-abort"}
    finally:
        models.close()


@pytest.mark.timeout(300)
def test_codex_tui_plan_mode_question_is_answered_on_the_phone(
    gateway, project, tmp_path, terminals
):
    """In Plan mode Codex asks with request_user_input: the card carries its questions (its
    ids kept), and the person's answer reaches the model in Codex's own answer shape."""
    asked = {"questions": [ROLLOUT]}
    models = ScriptedModels(call=("request_user_input", asked))
    try:
        terminal = _codex_tui(tmp_path, gateway, models, project, terminals)
        terminal.press_until("BTab", lambda s: "Plan mode" in s)  # where Codex may ask
        prompt = _request(terminal, gateway, "Plan the release")
        assert prompt["kind"] == "question"
        assert prompt["sessionKey"] == f"codex:{project}"
        [question] = prompt["questions"]
        assert question["id"] == "rollout"
        assert [o["label"] for o in question["options"]] == ["Canary (Recommended)", "All at once"]

        device_post(gateway.url, prompt["id"], "answer", {"answers": {"rollout": ["All at once"]}})
        terminal.wait_for(lambda s: "ANSWERED:" in s)
        [output] = wait_until(lambda: _outputs(models), 30, 0.2)
        assert '{\\"rollout\\": {\\"answers\\": [\\"All at once\\"]}}' in output, output
    finally:
        models.close()


@pytest.mark.timeout(300)
def test_codex_killed_while_its_approval_waits_takes_the_card_off_the_phone(
    gateway, project, tmp_path, terminals
):
    """`kill -9` of Codex itself, its hook waiting on the phone: no signal reaches the hook,
    yet the card leaves the phone (the hook's output has no reader any more)."""
    command = _escalated(tmp_path / OUTSIDE)
    models = ScriptedModels(call=("exec_command", command))
    try:
        terminal = _codex_tui(tmp_path, gateway, models, project, terminals)
        prompt = _request(terminal, gateway, "Write the release notes")
        terminal.wait_for(lambda s: WAITING in s)
        terminal.kill()
        wait_until(lambda: not terminal.alive(), 10, 0.1)
        [cancelled] = wait_until(lambda: _prompts(gateway, "cancelled"), 15, 0.2)
        assert cancelled["id"] == prompt["id"]
        assert not (tmp_path / OUTSIDE).exists()
    finally:
        models.close()

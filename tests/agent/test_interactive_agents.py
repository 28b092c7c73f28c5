"""The agents' interactive terminal UIs, as people run them (#51): the real Claude Code in tmux,
configured only by `ask-user setup claude-code` in a temporary HOME, a scripted model on
127.0.0.1, the person answering from the device API."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.agent.scripted_models import ASK_ID, ScriptedModels
from tests.agent.terminal import Terminal
from tests.agent.test_real_agents import _home, _prompts, claude
from tests.support import device_post, wait_until

# Claude Code moves an MCP call still running at this age to the background (interactive UI).
AUTO_BACKGROUND_SECONDS = 120


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "shop-api"
    folder.mkdir()
    return folder


def _claude_tui(
    tmp_path: Path,
    gateway,
    models: ScriptedModels,
    project: Path,
    terminals: list[Terminal],
    *args: str,
) -> Terminal:
    """Claude Code's TUI past its first-run questions: onboarding done, the folder trusted
    and the API key approved in its own state, as a person's earlier answers leave them (its
    trust menu moves by arrow keys, and a loaded machine can split one's escape sequence into
    an Esc that cancels it). Any question still asked is answered as a person would."""
    env = _home(tmp_path, gateway, "claude-code")
    key = "sk-ant-scripted"
    state = Path(env["HOME"]) / ".claude.json"  # Claude Code's own state
    state.write_text(
        json.dumps(
            {
                **json.loads(state.read_text()),
                "hasCompletedOnboarding": True,
                "projects": {str(project): {"hasTrustDialogAccepted": True}},
                "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
            }
        )
    )
    env.update(
        ANTHROPIC_BASE_URL=models.url,
        ANTHROPIC_API_KEY=key,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        TERM="xterm-256color",
    )
    terminal = Terminal([str(claude()), *args], env, project)
    terminals.append(terminal)
    for _ in range(3):
        screen = terminal.wait_for(
            lambda s: "shift+tab" in s or "for shortcuts" in s or "trust this folder" in s
            or "use this API key" in s
        )  # fmt: skip
        if "trust this folder" in screen:
            terminal.choose("Yes, I trust this folder")
        elif "use this API key" in screen:
            terminal.choose("Yes")
        else:
            return terminal  # ready for input
    return terminal


def _ask(
    terminal: Terminal, gateway, request: str = "Ask me which theme to use", wait: float = 30
) -> dict:
    """Type the request as a person does, and see its card reach the phone. A request sent
    before Claude Code has its tools up gets a plain reply ("ok"): ask again."""
    for attempt in range(1, 4):
        terminal.type(request)
        terminal.wait_for(lambda s, n=attempt: s.count(request) == n)
        terminal.keys("Enter")
        replied = terminal.wait_for(
            lambda s, n=attempt: _prompts(gateway) or s.count("● ok") == n, 120
        )
        if _prompts(gateway) or "● ok" not in replied:
            break
    [prompt] = wait_until(lambda: _prompts(gateway), wait, 0.2)
    return prompt


def _tool_results(models: ScriptedModels) -> list[str]:
    """The results of the scripted tool call the model has been sent, oldest first."""
    return [
        json.dumps(block)
        for _, body in list(models.requests)
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result" and str(block.get("tool_use_id")).startswith(ASK_ID)
    ]


@pytest.mark.timeout(420)
def test_claude_code_tui_answered_after_150_s_gives_the_model_the_answer_as_the_tool_result(
    gateway, project, tmp_path, terminals
):
    """Past 120 s Claude Code's TUI moves a running MCP call to the background and later hands
    the model the answer as a notification marked NOT USER INPUT; `setup` keeps it an answer."""
    models = ScriptedModels()
    try:
        terminal = _claude_tui(tmp_path, gateway, models, project, terminals)
        prompt = _ask(terminal, gateway)
        asked = time.monotonic()
        # The person takes their time: 30 s past the moment Claude Code would give up waiting.
        wait_until(lambda: time.monotonic() - asked > AUTO_BACKGROUND_SECONDS + 30, 200, 1)
        assert "waiting for you on your phone" in terminal.screen()
        device_post(gateway.url, prompt["id"], "answer", {"answers": {"color": ["Light"]}})
        screen = terminal.wait_for(lambda s: "ANSWERED:" in s)
        assert '"color":["Light"]' in screen.replace(" ", "")
        bodies = json.dumps([body for _, body in models.requests])
        assert "NOT USER INPUT" not in bodies
        results = _tool_results(models)
        assert results and "Light" in results[-1], results
    finally:
        models.close()


@pytest.mark.timeout(300)
def test_claude_code_killed_while_its_own_question_waits_takes_it_off_the_phone(
    gateway, project, tmp_path, terminals
):
    """AskUserQuestion goes to the phone through the hook; `kill -9` of Claude Code reaches
    no hook (they run in a session of their own), yet the question leaves the phone."""
    models = ScriptedModels(builtin=True)
    try:
        terminal = _claude_tui(tmp_path, gateway, models, project, terminals)
        prompt = _ask(terminal, gateway)
        assert prompt["questions"][0]["question"] == "Which theme should the app use?"
        terminal.kill()
        wait_until(lambda: not terminal.alive(), 10, 0.1)
        cancelled = wait_until(lambda: _prompts(gateway, "cancelled"), 15, 0.1)
        assert [p["id"] for p in cancelled] == [prompt["id"]]
    finally:
        models.close()


FOUR = {
    "questions": [
        {
            "question": "Which layout for the settings page?",
            "header": "Layout",
            "multiSelect": False,
            "options": [
                {"label": "Sidebar", "description": "Sections on the left",
                 "preview": "+------+----------+\n| Menu | Settings |\n+------+----------+"},
                {"label": "Tabs", "description": "Sections as tabs",
                 "preview": "[General] [Privacy] [Billing]"},
            ],
        },
        *[
            {"question": f"Ship step {n} now?", "header": f"Step {n}", "multiSelect": False,
             "options": [{"label": "Yes", "description": "Go on"},
                         {"label": "No", "description": "Wait"}]}
            for n in (2, 3, 4)
        ],
    ]
}  # fmt: skip


@pytest.mark.timeout(300)
def test_claude_code_tui_asks_four_questions_with_a_preview_on_the_phone(
    gateway, project, tmp_path, terminals
):
    """What Claude's own AskUserQuestion allows reaches the phone whole (#51): four
    questions, an option's preview; the answers (and the chosen preview) go back to Claude."""
    models = ScriptedModels(builtin=True, claude_questions=FOUR)
    try:
        terminal = _claude_tui(tmp_path, gateway, models, project, terminals)
        prompt = _ask(terminal, gateway)
        assert len(prompt["questions"]) == 4
        assert "| Menu |" in prompt["questions"][0]["options"][0]["preview"]
        answers = {"q1": ["Sidebar"], "q2": ["Yes"], "q3": ["No"], "q4": ["Yes"]}
        answered = device_post(gateway.url, prompt["id"], "answer", {"answers": answers})
        assert answered.status_code == 200
        screen = terminal.wait_for(lambda s: "Answered Claude's questions" in s, 90)
        assert "Which layout for the settings page? → Sidebar" in screen
        assert "Ship step 3 now? → No" in screen

        wait_until(
            lambda: _tool_results(models), 120, 0.5
        )  # the model's next turn carries the tool's result
        got = _tool_results(models)
        assert "Sidebar" in got[-1] and "Ship step 3 now?" in got[-1], got[-1]
    finally:
        models.close()


@pytest.mark.timeout(420)
def test_claude_code_tui_permission_dialog_is_answered_on_the_phone(
    gateway, project, tmp_path, terminals
):
    """#54 (1): Claude Code's permission dialog ("Do you want to run …?") reaches the phone as
    a card with the exact command; the person's Allow once there runs it, and the model gets
    its output; the terminal's own dialog is the fallback, never needed here."""
    command = "echo permitted-on-the-phone > proof.txt && cat proof.txt"
    models = ScriptedModels(call=("Bash", {"command": command, "description": "Write proof"}))
    try:
        # Claude Code 2.1.332's default is auto mode, which runs a command it deems safe
        # without asking; the dialog is the default mode's (and auto mode's risky commands').
        terminal = _claude_tui(
            tmp_path, gateway, models, project, terminals, "--permission-mode", "default"
        )
        prompt = _ask(terminal, gateway, "Write the proof file", wait=60)
        assert prompt["kind"] == "permission"
        assert prompt["stop"]["command"] == command and prompt["stop"]["tool"] == "Bash"
        labels = [o["label"] for o in prompt["questions"][0]["options"]]
        assert labels[0] == "Allow once" and labels[-1] == "Deny"
        # Claude Code's suggestion is offered as it words it, with where it applies.
        always = prompt["questions"][0]["options"][1]
        assert always["label"] == "Allow always" and str(project) in always["description"]
        answered = device_post(
            gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Allow once"]}}
        )
        assert answered.status_code == 200
        wait_until(lambda: (project / "proof.txt").exists(), 120, 0.5)
        assert (project / "proof.txt").read_text() == "permitted-on-the-phone\n"

        wait_until(
            lambda: _tool_results(models), 120, 0.5
        )  # the model's next turn carries the command's output
        assert "permitted-on-the-phone" in _tool_results(models)[-1]
    finally:
        models.close()


@pytest.mark.timeout(420)
def test_claude_code_tui_answered_at_the_terminal_takes_the_card_off_the_phone(
    gateway, project, tmp_path, terminals
):
    """#54 (1): the terminal's own dialog shows while the card waits; a person at the desk
    who answers there takes the card off the phone (its hook stops and cancels it)."""
    command = "echo answered-at-the-desk > desk.txt"
    models = ScriptedModels(call=("Bash", {"command": command, "description": "Write desk"}))
    try:
        terminal = _claude_tui(
            tmp_path, gateway, models, project, terminals, "--permission-mode", "default"
        )
        prompt = _ask(terminal, gateway, "Write the desk file", wait=60)
        terminal.wait_for(lambda s: "Do you want to proceed?" in s)
        terminal.keys("Enter")  # "1. Yes", at the desk
        wait_until(lambda: (project / "desk.txt").exists(), 60, 0.5)

        def status() -> str:
            return gateway.device.get(f"/v1/prompts/{prompt['id']}").json()["status"]

        wait_until(lambda: status() == "cancelled", 30, 0.2)  # off the phone, nobody's to answer
    finally:
        models.close()


@pytest.mark.timeout(420)
def test_claude_code_tui_plan_is_approved_on_the_phone(gateway, project, tmp_path, terminals):
    """#54 (2): leaving plan mode (ExitPlanMode) is a plan card with the plan's Markdown; the
    person's approval on the phone lets Claude Code start on it."""
    plan = "# Add sign-in\n\n1. Add the users table\n2. Send a link by email"
    models = ScriptedModels(call=("ExitPlanMode", {"plan": plan}))
    try:
        terminal = _claude_tui(
            tmp_path, gateway, models, project, terminals, "--permission-mode", "plan"
        )
        prompt = _ask(terminal, gateway, "Plan the sign-in", wait=60)
        assert prompt["kind"] == "plan" and prompt["stop"]["plan"] == plan
        answered = device_post(
            gateway.url, prompt["id"], "answer", {"answers": {"decision": ["Approve the plan"]}}
        )
        assert answered.status_code == 200

        # Claude Code's own words for an approved plan reach the model as the tool's result.
        wait_until(
            lambda: any("approved exiting plan mode" in r for r in _tool_results(models)), 120, 0.5
        )
    finally:
        models.close()


@pytest.mark.timeout(600)
def test_claude_code_tui_deny_with_a_note_an_expired_card_and_allow_always(
    gateway, project, tmp_path, terminals
):
    """#54's other paths with the real TUI: a denial's note reaches the model; a card left to
    expire decides nothing, and the terminal's own dialog does; "Allow always" adds Claude
    Code's rule, and the next identical command asks nobody."""
    command = "./append.sh"  # a command Claude Code suggests a rule for: Bash(./append.sh:*)
    script = project / "append.sh"
    script.write_text("#!/bin/sh\necho line >> lines.txt\n")
    script.chmod(0o755)
    lines = project / "lines.txt"
    models = ScriptedModels(call=("Bash", {"command": command, "description": "Append a line"}))
    try:
        terminal = _claude_tui(
            tmp_path, gateway, models, project, terminals, "--permission-mode", "default"
        )
        note = "Use make append instead"
        prompt = _ask(terminal, gateway, "Append a line", wait=60)
        device_post(gateway.url, prompt["id"], "answer", {"answers": {"decision": [note]}})
        wait_until(lambda: any(note in r for r in _tool_results(models)), 120, 0.5)
        assert not lines.exists()
        terminal.wait_for(lambda s: "ANSWERED:" in s)

        prompt = _ask(terminal, gateway, "Append the line now", wait=60)
        terminal.wait_for(lambda s: "Do you want to proceed?" in s)
        gateway.clock.advance(901)  # past the card's 900 s: nobody answered it
        wait_until(lambda: _prompts(gateway, "expired"), 30, 0.2)
        assert "Do you want to proceed?" in terminal.screen()  # the terminal decides
        terminal.choose("1. Yes")  # at the desk
        wait_until(lambda: lines.exists() and lines.read_text() == "line\n", 60, 0.2)
        terminal.wait_for(lambda s: s.count("ANSWERED:") == 2)

        prompt = _ask(terminal, gateway, "Append one more line", wait=60)
        assert "Bash(./append.sh" in prompt["stop"]["rule"], prompt["stop"]
        always = {"answers": {"decision": ["Allow always"]}}
        device_post(gateway.url, prompt["id"], "answer", always)
        wait_until(lambda: lines.read_text() == "line\n" * 2, 60, 0.2)
        terminal.wait_for(lambda s: s.count("ANSWERED:") == 3)
        asked = len(_prompts(gateway, "answered")) + len(_prompts(gateway, "expired"))

        terminal.type("Append the last line")
        terminal.wait_for(lambda s: "Append the last line" in s)
        terminal.keys("Enter")
        try:
            wait_until(lambda: lines.read_text() == "line\n" * 3, 120, 0.2)  # nobody was asked
        except AssertionError:
            raise AssertionError(f"{_prompts(gateway)}\n{prompt}\n{terminal.screen()}") from None
        assert len(_prompts(gateway, "answered")) + len(_prompts(gateway, "expired")) == asked
        assert not _prompts(gateway)
    finally:
        models.close()

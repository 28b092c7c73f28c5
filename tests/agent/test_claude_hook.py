"""`ask-user claude-hook` as Claude Code runs it: the documented PreToolUse JSON on stdin, a
real gateway, the person's answer on a device, the hook's decision on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import AGENT_TOKEN, device_post, free_port, next_pending

PROJECT = "/home/dev/code/shop"


def _hook_input(*questions: dict) -> dict:
    """What Claude Code sends a PreToolUse hook before AskUserQuestion (hooks reference)."""
    return {
        "session_id": "8c35adc1-5f2e-4b7e-9d0a-1b2c3d4e5f60",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-code-shop/8c35adc1.jsonl",
        "cwd": PROJECT,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": list(questions)},
        "tool_use_id": "toolu_01ABCDEF",
    }


DATABASE = {
    "question": "Which database should the service use?",
    "header": "Database",
    "multiSelect": False,
    "options": [
        {"label": "PostgreSQL (Recommended)", "description": "What production runs"},
        {"label": "SQLite", "description": "One file, no server"},
    ],
}
FEATURES = {
    "question": "Which features should ship first?",
    "header": "Features",
    "multiSelect": True,
    "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Sharing"}],
}
STYLE = {
    "question": "Which code style?",
    "header": "Style",
    "multiSelect": False,
    "options": [{"label": "Black"}, {"label": "Ruff format"}],
}


def _hook(
    url: str | None, hook_input: dict | str, command: str = "claude-hook", **env_vars: str
) -> subprocess.Popen:
    """The hook as the program starts it; `url` None: no gateway in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_USER_", "CLAUDE_"))}
    if url is not None:
        env.update(ASK_USER_GATEWAY_URL=url, ASK_USER_AGENT_TOKEN=AGENT_TOKEN)
    env.update(env_vars)
    process = subprocess.Popen(
        [sys.executable, "-m", "app", command],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(hook_input if isinstance(hook_input, str) else json.dumps(hook_input))
    process.stdin.close()
    return process


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    return process.wait(30), out, err


def test_one_question_answered_allows_with_the_answer_keyed_by_its_text(gateway):
    hook_input = _hook_input(DATABASE)
    process = _hook(gateway.url, hook_input)
    prompt = next_pending(gateway.url)
    assert prompt["sessionKey"] == f"claude-code:{PROJECT}"
    assert prompt["runId"] == hook_input["session_id"]
    [question] = prompt["questions"]
    assert question["id"] == "q1" and question["header"] == "Database"
    assert question["question"] == DATABASE["question"] and question["multiSelect"] is False
    assert question["options"] == DATABASE["options"]
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"q1": ["SQLite"]}})
    code, out, err = _finish(process)
    assert code == 0, err
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "The user answered on their phone (Ask User).",
            "updatedInput": {
                "questions": [DATABASE],
                "answers": {"Which database should the service use?": "SQLite"},
            },
        }
    }


def test_multi_select_labels_are_joined_with_a_comma(gateway):
    process = _hook(gateway.url, _hook_input(FEATURES))
    prompt = next_pending(gateway.url)
    assert prompt["questions"][0]["multiSelect"] is True
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"q1": ["Search", "Sharing"]}})
    code, out, _ = _finish(process)
    updated = json.loads(out)["hookSpecificOutput"]["updatedInput"]
    assert code == 0 and updated["answers"] == {FEATURES["question"]: "Search, Sharing"}


def test_three_questions_each_keyed_by_its_text_with_the_persons_own_words(gateway):
    process = _hook(gateway.url, _hook_input(DATABASE, FEATURES, STYLE))
    prompt = next_pending(gateway.url)
    assert [q["id"] for q in prompt["questions"]] == ["q1", "q2", "q3"]
    answers = {"q1": ["PostgreSQL (Recommended)"], "q2": ["Export"], "q3": ["Tabs, no tools"]}
    device_post(gateway.url, prompt["id"], "answer", {"answers": answers})
    code, out, _ = _finish(process)
    output = json.loads(out)["hookSpecificOutput"]
    assert code == 0 and output["permissionDecision"] == "allow"
    assert output["updatedInput"]["answers"] == {
        DATABASE["question"]: "PostgreSQL (Recommended)",
        FEATURES["question"]: "Export",
        STYLE["question"]: "Tabs, no tools",
    }
    assert output["updatedInput"]["questions"] == [DATABASE, FEATURES, STYLE]


def test_dismissed_on_the_phone_denies_and_tells_the_model_to_go_on(gateway):
    process = _hook(gateway.url, _hook_input(DATABASE))
    prompt = next_pending(gateway.url)
    device_post(gateway.url, prompt["id"], "dismiss")
    code, out, _ = _finish(process)
    output = json.loads(out)["hookSpecificOutput"]
    assert code == 0 and output["permissionDecision"] == "deny"
    assert "dismissed" in output["permissionDecisionReason"]
    assert "best judgment" in output["permissionDecisionReason"]


def test_expired_leaves_the_question_to_claude_code(gateway):
    process = _hook(gateway.url, _hook_input(DATABASE))
    next_pending(gateway.url)
    gateway.clock.advance(901)  # past the default 900 s
    code, out, err = _finish(process)
    assert (code, out) == (0, "")
    assert "expired" in err


def test_five_questions_are_more_than_claude_allows_and_left_to_claude_code(gateway):
    extra = [{**STYLE, "question": f"Which license {n}?", "header": f"L{n}"} for n in (4, 5)]
    code, out, err = _finish(_hook(gateway.url, _hook_input(DATABASE, FEATURES, STYLE, *extra)))
    assert (code, out) == (0, "")
    assert "1 to 4 questions" in err
    assert gateway.device.get("/v1/prompts", params={"status": "all"}).json()["prompts"] == []


LAYOUT = {
    "question": "Which layout for the settings page?",
    "header": "Layout",
    "multiSelect": False,
    "options": [
        {"label": "Sidebar", "description": "Sections on the left. " * 15,
         "preview": "+--------+------------------+\n| Menu   | Settings         |\n+--------+"},
        {"label": "Tabs across the top of the page, one per section of the settings " * 2,
         "description": "Sections as tabs", "preview": "[General] [Privacy] [Billing]"},
    ],
}  # fmt: skip


def test_four_questions_long_texts_and_previews_reach_the_phone_whole(gateway):
    """What Claude allows (v1.5): four questions, options with a preview (returned to Claude
    in `annotations`), descriptions over 200 and labels over 64 characters."""
    fourth = {**STYLE, "question": "Which license?", "header": "License"}
    hook_input = _hook_input(LAYOUT, FEATURES, STYLE, fourth)
    process = _hook(gateway.url, hook_input)
    prompt = next_pending(gateway.url)
    assert len(prompt["questions"]) == 4
    sidebar, tabs = prompt["questions"][0]["options"]
    assert sidebar["preview"].startswith("+--------+") and "Menu" in sidebar["preview"]
    assert sidebar["description"] == LAYOUT["options"][0]["description"].strip()
    assert tabs["label"] == LAYOUT["options"][1]["label"].strip() and len(tabs["label"]) > 64
    answers = {"q1": [sidebar["label"]], "q2": ["Search"], "q3": ["Black"], "q4": ["Ruff format"]}
    assert device_post(gateway.url, prompt["id"], "answer", {"answers": answers}).status_code == 200
    code, out, _ = _finish(process)
    assert code == 0
    updated = json.loads(out)["hookSpecificOutput"]["updatedInput"]
    assert updated["answers"][LAYOUT["question"]] == "Sidebar"
    assert updated["annotations"] == {
        LAYOUT["question"]: {"preview": LAYOUT["options"][0]["preview"]}
    }


def test_a_preview_too_long_to_carry_is_cut_with_a_mark(gateway):
    long_preview = "\n".join(f"line {n:04d} " + "x" * 60 for n in range(200))
    layout = {**LAYOUT, "options": [{**LAYOUT["options"][0], "preview": long_preview},
                                    LAYOUT["options"][1]]}  # fmt: skip
    process = _hook(gateway.url, _hook_input(layout))
    prompt = next_pending(gateway.url)
    shown = prompt["questions"][0]["options"][0]["preview"]
    assert shown.endswith("(cut: the whole preview is in the terminal)")
    assert shown.startswith("line 0000") and len(shown) <= 3000
    device_post(gateway.url, prompt["id"], "dismiss", {})
    assert _finish(process)[0] == 0


def test_a_gateway_that_is_down_leaves_the_question_to_claude_code():
    code, out, err = _finish(_hook(f"http://127.0.0.1:{free_port()}", _hook_input(DATABASE)))
    assert (code, out) == (0, "")
    assert "cannot reach the gateway" in err


@pytest.mark.parametrize(
    "hook_input",
    [
        {**_hook_input(DATABASE), "tool_name": "Bash", "tool_input": {"command": "ls"}},
        "not json",
        {**_hook_input(DATABASE), "tool_input": {"questions": "?"}},
    ],
    ids=["another-tool", "not-json", "no-questions-list"],
)
def test_what_is_not_an_askuserquestion_gets_no_decision(gateway, hook_input):
    code, out, _ = _finish(_hook(gateway.url, hook_input))
    assert (code, out) == (0, "")
    assert gateway.device.get("/v1/prompts", params={"status": "all"}).json()["prompts"] == []


def test_the_hook_command_setup_writes_runs_as_written(gateway, tmp_path):
    """`setup claude-code` then the hook exactly as Claude Code would run it (a shell)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_USER_", "CLAUDE_"))}
    env.update(HOME=str(tmp_path), ASK_USER_GATEWAY_URL=gateway.url)
    done = subprocess.run(
        [sys.executable, "-m", "app", "setup", "claude-code", "--token", AGENT_TOKEN],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["PreToolUse"]
    [hook] = group["hooks"]
    assert group["matcher"] == "AskUserQuestion" and hook["timeout"] > 900
    assert Path(hook["command"].split()[0]).is_absolute()
    shell_env = {**{k: v for k, v in env.items() if k != "ASK_USER_GATEWAY_URL"}}
    shell_env.update(settings["env"])  # Claude Code passes its settings' env to hooks
    process = subprocess.Popen(
        hook["command"],
        shell=True,
        env=shell_env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps({**_hook_input(DATABASE), "cwd": str(tmp_path)}))
    process.stdin.close()
    prompt = next_pending(gateway.url)
    assert prompt["sessionKey"] == "claude-code:~"
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"q1": ["SQLite"]}})
    code, out, err = _finish(process)
    assert code == 0, err
    assert json.loads(out)["hookSpecificOutput"]["updatedInput"]["answers"] == {
        DATABASE["question"]: "SQLite"
    }


def _stop_input() -> dict:
    """What Claude Code sends a Stop hook when Claude is about to end its turn (hooks
    reference)."""
    return {
        "session_id": "8c35adc1-5f2e-4b7e-9d0a-1b2c3d4e5f60",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-code-shop/8c35adc1.jsonl",
        "cwd": PROJECT,
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }


def test_the_stop_hook_keeps_claude_going_with_a_late_answer_then_lets_it_stop(gateway):
    """#44: the person answered the project's expired question late; Claude's next stop is
    blocked with the question and the answer, and the stop after that goes through."""
    from app.agent.claude_hook import session_key

    code, out, _ = _finish(_hook(gateway.url, _stop_input()))
    assert (code, out) == (0, "")  # nothing late: Claude stops
    asked = gateway.create(
        sessionKey=session_key({"cwd": PROJECT}),
        timeoutSeconds=30,
        questions=[
            {
                "id": "db",
                "header": "Database",
                "question": "Which database should the service use?",
                "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
            }
        ],
    )
    elsewhere = gateway.create(sessionKey="claude-code:~/code/other", timeoutSeconds=30)
    gateway.clock.advance(31)
    for prompt, answers in (
        (asked, {"db": ["SQLite"]}),
        (elsewhere, {"deploy_target": ["Production"]}),
    ):
        assert gateway.device.get(f"/v1/prompts/{prompt['id']}").json()["status"] == "expired"
        late = device_post(gateway.url, prompt["id"], "late-answer", {"answers": answers})
        assert late.status_code == 200, late.text
    code, out, _ = _finish(_hook(gateway.url, _stop_input()))
    assert code == 0
    blocked = json.loads(out)
    assert blocked["decision"] == "block"
    assert "Which database should the service use? → SQLite" in blocked["reason"]
    assert "Production" not in blocked["reason"]  # another project's answer stays for it
    code, out, _ = _finish(_hook(gateway.url, _stop_input()))
    assert (code, out) == (0, "")  # delivered: this stop goes through
    other = gateway.device.get(f"/v1/prompts/{elsewhere['id']}").json()
    assert other["lateAnswer"]["deliveredAt"] is None


def test_the_stop_hook_lets_claude_stop_when_the_gateway_is_down():
    code, out, _ = _finish(_hook(f"http://127.0.0.1:{free_port()}", _stop_input()))
    assert (code, out) == (0, "")


@pytest.mark.parametrize("stdout_kind", ["socket", "pipe"])
def test_the_hook_takes_its_question_back_when_claude_code_is_gone(gateway, stdout_kind):
    """Claude Code starts hooks in a session of their own, so its `kill -9` sends the hook no
    signal; the hook's stdout (a socket in Claude Code, a pipe elsewhere) loses its reader,
    and that is what the hook watches (#51)."""
    import socket

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_USER_", "CLAUDE_"))}
    env.update(ASK_USER_GATEWAY_URL=gateway.url, ASK_USER_AGENT_TOKEN=AGENT_TOKEN)
    if stdout_kind == "socket":
        ours, theirs = socket.socketpair()
        write_end = theirs.fileno()
    else:
        read_fd, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "claude-hook"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # as Claude Code starts it: no signal of ours reaches it
    )
    os.close(write_end) if stdout_kind == "pipe" else theirs.close()
    try:
        assert process.stdin is not None
        process.stdin.write(json.dumps(_hook_input(DATABASE)))
        process.stdin.close()  # as Claude Code does, right after the JSON
        prompt = next_pending(gateway.url)
        assert prompt["status"] == "pending"
        ours.close() if stdout_kind == "socket" else os.close(read_fd)  # the caller dies
        process.wait(10)
        record = gateway.device.get(f"/v1/prompts/{prompt['id']}").json()
        assert record["status"] == "cancelled", record
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

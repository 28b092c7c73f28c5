"""`ask-user claude-hook`: Claude Code's own AskUserQuestion, answered on the phone.

Claude Code runs `PreToolUse` hooks before AskUserQuestion (matcher `AskUserQuestion`). This
hook reads the hook's JSON on stdin, asks the same questions through the gateway, waits, and
prints the hook's answer: `allow` with the tool input plus `answers` (question text → the
chosen labels, joined with ", ") when the person answered; `deny` with a reason for the model
when they dismissed it. Whenever it cannot help — the prompt expired or was cancelled, the
gateway is unreachable, or the questions are more than the contract carries — it exits 0 with
no decision, so Claude Code shows its own question and nothing is lost.

It is also Claude Code's `PermissionRequest` hook (permission_hook.py: its permission dialog
and plan approval on the phone, v1.5), and its `Stop` hook (docs/PROTOCOL.md v1.4): when the
person answered one of the project's questions after it had expired, the stop is blocked with a
reason that gives the model the question and the answer (then it is delivered), so the work
goes on with it; with none, or when the gateway cannot be asked, the stop goes through.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from app.protocol import limits
from app.protocol.asker import project_session_key

from .caller import watch_caller
from .client import AskUserError
from .dialog_watch import ANSWERED_ELSEWHERE, watch_dialog
from .environment import AgentEnvironment
from .permission_hook import EVENT as PERMISSION_EVENT
from .permission_hook import permission_decision, permission_prompt

TOOL = "AskUserQuestion"
EVENT = "PreToolUse"
STOP_EVENT = "Stop"
SESSION_PREFIX = "claude-code"
DECLINED = (
    "The user dismissed these questions on their phone without answering. Do not ask them "
    "again; continue with your best judgment and say which choices you made."
)
ANSWERED = "The user answered on their phone (Ask User)."
PREVIEW_CUT = "\n… (cut: the whole preview is in the terminal)"
GATEWAY_DOWN_SECONDS = 3  # an unreachable gateway: Claude Code asks itself after this
STOP_RETRY_SECONDS = 1.5  # the Stop hook's claim and each confirmation: a stop never waits long


class CannotCarry(Exception):
    """Questions the contract cannot carry (more than Claude itself allows): Claude Code asks
    itself."""


def prompt_questions(tool_input: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Our questions for Claude's, with ids made from their order (q1, q2, ...), and each id's
    question text (Claude keys its answers by the text)."""
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("questions"), list):
        raise CannotCarry("tool_input has no questions list")
    questions, texts = [], {}
    for number, asked in enumerate(tool_input["questions"], start=1):
        if not isinstance(asked, dict) or not isinstance(asked.get("question"), str):
            raise CannotCarry(f"question {number} has no text")
        question_id = f"q{number}"
        options = []
        for option in asked.get("options") or []:
            if not isinstance(option, dict):
                raise CannotCarry(f"question {number} has an option that is not an object")
            carried = {"label": option.get("label")}
            if option.get("description"):
                carried["description"] = option["description"]
            if isinstance(option.get("preview"), str) and option["preview"].strip():
                carried["preview"] = cut_preview(option["preview"])
            options.append(carried)
        questions.append(
            {
                "id": question_id,
                "header": asked.get("header") or f"Question {number}",
                "question": asked["question"],
                "options": options,
                "multiSelect": bool(asked.get("multiSelect", False)),
            }
        )
        texts[question_id] = asked["question"]
    return questions, texts


def cut_preview(preview: str) -> str:
    """A preview within what a prompt carries, cut at a line with a visible mark."""
    if len(preview) <= limits.MAX_PREVIEW_CHARS:
        return preview
    room = limits.MAX_PREVIEW_CHARS - len(PREVIEW_CUT)
    kept = preview[:room]
    if "\n" in kept:
        kept = kept[: kept.rindex("\n")]
    return kept + PREVIEW_CUT


def session_key(hook: dict[str, Any], environment: AgentEnvironment | None = None) -> str:
    """The project, so the app groups a project's questions: `claude-code:~/code/shop`."""
    env = environment or AgentEnvironment.read()
    project = env.claude_project_dir or hook.get("cwd") or os.getcwd()
    return project_session_key(SESSION_PREFIX, project, Path.home())


def chosen_previews(
    tool_input: dict[str, Any], texts: dict[str, str], values: dict[str, list[str]]
) -> dict[str, dict[str, str]]:
    """Claude's `annotations` for the answer: each question's chosen option's preview (as
    Claude's own dialog returns it), keyed by the question's text."""
    found: dict[str, dict[str, str]] = {}
    for number, asked in enumerate(tool_input.get("questions") or [], start=1):
        chosen = values.get(f"q{number}") or []
        for option in asked.get("options") or []:
            if option.get("label") in chosen and isinstance(option.get("preview"), str):
                found[texts[f"q{number}"]] = {"preview": option["preview"]}
    return found


def decision(
    result: dict[str, Any], tool_input: dict[str, Any], texts: dict[str, str]
) -> dict[str, Any] | None:
    """The hook's output for a tool result; None: no decision (Claude Code asks itself)."""
    if result.get("status") == "answered":
        values = result["answers"]["answers"]
        answers = {texts[qid]: ", ".join(values[qid]) for qid in texts if qid in values}
        updated = {**tool_input, "answers": answers}
        if notes := chosen_previews(tool_input, texts, values):
            updated["annotations"] = notes
        return {
            "hookSpecificOutput": {
                "hookEventName": EVENT,
                "permissionDecision": "allow",
                "permissionDecisionReason": ANSWERED,
                "updatedInput": updated,
            }
        }
    if result.get("reason") == "dismissed":
        return {
            "hookSpecificOutput": {
                "hookEventName": EVENT,
                "permissionDecision": "deny",
                "permissionDecisionReason": DECLINED,
            }
        }
    return None  # expired or cancelled: let Claude Code ask in the terminal


def stop_decision(late: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Stop hook's output for the project's undelivered late answers; None: stop."""
    lines = []
    for item in late:
        for question in item.get("questions", []):
            values = item.get("answers", {}).get(question.get("id"))
            if values:
                lines.append(f"- {question.get('question')} → {', '.join(values)}")
    if not lines:
        return None
    return {
        "decision": "block",
        "reason": "The user answered after the question had expired (on their phone, Ask "
        "User); go on with your work with these answers:\n" + "\n".join(lines),
    }


def run_stop_hook(hook: dict[str, Any], gateway_url: str | None, token: str | None) -> int:
    """Claude is about to stop: a late answer of this project, if any, keeps it going. Each
    late answer blocks one stop at most (it is claimed and confirmed before it is told); a
    stop already continued by a stop hook (`stop_hook_active`) goes through, so Claude Code
    can never loop here."""
    from .client import late_answers

    if hook.get("stop_hook_active") is True:
        return 0
    try:
        late = late_answers(
            session_key(hook),
            gateway_url=gateway_url,
            token=token,
            connect_seconds=GATEWAY_DOWN_SECONDS,
            retry_seconds=STOP_RETRY_SECONDS,
        )
    except AskUserError as exc:  # no gateway configured here: nothing to deliver
        _note(f"{exc}; no late answers looked for")
        return 0
    output = stop_decision(late)
    if output is not None:
        print(json.dumps(output, ensure_ascii=False))
    return 0


def _note(message: str) -> None:
    """Shown in Claude Code's transcript view (stderr of a hook that exits 0)."""
    print(f"ask-user: {message}", file=sys.stderr)


def run_claude_hook(
    *,
    timeout_seconds: int | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
) -> int:
    from .cli import _stop_on_signals, _warnings_to_stderr
    from .client import ask_user

    _warnings_to_stderr()  # Claude Code shows a hook's stderr in its transcript view
    try:
        hook = json.loads(sys.stdin.read() or "null")
    except ValueError as exc:
        _note(f"the hook's input is not JSON ({exc}); Claude Code asks itself")
        return 0
    if isinstance(hook, dict) and hook.get("hook_event_name") == STOP_EVENT:
        return run_stop_hook(hook, gateway_url, token)
    permission = isinstance(hook, dict) and hook.get("hook_event_name") == PERMISSION_EVENT
    if not isinstance(hook, dict) or not (permission or hook.get("tool_name") == TOOL):
        return 0  # another tool: not ours to decide
    tool_input = hook.get("tool_input")
    texts: dict[str, str] = {}
    kind, stop_context = None, None
    if permission:  # its permission dialog or plan approval (v1.5)
        kind, question, stop_context = permission_prompt(hook)
        questions = [question]
    else:
        try:
            questions, texts = prompt_questions(tool_input)
        except CannotCarry as exc:
            _note(f"{exc}; Claude Code asks itself")
            return 0
    session = hook.get("session_id")
    stop = _stop_on_signals()  # Esc in Claude Code, or its hook timeout: cancel the prompt
    watch_caller(stop)  # Claude Code killed: no signal reaches us, its end of stdout closes
    if permission:  # its dialog shows meanwhile: answered at the terminal, the card goes
        watch_dialog(stop, hook.get("transcript_path"), str(hook.get("tool_name")), tool_input)
    try:
        result = ask_user(
            questions,
            session_key=session_key(hook),
            # One question at a time per session: two Claude sessions in a project both ask.
            agent_id=f"{SESSION_PREFIX}/{str(session)[:8]}" if session else SESSION_PREFIX,
            run_id=str(session) if session else None,
            timeout_seconds=timeout_seconds,
            gateway_url=gateway_url,
            token=token,
            abort=stop,
            create_retry_seconds=GATEWAY_DOWN_SECONDS,
            question_tool=TOOL,  # Claude's own: four questions, long texts, previews (v1.5)
            kind=kind,
            stop=stop_context,
        )
    except AskUserError as exc:
        _note(f"{exc}; Claude Code asks itself")
        return 0
    if stop.is_set():
        if stop.signum == ANSWERED_ELSEWHERE:
            _note("answered in the terminal; the card left the phone")
            return 0
        return 128 + stop.signum
    if permission:
        output = permission_decision(result, hook)
    else:
        assert isinstance(tool_input, dict)
        output = decision(result, tool_input, texts)
    if output is None:
        _note(f"no answer on the phone ({result.get('reason')}); Claude Code asks itself")
        return 0
    print(json.dumps(output, ensure_ascii=False))
    return 0


def run(args: argparse.Namespace) -> int:
    """`ask-user claude-hook`, from its command line."""
    return run_claude_hook(
        timeout_seconds=args.timeout, gateway_url=args.gateway_url, token=args.token
    )

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
import os
from typing import Any

from app.protocol import limits

from .caller import Stoppable
from .dialog_watch import watch_dialog
from .environment import AgentEnvironment
from .hook_flow import CannotCarry, Card, HookProgram, run_hook
from .permission_hook import EVENT as PERMISSION_EVENT
from .permission_hook import permission_decision, permission_prompt

TOOL = "AskUserQuestion"
EVENT = "PreToolUse"
SESSION_PREFIX = "claude-code"
DECLINED = (
    "The user dismissed these questions on their phone without answering. Do not ask them "
    "again; continue with your best judgment and say which choices you made."
)
ANSWERED = "The user answered on their phone (Ask User)."
PREVIEW_CUT = "\n… (cut: the whole preview is in the terminal)"


def prompt_questions(
    tool_input: Any, keep_ids: bool = False
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Our questions for a program's own (Claude's AskUserQuestion, Codex's
    request_user_input), and each id's question text (Claude keys its answers by the text).
    The ids are made from their order (q1, q2, ...), or with `keep_ids` the program's own
    (Codex keys its answers by them)."""
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("questions"), list):
        raise CannotCarry("tool_input has no questions list")
    questions, texts = [], {}
    for number, asked in enumerate(tool_input["questions"], start=1):
        if not isinstance(asked, dict) or not isinstance(asked.get("question"), str):
            raise CannotCarry(f"question {number} has no text")
        question_id = str(asked.get("id") or f"q{number}") if keep_ids else f"q{number}"
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


def card(hook: dict[str, Any]) -> Card | None:
    """Claude Code's hook call as a card: its permission dialog or plan approval (v1.5), or
    its AskUserQuestion; None for any other tool."""
    tool_input = hook.get("tool_input")
    if hook.get("hook_event_name") == PERMISSION_EVENT:
        kind, question, stop = permission_prompt(hook, CLAUDE_CODE.name)
        tool = str(hook.get("tool_name"))

        def watch(stopper: Stoppable) -> None:  # its dialog shows meanwhile: answered there
            watch_dialog(stopper, hook.get("transcript_path"), tool, tool_input)

        return Card(
            [question],
            lambda result: permission_decision(result, hook),
            kind=kind,
            stop=stop,
            question_tool=TOOL,
            watch=watch,
        )
    if hook.get("tool_name") != TOOL:
        return None
    questions, texts = prompt_questions(tool_input)
    assert isinstance(tool_input, dict)
    return Card(questions, lambda result: decision(result, tool_input, texts), question_tool=TOOL)


def _project(hook: dict[str, Any]) -> str:
    return AgentEnvironment.read().claude_project_dir or hook.get("cwd") or os.getcwd()


CLAUDE_CODE = HookProgram("Claude Code", SESSION_PREFIX, card, _project)


def session_key(hook: dict[str, Any]) -> str:
    """The project, so the app groups a project's questions: `claude-code:~/code/shop`."""
    return CLAUDE_CODE.session_key(hook)


def run_claude_hook(
    *,
    timeout_seconds: int | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
) -> int:
    return run_hook(
        CLAUDE_CODE, timeout_seconds=timeout_seconds, gateway_url=gateway_url, token=token
    )


def run(args: argparse.Namespace) -> int:
    """`ask-user claude-hook`, from its command line."""
    return run_claude_hook(
        timeout_seconds=args.timeout, gateway_url=args.gateway_url, token=args.token
    )

"""The `PermissionRequest` hook of Claude Code and of Codex: their permission dialogs (and
Claude Code's plan approval), on the phone (docs/PROTOCOL.md v1.5, #54).

When the program is about to ask "Do you want to run `npm test`?" (or to make an edit or apply
a patch, fetch a page, use an MCP tool, or leave plan mode with ExitPlanMode), this hook makes
the question a card: who asks and exactly what (the command and why; the file and its change as
a diff; the URL; the plan as Markdown) with the dialog's own choices — allow once, allow always
(Claude Code: with the exact rule it adds, as the dialog would), deny with a note that tells
the agent what to do instead; approve the plan, or keep planning with feedback.

Safe by construction: only the person's choice decides. A card that expires, is dismissed or
cancelled, or a gateway that cannot be reached, makes no decision: the program's own dialog
asks, as it always did. "Allow always" is never a one-tap choice (`Stop.always`).
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import PurePath
from typing import Any

from app.protocol.stops import (
    MAX_COMMAND_CHARS,
    MAX_DIFF_CHARS,
    MAX_PLAN_CHARS,
    PERMISSION,
    PLAN,
    PromptKind,
)

from .dialog_watch import plan_of

EVENT = "PermissionRequest"
PLAN_TOOL = "ExitPlanMode"
ALLOW_ONCE, ALLOW_ALWAYS, DENY = "Allow once", "Allow always", "Deny"
PATCH_TOOL, PATCH_START = "apply_patch", "*** Begin Patch"
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
APPROVE, KEEP_PLANNING = "Approve the plan", "Keep planning"
QUESTION_ID = "decision"
CUT = "\n… (cut: the whole of it is in the terminal)"
DENIED = "The user denied this on their phone (Ask User)."
DENIED_SAYING = "The user denied this on their phone (Ask User) and said: {note}"
KEEP_PLANNING_SAYING = "The user wants you to keep planning (Ask User) and said: {note}"
KEPT_PLANNING = "The user wants you to keep planning (Ask User)."
NO_PLAN = "(Claude Code did not say; the plan is in the terminal)"


def cut(text: str, most: int) -> str:
    """`text`, or as much of it as fits with a mark that says the rest is in the terminal."""
    return text if len(text) <= most else text[: most - len(CUT)] + CUT


WHERE = {"session": "this session", "localSettings": "this project, on this machine",
         "projectSettings": "this project", "userSettings": "all your projects"}  # fmt: skip


def rule_text(suggestion: Any) -> str | None:
    """What one of Claude Code's suggestions adds, as a person reads it: `Bash(npm test:*)`
    (a rule as its settings write it), access to a folder, a mode; and where it applies."""
    if not isinstance(suggestion, dict):
        return None
    kind = suggestion.get("type")
    if kind == "addRules":
        parts = []
        for rule in suggestion.get("rules") or []:
            if isinstance(rule, dict) and isinstance(rule.get("toolName"), str):
                content = rule.get("ruleContent")
                parts.append(f"{rule['toolName']}({content})" if content else rule["toolName"])
        said = ", ".join(parts)
    elif kind == "addDirectories":
        folders = [d for d in suggestion.get("directories") or [] if isinstance(d, str)]
        said = f"access to {', '.join(folders)}" if folders else ""
    elif kind == "setMode" and isinstance(suggestion.get("mode"), str):
        said = f"the {suggestion['mode']} mode"
    else:
        return None
    where = WHERE.get(str(suggestion.get("destination")))
    return (f"{said} ({where})" if where else said) or None


def diff_of(tool: str, tool_input: dict[str, Any]) -> str | None:
    """An edit's change as a unified diff a phone can read; a new file is all `+` lines."""
    path = str(tool_input.get("file_path") or "file")
    name = PurePath(path).name
    before: Any
    after: Any
    if tool == "Write" and isinstance(tool_input.get("content"), str):
        before, after = "", tool_input["content"]
    elif tool == "Edit":
        before, after = tool_input.get("old_string"), tool_input.get("new_string")
    elif tool == "MultiEdit" and isinstance(tool_input.get("edits"), list):
        pairs = [e for e in tool_input["edits"] if isinstance(e, dict)]
        before = "\n…\n".join(str(e.get("old_string", "")) for e in pairs)
        after = "\n…\n".join(str(e.get("new_string", "")) for e in pairs)
    else:
        return None
    if not isinstance(before, str) or not isinstance(after, str):
        return None
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=2
    )
    return cut("\n".join(lines), MAX_DIFF_CHARS)


def patch_of(tool_input: dict[str, Any]) -> tuple[str, str] | None:
    """Codex's `apply_patch` (its text in `command`): the first file it touches and the patch,
    whose `+`/`-` lines read as a diff."""
    patch = tool_input.get("command") or tool_input.get("input")
    if not isinstance(patch, str) or PATCH_START not in patch:
        return None
    found = PATCH_FILE.search(patch)
    return (found.group(1).strip() if found else "file"), cut(patch, MAX_DIFF_CHARS)


def permission_prompt(
    hook: dict[str, Any], program: str
) -> tuple[PromptKind, dict[str, Any], dict[str, Any]]:
    """The card for the program's dialog: its kind, its one question, and its stop."""
    tool = str(hook.get("tool_name") or "a tool")
    tool_input = hook.get("tool_input") if isinstance(hook.get("tool_input"), dict) else {}
    assert isinstance(tool_input, dict)
    if tool == PLAN_TOOL:
        written = tool_input.get("plan") or plan_of(hook.get("transcript_path")) or NO_PLAN
        plan = cut(str(written), MAX_PLAN_CHARS)
        question = {
            "id": QUESTION_ID,
            "header": "Plan",
            "question": "Claude Code has a plan and asks to start on it.",
            "options": [
                {"label": APPROVE, "description": "It leaves plan mode and starts"},
                {"label": KEEP_PLANNING, "description": "Or write what to change"},
            ],
        }
        return PLAN, question, {"program": program, "tool": tool, "plan": plan}
    stop: dict[str, Any] = {"program": program, "tool": tool}
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        stop["command"] = cut(tool_input["command"], MAX_COMMAND_CHARS)
        asked = f"{program} asks to run this command."
    elif (diff := diff_of(tool, tool_input)) is not None:
        stop["path"] = str(tool_input.get("file_path"))[:1000]
        stop["diff"] = diff
        asked = f"{program} asks to change {PurePath(stop['path']).name}."
    elif tool == PATCH_TOOL and (patch := patch_of(tool_input)) is not None:
        stop["path"], stop["diff"] = patch[0][:1000], patch[1]
        asked = f"{program} asks to change {PurePath(stop['path']).name}."
    elif isinstance(tool_input.get("url"), str):
        stop["url"] = tool_input["url"][:2000]
        asked = f"{program} asks to fetch this page."
    else:
        shown = json.dumps(tool_input, ensure_ascii=False, indent=1)
        stop["command"] = cut(shown, MAX_COMMAND_CHARS)
        asked = f"{program} asks to use {tool}."
    # Codex says why it asks (the model's justification) in the input's `description`.
    if isinstance(reason := tool_input.get("description"), str) and reason.strip():
        asked = f"{asked[:-1]}: {' '.join(reason.split())[:300]}"
    options: list[dict[str, Any]] = [{"label": ALLOW_ONCE}]
    rules = [r for r in map(rule_text, hook.get("permission_suggestions") or []) if r]
    if rules:
        stop["always"], stop["rule"] = ALLOW_ALWAYS, "; ".join(rules)[:500]
        options.append({"label": ALLOW_ALWAYS, "description": f"Adds {stop['rule']}"[:200]})
    options.append({"label": DENY, "description": "Or write what to do instead"})
    question = {"id": QUESTION_ID, "header": "Permission", "question": asked, "options": options}
    return PERMISSION, question, stop


def permission_decision(result: dict[str, Any], hook: dict[str, Any]) -> dict[str, Any] | None:
    """Claude Code's decision for the person's answer; None (no decision: the terminal's
    dialog asks) for anything but an answer."""
    if result.get("status") != "answered":
        return None
    [chosen] = result["answers"]["answers"].get(QUESTION_ID) or [None]
    plan = hook.get("tool_name") == PLAN_TOOL
    decided: dict[str, Any]
    if chosen == APPROVE:  # Claude Code 2.1.332 takes a plan's allow with its input only
        decided = {"behavior": "allow", "updatedInput": dict(hook.get("tool_input") or {})}
    elif chosen == ALLOW_ONCE:
        decided = {"behavior": "allow"}
    elif chosen == ALLOW_ALWAYS and not plan:
        suggestions = [s for s in hook.get("permission_suggestions") or [] if rule_text(s)]
        decided = {"behavior": "allow", "updatedPermissions": suggestions}
    elif chosen == DENY:
        decided = {"behavior": "deny", "message": DENIED}
    elif chosen == KEEP_PLANNING:
        decided = {"behavior": "deny", "message": KEPT_PLANNING}
    elif isinstance(chosen, str) and chosen.strip():  # the person's own words
        said = KEEP_PLANNING_SAYING if plan else DENIED_SAYING
        decided = {"behavior": "deny", "message": said.format(note=chosen.strip())}
    else:
        return None
    return {"hookSpecificOutput": {"hookEventName": EVENT, "decision": decided}}

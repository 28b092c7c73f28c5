"""`ask-user codex-hook`: Codex's own stops, answered on the phone (#54).

`setup codex` installs it in `~/.codex/hooks.json` for three of Codex's hook events:

- `PreToolUse` on `request_user_input` (Codex's questions in Plan mode, 1–3 of them, each with
  an id, a header of ≤ 12 characters and 2–3 options): the same questions on the phone. Codex
  0.171 refuses a hook's `allow` with changed input, so the answer goes back as a `deny` whose
  reason carries it in Codex's own answer shape (`{"answers": {id: {"answers": [...]}}}`): the
  model reads it as the tool's result. Dismissed on the phone, the model is told to go on
  without; expired or cancelled, Codex asks in its own UI.
- `PermissionRequest` (its approval of a command, a patch or a network fetch): a permission
  card with allow once and deny (with an optional note). Codex takes only `allow` or `deny`
  here — no rule to add — so there is no "allow always".
- `Stop`: the project's late answers (v1.4), as for Claude Code.

Codex shows its own dialog only after its hooks return, so while a card waits its terminal
shows the hook's status line ("Waiting for your answer on your phone"): dismissing a permission
card brings Codex's dialog back at once; Esc there ends the hook with SIGKILL, and the guard
(guard.py) takes the card back. Codex passes hooks
no settings of ours, so the hook reads the gateway `setup` wrote for Codex's MCP server (its
`[mcp_servers.ask-user].env`): the hooks and the tool always ask the same gateway.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from app.asking.tool import SERVER_NAME

from .claude_hook import prompt_questions
from .environment import AgentEnvironment
from .hook_flow import Card, HookProgram, run_hook
from .permission_hook import EVENT as PERMISSION_EVENT
from .permission_hook import permission_decision, permission_prompt

QUESTION_TOOL = "request_user_input"
EVENT = "PreToolUse"
ANSWERED = "The user answered on their phone (Ask User), as this tool's answer: "
DECLINED = (
    "The user dismissed these questions on their phone without answering. Do not ask them "
    "again; continue with your best judgment and say which choices you made."
)


def decision(result: dict[str, Any]) -> dict[str, Any] | None:
    """Codex's PreToolUse output for the person's answer; None (Codex asks itself) for an
    expiry or a cancel."""
    if result.get("status") == "answered":
        values = result["answers"]["answers"]
        answer = {"answers": {qid: {"answers": chosen} for qid, chosen in values.items()}}
        reason = ANSWERED + json.dumps(answer, ensure_ascii=False)
    elif result.get("reason") == "dismissed":
        reason = DECLINED
    else:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": EVENT,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def card(hook: dict[str, Any]) -> Card | None:
    """Codex's hook call as a card: an approval, or its questions; None for any other tool."""
    if hook.get("hook_event_name") == PERMISSION_EVENT:
        kind, question, stop = permission_prompt(hook, CODEX.name)
        return Card(
            [question], lambda result: permission_decision(result, hook), kind=kind, stop=stop
        )
    if hook.get("hook_event_name") == EVENT and hook.get("tool_name") == QUESTION_TOOL:
        questions, _ = prompt_questions(hook.get("tool_input"), keep_ids=True)
        return Card(questions, decision)
    return None


CODEX = HookProgram("Codex", "codex", card, kills_its_hooks=True)  # Esc: SIGKILL


def codex_gateway(codex_home: str | None = None) -> dict[str, str]:
    """The gateway settings `setup codex` wrote for the MCP server, from Codex's config.toml
    (empty when there are none, or the file cannot be read)."""
    import tomllib

    path = Path(codex_home or Path.home() / ".codex") / "config.toml"
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    env = ((config.get("mcp_servers") or {}).get(SERVER_NAME) or {}).get("env") or {}
    return {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}


def run(args: argparse.Namespace) -> int:
    """`ask-user codex-hook`, from its command line."""
    os.environ.update(codex_gateway(AgentEnvironment.read().codex_home))
    return run_hook(CODEX, timeout_seconds=args.timeout, gateway_url=args.gateway_url,
                    token=args.token)  # fmt: skip

"""Who is asking, in words a person reads at a glance: "Claude Code · shop-api" (#40).

With several agents waiting at once, a card that only says "Question 1 of 1" is not enough. The
words come from what the prompt already carries: its agentId (`claude-code/3f2a9c1e`, the
program and its process, docs/PROTOCOL.md v1.4) and its sessionKey (`claude-code:~/code/shop-api`,
the program and its project; or a key an agent chose, like `main` or `shop`). Every place that
shows a prompt — cards, the stepper, summaries, the session filter, notifications, chat
messages, the answer page — says it with these functions, and nothing else. The agent side
makes the key with `project_session_key` and `client_slug` here, so the format is written once.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath

from . import limits

# MCP clients' own names (their `clientInfo.name` at initialize) → the program's key.
_CLIENT_KEYS = {
    "codex-mcp-client": "codex",
    "claude-ai": "claude-desktop",
    "gemini-cli-mcp-client": "gemini",
    "copilot-cli": "copilot",
    "github-copilot-cli": "copilot",
}
# The programs `setup` knows, as people call them; any other shows as its own key.
PROGRAM_NAMES = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "claude-desktop": "Claude Desktop",
    "cursor": "Cursor",
    "gemini": "Gemini CLI",
    "opencode": "opencode",
    "copilot": "Copilot",
    "mcp": "An MCP client",
}
SEPARATOR = " · "
# `program:folder`, as `project_session_key` makes it: the folder from home (~), the root, a
# Windows drive, or cut (…). A URL (`https://…`) is not one.
_PROGRAM_KEY = re.compile(r"^([a-z0-9][a-z0-9-]{0,39}):((?!//)(?:~|/|…|[A-Za-z]:[\\/]).*)$")


def client_slug(name: str | None) -> str:
    """A program's name as a key: `Claude Code` → `claude-code`; unnamed → `mcp`."""
    slug = re.sub(r"[^a-z0-9]+", "-", (name or "").lower()).strip("-")[:40]
    return _CLIENT_KEYS.get(slug, slug) or "mcp"


def project_session_key(program: str, folder: str | PurePath, home: str | PurePath) -> str:
    """`program:~/path/of/the/project` (the sessionKey that groups a project's questions), the
    folder under `home` written from `~`, within the sessionKey limit (the path's end kept)."""
    path, home = str(folder), str(home)
    if path == home or path.startswith(home + os.sep):
        path = "~" + path[len(home) :]
    key = f"{program}:{path}"
    if len(key) <= limits.MAX_SESSION_KEY_CHARS:
        return key
    keep = limits.MAX_SESSION_KEY_CHARS - len(program) - 2
    return f"{program}:…{path[-keep:]}"


def is_project_key(session_key: str) -> bool:
    """Whether the key names a program's project (`claude-code:~/code/shop`), as
    `project_session_key` makes it, rather than a key an agent chose (`main`)."""
    return _PROGRAM_KEY.match(session_key) is not None


def program_name(key: str) -> str:
    return PROGRAM_NAMES.get(key, key)


def session_label(session_key: str) -> str:
    """`claude-code:~/code/shop-api` → "Claude Code · shop-api"; any other key as it is."""
    match = _PROGRAM_KEY.match(session_key)
    if match is None:
        return session_key
    program, place = match.groups()
    project = place.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or place
    return f"{program_name(program)}{SEPARATOR}{project}"


def asker_label(session_key: str, agent_id: str | None) -> str:
    """The session's words, with the asking program first when only the agentId names it
    (`/mcp` without a header: sessionKey `main`, agentId `codex/1a2b3c4d`)."""
    label = session_label(session_key)
    program = (agent_id or "").split("/", 1)[0]
    if program and _PROGRAM_KEY.match(session_key) is None and "/" in (agent_id or ""):
        return f"{program_name(program)}{SEPARATOR}{label}"
    return label

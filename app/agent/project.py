"""Which project an agent asks from, and which program it is: the `sessionKey` that groups a
project's questions in the app (`claude-code:~/code/shop`) and the `agentId` that gives each
running agent its own pending slot (docs/PROTOCOL.md v1.4)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from app.protocol import limits

# MCP clients' own names (their `clientInfo.name` at initialize) → the short name we show.
_KNOWN_CLIENTS = {"codex-mcp-client": "codex", "claude-ai": "claude-desktop"}


def client_slug(name: str | None) -> str:
    """A program's name as a key: `Claude Code` → `claude-code`; unnamed → `mcp`."""
    slug = re.sub(r"[^a-z0-9]+", "-", (name or "").lower()).strip("-")[:40]
    return _KNOWN_CLIENTS.get(slug, slug) or "mcp"


def project_session_key(program: str, folder: str | os.PathLike[str]) -> str:
    """`program:~/path/of/the/project`, within the sessionKey limit (the path's end kept)."""
    path = str(folder)
    home = str(Path.home())
    if path == home or path.startswith(home + os.sep):
        path = "~" + path[len(home) :]
    key = f"{program}:{path}"
    if len(key) <= limits.MAX_SESSION_KEY_CHARS:
        return key
    keep = limits.MAX_SESSION_KEY_CHARS - len(program) - 2
    return f"{program}:…{path[-keep:]}"

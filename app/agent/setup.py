"""`ask-user setup claude-code`: the hook and the MCP server, written into Claude Code's settings.

User scope: the hook in `~/.claude/settings.json`, the server in `~/.claude.json`. Project
scope: `.claude/settings.json` and `.mcp.json` in the project (shared through git, so no
token is ever written there). Commands are absolute paths, and every timeout is above the
prompt's: Claude Code must not give up before the person does. Running it again replaces what
it wrote; everything else in those files is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.protocol import limits
from app.protocol.local_gateway import AGENT_TOKEN_ENV, GATEWAY_URL_ENV

from .claude_hook import TOOL

SERVER_NAME = "ask-user"
HOOK_COMMAND = "claude-hook"
MARGIN_SECONDS = 60  # how much longer than the prompt Claude Code waits for the hook / tool
MCP_TOOL_TIMEOUT_MS = (limits.MAX_TIMEOUT_SECONDS + MARGIN_SECONDS) * 1000


class SetupError(Exception):
    """A settings file we will not overwrite; the message names it and why."""


def ask_user_command() -> list[str]:
    """How to run this installation from anywhere: the `ask-user` script beside this Python
    (a venv's bin), else the one on PATH, else this Python with `-m app`."""
    beside = Path(sys.executable).with_name("ask-user")
    if beside.exists():
        return [str(beside.absolute())]
    if found := shutil.which("ask-user"):
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "app"]


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise SetupError(
            f"{path} is not valid JSON ({exc}); fix or move it, then run again"
        ) from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} does not hold a JSON object; fix or move it, then run again")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    """Atomically, keeping the file's mode (~/.claude.json is private)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and f" {HOOK_COMMAND}" in str(hook.get("command", ""))


def with_hook(settings: dict[str, Any], command: str, timeout_seconds: int) -> dict[str, Any]:
    """`settings` with our PreToolUse hook for AskUserQuestion (an earlier one replaced)."""
    hooks = dict(settings.get("hooks") or {})
    kept = []
    for group in hooks.get("PreToolUse") or []:
        inner = [h for h in group.get("hooks", []) if not _is_ours(h)]
        if inner:
            kept.append({**group, "hooks": inner})
    kept.append(
        {
            "matcher": TOOL,
            "hooks": [{"type": "command", "command": command, "timeout": timeout_seconds}],
        }
    )
    hooks["PreToolUse"] = kept
    env = dict(settings.get("env") or {})
    current = env.get("MCP_TOOL_TIMEOUT")
    if not (isinstance(current, str) and current.isdigit() and int(current) >= MCP_TOOL_TIMEOUT_MS):
        env["MCP_TOOL_TIMEOUT"] = str(MCP_TOOL_TIMEOUT_MS)
    return {**settings, "hooks": hooks, "env": env}


def with_server(config: dict[str, Any], server: dict[str, Any]) -> dict[str, Any]:
    return {**config, "mcpServers": {**(config.get("mcpServers") or {}), SERVER_NAME: server}}


def plan(args: argparse.Namespace) -> list[tuple[Path, dict[str, Any]]]:
    """Each file with what it will hold."""
    command = ask_user_command()
    timeout = limits.clamp_timeout(args.timeout)
    hook = shlex.join(
        [*command, HOOK_COMMAND, *(["--timeout", str(args.timeout)] * bool(args.timeout))]
    )
    env: dict[str, str] = {}
    if url := args.gateway_url or os.environ.get(GATEWAY_URL_ENV):
        env[GATEWAY_URL_ENV] = url
    if args.token:
        if args.scope == "project":
            raise SetupError("--token goes only into user settings: project files are shared")
        env[AGENT_TOKEN_ENV] = args.token
    server: dict[str, Any] = {"type": "stdio", "command": command[0], "args": [*command[1:], "mcp"]}
    if args.scope == "project":
        project = Path(args.project_dir).resolve()
        settings_path = project / ".claude" / "settings.json"
        servers_path = project / ".mcp.json"
    else:
        config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
        base = Path(config_dir) if config_dir else Path.home() / ".claude"
        settings_path = base / "settings.json"
        servers_path = (
            Path(config_dir) / ".claude.json" if config_dir else Path.home() / ".claude.json"
        )
    if env:
        server["env"] = env
    settings = with_hook(_read(settings_path), hook, timeout + MARGIN_SECONDS)
    if env:
        settings["env"] = {**settings["env"], **env}  # the hook reads them too
    return [(settings_path, settings), (servers_path, with_server(_read(servers_path), server))]


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Write Ask User into an agent's settings: the MCP server, and for Claude Code the hook "
        "that sends its own questions (AskUserQuestion) to your phone."
    )
    parser.add_argument("agent", choices=["claude-code"])
    parser.add_argument("--scope", choices=["user", "project"], default="user")
    parser.add_argument("--project-dir", default=".", help="with --scope project (default: .)")
    parser.add_argument("--print", action="store_true", help="show the files; write nothing")
    parser.add_argument("--timeout", type=int, help="seconds a question waits (default 900)")
    parser.add_argument("--gateway-url", help=f"written as {GATEWAY_URL_ENV} (default: $it)")
    parser.add_argument("--token", help="an agent token, written into user settings only")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        files = plan(args)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path, data in files:
        if args.print:
            print(f"# {path}\n{json.dumps(data, indent=2, ensure_ascii=False)}")
        else:
            _write(path, data)
            print(f"wrote {path}")
    if not args.print:
        print(
            "Claude Code now asks on your phone: restart it (or run /hooks) to load the hook. "
            f"The agent token comes from ${AGENT_TOKEN_ENV}, or from the gateway's tokens.json "
            "on this machine."
        )
    return 0

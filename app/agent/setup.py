"""`ask-user setup <client>`: Ask User written into an agent program's own settings files.

- `claude-code`: the hook in `~/.claude/settings.json` with an allow rule for the tool, the
  server in `~/.claude.json`; project scope: `.claude/settings.json` and `.mcp.json` in the
  project (shared through git, so no token is ever written there).
- `codex`: `[mcp_servers.ask-user]` in `~/.codex/config.toml` (`$CODEX_HOME`), required at
  start, its calls approved, its tool timeout above the longest prompt, and the gateway's data
  folder in its `env` (Codex passes stdio servers none of the shell's variables).
- `claude-desktop`, `cursor`: their `mcpServers` JSON at each platform's documented place.

Commands are absolute paths, and every timeout is above the prompt's: a client must not give
up before the person does. Running it again changes nothing; a file it changes is backed up
first (`<file>.bak`), and everything else in it is kept (TOML through tomlkit, byte for byte).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from app.asking.tool import SERVER_NAME, TOOL_NAME
from app.protocol import limits
from app.protocol.local_gateway import (
    AGENT_TOKEN_ENV,
    DATA_DIR_ENV,
    GATEWAY_URL_ENV,
    gateway_data_dir,
)

from .claude_hook import TOOL
from .codex_hook import QUESTION_TOOL as CODEX_QUESTION_TOOL
from .environment import AgentEnvironment
from .settings_files import ChangedMeanwhile, Files, SetupError, shaped, strings, write

HOOK_COMMAND = "claude-hook"
CODEX_HOOK_COMMAND = "codex-hook"
# Codex shows this while its hook waits (its own dialog comes only after the hook).
CODEX_WAITING = "Waiting for your answer on your phone (Ask User)"
MARGIN_SECONDS = 60  # how much longer than the prompt Claude Code waits for the hook / tool
STOP_SECONDS = 30  # the Stop hook only looks for late answers: it never waits for a person
# The longest a prompt can wait: its longest timeout, moved on while the person answers (v1.4).
TOOL_TIMEOUT_SECONDS = (
    limits.MAX_TIMEOUT_SECONDS + limits.MAX_ENGAGED_EXTENSION_SECONDS + MARGIN_SECONDS
)
MCP_TOOL_TIMEOUT_MS = TOOL_TIMEOUT_SECONDS * 1000
# Claude Code's name for the tool: with it allowed, the call does not stop at "Do you want to
# proceed?" in the terminal before the phone sees the question.
ALLOW_RULE = f"mcp__{SERVER_NAME}__{TOOL_NAME}"
FOREGROUND_ENV = "CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS"
GEMINI_TIMEOUT_MS = MCP_TOOL_TIMEOUT_MS  # Gemini cuts every MCP call at 600 s by default
CLIENTS = ("claude-code", "codex", "gemini", "opencode", "copilot", "claude-desktop", "cursor")


def ask_user_command() -> list[str]:
    """How to run this installation from anywhere: the `ask-user` script beside this Python
    (a venv's bin), else the one on PATH, else this Python with `-m app`."""
    beside = Path(sys.executable).with_name("ask-user")
    if beside.exists():
        return [str(beside.absolute())]
    if found := shutil.which("ask-user"):
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "app"]


def _json(data: dict[str, Any]) -> str:
    """As these clients write their files: two spaces, UTF-8 as is, a final new line."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _is_ours(hook: Any, name: str) -> bool:
    return isinstance(hook, dict) and f" {name}" in str(hook.get("command", ""))


def hook_timeout(prompt_timeout: int) -> int:
    """How long Claude Code waits for the hook: its prompt's timeout, moved on while the person
    answers (v1.4), and a margin."""
    return prompt_timeout + limits.MAX_ENGAGED_EXTENSION_SECONDS + MARGIN_SECONDS


def our_hooks(
    command: str, timeout_seconds: int, question_tool: str, status: str | None = None
) -> dict[str, dict[str, Any]]:
    """Our hook group for each event, as Claude Code and Codex both read them: the program's
    own question tool (PreToolUse), its permission dialogs (every tool, v1.5) and the late
    answers at Stop (v1.4)."""
    waiting = {"type": "command", "command": command, "timeout": timeout_seconds}
    if status:
        waiting["statusMessage"] = status
    return {
        "PreToolUse": {"matcher": question_tool, "hooks": [waiting]},
        "Stop": {"hooks": [{"type": "command", "command": command, "timeout": STOP_SECONDS}]},
        "PermissionRequest": {"hooks": [dict(waiting)]},
    }


def with_hooks(
    settings: dict[str, Any], ours: dict[str, dict[str, Any]], name: str, path: Path
) -> dict[str, dict[str, Any]]:
    """`settings["hooks"]` with our group for each event: earlier ones of ours (the command
    `name`) replaced, everyone else's kept."""
    hooks = dict(shaped(settings.get("hooks"), dict, path, "hooks"))
    for event, group_of_ours in ours.items():
        kept = []
        for group in shaped(hooks.get(event), list, path, f"hooks.{event}"):
            group = shaped(group, dict, path, f"hooks.{event}[]")
            inner = [
                h
                for h in shaped(group.get("hooks"), list, path, f"hooks.{event}[].hooks")
                if not _is_ours(h, name)
            ]
            if inner:
                kept.append({**group, "hooks": inner})
        hooks[event] = [*kept, group_of_ours]
    return hooks


def with_hook(
    settings: dict[str, Any], command: str, timeout_seconds: int, path: Path = Path("settings")
) -> dict[str, Any]:
    """Claude Code's `settings` with our hooks (its AskUserQuestion, its permission dialog and
    plans, late answers at Stop), its MCP calls kept in the foreground, and the tool allowed."""
    hooks = with_hooks(settings, our_hooks(command, timeout_seconds, TOOL), HOOK_COMMAND, path)
    env = dict(shaped(settings.get("env"), dict, path, "env"))
    # In the interactive UI Claude Code moves an MCP call still running at 120 s to the
    # background, and the person's answer later reaches the model as a notification marked
    # "NOT USER INPUT"; 0 keeps every MCP call in the foreground (a global setting).
    env[FOREGROUND_ENV] = "0"
    current = env.get("MCP_TOOL_TIMEOUT")
    if not (isinstance(current, str) and current.isdigit() and int(current) >= MCP_TOOL_TIMEOUT_MS):
        env["MCP_TOOL_TIMEOUT"] = str(MCP_TOOL_TIMEOUT_MS)
    permissions = dict(shaped(settings.get("permissions"), dict, path, "permissions"))
    allow = strings(permissions.get("allow"), path, "permissions.allow")
    if ALLOW_RULE not in allow:
        permissions["allow"] = [*allow, ALLOW_RULE]
    return {**settings, "hooks": hooks, "env": env, "permissions": permissions}


def with_server(
    config: dict[str, Any], server: dict[str, Any], path: Path = Path("settings")
) -> dict[str, Any]:
    servers = shaped(config.get("mcpServers"), dict, path, "mcpServers")
    return {**config, "mcpServers": {**servers, SERVER_NAME: server}}


def _gateway_env(
    args: argparse.Namespace, environment: AgentEnvironment, *, data_dir: bool
) -> dict[str, str]:
    """What the server needs to find the gateway: its URL and token when given, else (for a
    client that passes on none of the shell's variables) this machine's gateway data folder."""
    env: dict[str, str] = {}
    if url := args.gateway_url or environment.gateway_url:
        env[GATEWAY_URL_ENV] = url
    if args.token:
        if args.scope == "project":
            raise SetupError("--token goes only into user settings: project files are shared")
        env[AGENT_TOKEN_ENV] = args.token
    if data_dir and not env:
        folder = gateway_data_dir(environment.gateway_data)
        env[DATA_DIR_ENV] = str(folder.expanduser().absolute())
    return env


def _stdio_server(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    server: dict[str, Any] = {"command": command[0], "args": [*command[1:], "mcp"]}
    if env:
        server["env"] = env
    return server


def _claude_code(
    args: argparse.Namespace, command: list[str], environment: AgentEnvironment, files: Files
) -> list[tuple[Path, str]]:
    timeout = limits.clamp_timeout(args.timeout)
    hook = shlex.join(
        [*command, HOOK_COMMAND, *(["--timeout", str(args.timeout)] * bool(args.timeout))]
    )
    env = _gateway_env(args, environment, data_dir=False)  # Claude Code passes its own on
    server = {"type": "stdio", **_stdio_server(command, env)}
    if args.scope == "project":
        project = Path(args.project_dir).resolve()
        settings_path = project / ".claude" / "settings.json"
        servers_path = project / ".mcp.json"
    else:
        config_dir = environment.claude_config_dir
        base = Path(config_dir) if config_dir else Path.home() / ".claude"
        settings_path = base / "settings.json"
        servers_path = (
            Path(config_dir) / ".claude.json" if config_dir else Path.home() / ".claude.json"
        )
    settings = with_hook(files.json(settings_path), hook, hook_timeout(timeout), settings_path)
    if env:
        settings["env"] = {**settings["env"], **env}  # the hook reads them too
    return [
        (settings_path, _json(settings)),
        (servers_path, _json(with_server(files.json(servers_path), server, servers_path))),
    ]


def _codex(
    args: argparse.Namespace, command: list[str], environment: AgentEnvironment, files: Files
) -> list[tuple[Path, str]]:
    try:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError
    except ImportError:
        raise SetupError("setup codex needs tomlkit: pip install 'ask-user[agent]'") from None
    if args.scope == "project":
        raise SetupError("Codex reads MCP servers from ~/.codex/config.toml: use the user scope")
    path = Path(environment.codex_home or Path.home() / ".codex") / "config.toml"
    text = files.text(path)
    try:
        doc = tomlkit.parse(text) if text is not None else None
    except TOMLKitError as exc:
        raise SetupError(
            f"{path} is not valid TOML ({exc}); fix or move it, then run again"
        ) from None
    doc = doc if doc is not None else tomlkit.document()
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    shaped(servers, dict, path, "mcp_servers")  # a tomlkit table is a dict
    server = tomlkit.table()
    for key, value in _stdio_server(command, {}).items():
        server[key] = value
    server["required"] = True  # the first turn waits for the tool (it was missed without)
    server["tool_timeout_sec"] = TOOL_TIMEOUT_SECONDS  # Codex's own default stops at 300 s
    server["default_tools_approval_mode"] = "approve"  # `codex exec` refuses calls otherwise
    env = tomlkit.inline_table()
    env.update(_gateway_env(args, environment, data_dir=True))
    server["env"] = env
    server.add(tomlkit.nl())  # a blank line before whatever table follows
    servers[SERVER_NAME] = server
    # Its hooks (#54): request_user_input, its approvals and late answers. They read the
    # gateway from the server's env above (codex_hook.codex_gateway).
    hooks_path = path.with_name("hooks.json")
    hook = shlex.join(
        [*command, CODEX_HOOK_COMMAND, *(["--timeout", str(args.timeout)] * bool(args.timeout))]
    )
    ours = our_hooks(
        hook, hook_timeout(limits.clamp_timeout(args.timeout)), CODEX_QUESTION_TOOL, CODEX_WAITING
    )
    hooks_file = files.json(hooks_path)
    hooks_file["hooks"] = with_hooks(hooks_file, ours, CODEX_HOOK_COMMAND, hooks_path)
    return [(path, tomlkit.dumps(doc)), (hooks_path, _json(hooks_file))]


def _user_scope_only(args: argparse.Namespace, program: str) -> None:
    if args.scope == "project":
        raise SetupError(f"setup {program} writes the user's settings: use the user scope")


def _gemini(
    args: argparse.Namespace, command: list[str], environment: AgentEnvironment, files: Files
) -> list[tuple[Path, str]]:
    """`~/.gemini/settings.json`: the server, trusted (no confirmation before the phone sees
    the question) and with a timeout above the longest prompt (Gemini's own cuts at 600 s,
    progress or not)."""
    _user_scope_only(args, "gemini")
    home = Path(environment.gemini_cli_home) if environment.gemini_cli_home else Path.home()
    path = home / ".gemini" / "settings.json"
    server = {
        **_stdio_server(command, _gateway_env(args, environment, data_dir=True)),
        "timeout": GEMINI_TIMEOUT_MS,
        "trust": True,
    }
    return [(path, _json(with_server(files.json(path), server, path)))]


def _opencode(
    args: argparse.Namespace, command: list[str], environment: AgentEnvironment, files: Files
) -> list[tuple[Path, str]]:
    """`~/.config/opencode/opencode.json`: a local MCP server (opencode resets its wait on
    progress, so no timeout is needed)."""
    _user_scope_only(args, "opencode")
    base = Path(environment.xdg_config_home or Path.home() / ".config")
    path = base / "opencode" / "opencode.json"
    config = files.json(path)
    servers = shaped(config.get("mcp"), dict, path, "mcp")
    server: dict[str, Any] = {"type": "local", "command": [*command, "mcp"], "enabled": True}
    if env := _gateway_env(args, environment, data_dir=True):
        server["environment"] = env
    config = {"$schema": "https://opencode.ai/config.json", **config}
    return [(path, _json({**config, "mcp": {**servers, SERVER_NAME: server}}))]


def _copilot(
    args: argparse.Namespace, command: list[str], environment: AgentEnvironment, files: Files
) -> list[tuple[Path, str]]:
    """`~/.copilot/mcp-config.json` (`$COPILOT_HOME`), as `copilot mcp add` writes it."""
    _user_scope_only(args, "copilot")
    home = Path(environment.copilot_home or Path.home() / ".copilot")
    path = home / "mcp-config.json"
    server = {
        "type": "local",
        **_stdio_server(command, _gateway_env(args, environment, data_dir=True)),
        "tools": ["*"],
    }
    return [(path, _json(with_server(files.json(path), server, path)))]


def desktop_config_path(
    client: str, environment: AgentEnvironment, project: Path | None = None
) -> Path:
    """Where Claude Desktop and Cursor read their MCP servers, as each documents it."""
    if client == "cursor":
        return (project or Path.home()) / ".cursor" / "mcp.json"
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(environment.appdata or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(environment.xdg_config_home or Path.home() / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def _desktop(
    args: argparse.Namespace, command: list[str], environment: AgentEnvironment, files: Files
) -> list[tuple[Path, str]]:
    project = None
    if args.scope == "project":
        if args.agent != "cursor":
            raise SetupError("Claude Desktop has no project settings: use the user scope")
        project = Path(args.project_dir).resolve()
    path = desktop_config_path(args.agent, environment, project)
    env = _gateway_env(
        args, environment, data_dir=project is None
    )  # a project's file is shared: no paths
    return [(path, _json(with_server(files.json(path), _stdio_server(command, env), path)))]


PROGRAMS = {
    "claude-code": _claude_code,
    "codex": _codex,
    "gemini": _gemini,
    "opencode": _opencode,
    "copilot": _copilot,
    "claude-desktop": _desktop,
    "cursor": _desktop,
}
ATTEMPTS = 5  # a file another program rewrites while we plan: read it again, this many times


def plan(args: argparse.Namespace, files: Files | None = None) -> list[tuple[Path, str]]:
    """Each file with the whole text it will hold (`files` remembers what each held)."""
    command, environment = ask_user_command(), AgentEnvironment.read()
    return PROGRAMS[args.agent](args, command, environment, files or Files())


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Write Ask User into an agent's settings: the MCP server, and for Claude Code the hook "
        "that sends its own questions (AskUserQuestion) to your phone. A file it changes is "
        "backed up as <file>.bak; running it again changes nothing."
    )
    parser.add_argument("agent", choices=CLIENTS)
    parser.add_argument("--scope", choices=["user", "project"], default="user")
    parser.add_argument("--project-dir", default=".", help="with --scope project (default: .)")
    parser.add_argument("--print", action="store_true", help="show the files; write nothing")
    parser.add_argument("--timeout", type=int, help="seconds a question waits (default 900)")
    parser.add_argument("--gateway-url", help=f"written as {GATEWAY_URL_ENV} (default: $it)")
    parser.add_argument("--token", help="an agent token, written into user settings only")
    return parser


NEXT_STEP = {
    "claude-code": "Claude Code now asks on your phone: restart it (or /hooks) to load the hook.",
    "codex": "Codex now asks on your phone: start a new session, and when it says its hooks "
    'are new, choose "Trust all and continue" (once; "Review hooks" shows them first).',
    "gemini": "Gemini CLI now asks on your phone: start a new session (/mcp lists the server).",
    "opencode": "opencode now asks on your phone: start a new session.",
    "copilot": "Copilot CLI now asks on your phone: start a new session (/mcp lists it).",
    "claude-desktop": "Claude Desktop now asks on your phone: quit and open it again.",
    "cursor": "Cursor now asks on your phone: reload its MCP servers (Settings → MCP).",
}


def _apply(args: argparse.Namespace) -> list[str]:
    """Plan and write every file, planning again when one changed meanwhile; what was done."""
    for _ in range(ATTEMPTS):
        files = Files()
        planned = plan(args, files)
        if args.print:
            return [f"# {path}\n{text}" for path, text in planned]
        said: list[str] = []
        try:
            for path, text in planned:
                said.append(write(path, text, files.seen.get(path), secret=bool(args.token)))
        except ChangedMeanwhile as changed:
            print(f"{changed} changed while setup ran: reading it again", file=sys.stderr)
            continue
        return said
    raise SetupError(f"the files kept changing while setup ran ({ATTEMPTS} tries); run it again")


def run(args: argparse.Namespace) -> int:
    try:
        for line in _apply(args):
            print(line)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not args.print:
        token_from = (
            ""
            if args.token
            else f" The agent token comes from ${AGENT_TOKEN_ENV}, or from the gateway's "
            "tokens.json on this machine."
        )
        print(NEXT_STEP[args.agent] + token_from)
    return 0

"""The command line: `python -m app [app|demo|gateway|pair|devices|people|agent-token|ask|mcp|…]`
(the app by default)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path


def _prog() -> str:
    """The name this was run by: the `ask-user` script, or `python -m app`."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "python -m app" if name in ("", "__main__.py", "-c") else name


# Each command: its help line, and where its parser is built. Only the chosen command's module is
# imported (all of them for --help): `ask-user mcp` must answer its client quickly, and it
# imported the whole gateway and the app just to build their parsers (#40).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "app": ("run the app (the default)", "app.launch", "build_parser"),
    "demo": ("run the app with a demo agent asking", "app.launch", "build_parser"),
    "gateway": ("run the gateway", "app.gateway.cli", "build_parser"),
    "pair": ("pair a phone: a link and a QR code", "app.gateway.admin", "build_pair_parser"),
    "devices": ("list or revoke paired devices", "app.gateway.admin", "build_devices_parser"),
    "people": (
        "add, list or remove the people of a shared gateway",
        "app.gateway.admin",
        "build_people_parser",
    ),
    "agent-token": (
        "make an agent token for a person",
        "app.gateway.admin",
        "build_agent_token_parser",
    ),
    "ask": ("ask the user from a shell", "app.agent.cli", "build_ask_parser"),
    "mcp": ("serve ask_user over MCP stdio", "app.agent.cli", "build_mcp_parser"),
    "claude-hook": (
        "Claude Code's PreToolUse hook: its questions",
        "app.agent.cli",
        "build_claude_hook_parser",
    ),
    "setup": (
        "write Ask User into an agent's settings (claude-code, codex, ...)",
        "app.agent.setup",
        "build_parser",
    ),
    "telegram": ("answer from Telegram, with buttons", "app.channels.telegram", "build_parser"),
    "slack": ("answer from Slack, with buttons", "app.channels.slack", "build_parser"),
    "discord": ("answer from Discord, with buttons", "app.channels.discord", "build_parser"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["app", *argv]  # no command: run the app (`--help` lists the commands)
    chosen = argv[0] if argv[0] in COMMANDS else None
    parser = argparse.ArgumentParser(prog=_prog(), description="Ask User")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (help_line, module, builder) in COMMANDS.items():
        command = commands.add_parser(name, help=help_line)
        if chosen in (None, name):
            getattr(importlib.import_module(module), builder)(command)
    return _run(parser.parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    if args.command in ("app", "demo"):
        from app.launch import run as run_app

        return run_app(args, demo=args.command == "demo")
    if args.command == "gateway":
        from app.gateway.cli import run

        return run(args)
    if COMMANDS[args.command][1] == "app.gateway.admin":
        from app.gateway.admin import run as run_admin

        return run_admin(args, args.command)
    if args.command == "ask":
        from app.agent.cli import run_ask

        return run_ask(args)
    if args.command == "mcp":
        from app.agent.cli import run_mcp

        return run_mcp(args)
    if args.command == "claude-hook":
        from app.agent.claude_hook import run_claude_hook

        return run_claude_hook(
            timeout_seconds=args.timeout, gateway_url=args.gateway_url, token=args.token
        )
    if args.command == "setup":
        from app.agent.setup import run as run_setup

        return run_setup(args)
    if args.command == "discord":
        from app.channels.discord import run as run_discord

        return run_discord(args)
    if args.command == "slack":
        from app.channels.slack import run as run_slack

        return run_slack(args)
    from app.channels.telegram import run as run_telegram

    return run_telegram(args)


if __name__ == "__main__":
    sys.exit(main())

"""The command line: `python -m app [app|demo|gateway|pair|devices|people|agent-token|ask|mcp|…]`
(the app by default)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _prog() -> str:
    """The name this was run by: the `ask-user` script, or `python -m app`."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "python -m app" if name in ("", "__main__.py", "-c") else name


@dataclass(frozen=True)
class Command:
    """A command: its help line, where its parser is built and where it runs (`module:name`).
    Only the chosen command's module is imported (all of them for --help): `ask-user mcp`
    must answer its client quickly, and it imported the whole gateway and the app just to
    build their parsers (#40)."""

    help: str
    parser: str
    run: str


COMMANDS: dict[str, Command] = {
    "app": Command("run the app (the default)", "app.launch:build_parser", "app.launch:run"),
    "demo": Command(
        "run the app with a demo agent asking", "app.launch:build_parser", "app.launch:run_demo"
    ),
    "gateway": Command("run the gateway", "app.gateway.cli:build_parser", "app.gateway.cli:run"),
    "pair": Command(
        "pair a phone: a link and a QR code",
        "app.gateway.admin:build_pair_parser",
        "app.gateway.admin:run",
    ),
    "devices": Command(
        "list or revoke paired devices",
        "app.gateway.admin:build_devices_parser",
        "app.gateway.admin:run",
    ),
    "people": Command(
        "add, list or remove the people of a shared gateway",
        "app.gateway.admin:build_people_parser",
        "app.gateway.admin:run",
    ),
    "agent-token": Command(
        "make an agent token for a person",
        "app.gateway.admin:build_agent_token_parser",
        "app.gateway.admin:run",
    ),
    "ask": Command(
        "ask the user from a shell", "app.agent.cli:build_ask_parser", "app.agent.cli:run_ask"
    ),
    "mcp": Command(
        "serve ask_user over MCP stdio", "app.agent.cli:build_mcp_parser", "app.agent.cli:run_mcp"
    ),
    "claude-hook": Command(
        "Claude Code's hook: its questions, permissions and plans",
        "app.agent.cli:build_claude_hook_parser",
        "app.agent.claude_hook:run",
    ),
    "codex-hook": Command(
        "Codex's hook: its questions and approvals",
        "app.agent.cli:build_codex_hook_parser",
        "app.agent.codex_hook:run",
    ),
    "setup": Command(
        "write Ask User into an agent's settings (claude-code, codex, ...)",
        "app.agent.setup:build_parser",
        "app.agent.setup:run",
    ),
    "telegram": Command(
        "answer from Telegram, with buttons",
        "app.channels.telegram:build_parser",
        "app.channels.telegram:run",
    ),
    "slack": Command(
        "answer from Slack, with buttons",
        "app.channels.slack:build_parser",
        "app.channels.slack:run",
    ),
    "discord": Command(
        "answer from Discord, with buttons",
        "app.channels.discord:build_parser",
        "app.channels.discord:run",
    ),
}


def _named(where: str) -> Callable[..., Any]:
    module, name = where.split(":")
    named: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return named


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["app", *argv]  # no command: run the app (`--help` lists the commands)
    chosen = argv[0] if argv[0] in COMMANDS else None
    parser = argparse.ArgumentParser(prog=_prog(), description="Ask User")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        sub = commands.add_parser(name, help=command.help)
        if chosen in (None, name):
            _named(command.parser)(sub)
    args = parser.parse_args(argv)
    return int(_named(COMMANDS[args.command].run)(args))


if __name__ == "__main__":
    sys.exit(main())

"""The command line: `python -m app [app|demo|gateway|pair|devices|people|agent-token|ask|mcp|…]`
(the app by default)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _prog() -> str:
    """The name this was run by: the `ask-user` script, or `python -m app`."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "python -m app" if name in ("", "__main__.py", "-c") else name


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from app.launch import build_parser as app_parser

    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["app", *argv]  # no command: run the app (`--help` lists the commands)
    parser = argparse.ArgumentParser(prog=_prog(), description="Ask User")
    commands = parser.add_subparsers(dest="command", required=True)
    app_parser(commands.add_parser("app", help="run the app (the default)"))
    app_parser(commands.add_parser("demo", help="run the app with a demo agent asking"))
    from app.gateway.cli import build_parser as gateway_parser

    gateway_parser(commands.add_parser("gateway", help="run the gateway"))
    from app.gateway import admin

    admin.build_pair_parser(commands.add_parser("pair", help="pair a phone: a link and a QR code"))
    admin.build_devices_parser(commands.add_parser("devices", help="list or revoke paired devices"))
    admin.build_people_parser(
        commands.add_parser("people", help="add, list or remove the people of a shared gateway")
    )
    admin.build_agent_token_parser(
        commands.add_parser("agent-token", help="make an agent token for a person")
    )
    from app.agent.cli import build_ask_parser, build_mcp_parser

    build_ask_parser(commands.add_parser("ask", help="ask the user from a shell"))
    build_mcp_parser(commands.add_parser("mcp", help="serve ask_user over MCP stdio"))
    from app.agent.cli import build_claude_hook_parser
    from app.agent.setup import build_parser as setup_parser

    build_claude_hook_parser(
        commands.add_parser("claude-hook", help="Claude Code's PreToolUse hook: its questions")
    )
    setup_parser(
        commands.add_parser(
            "setup",
            help="write Ask User into an agent's settings (claude-code, codex, ...)",
        )
    )
    from app.channels.telegram import build_parser as telegram_parser

    telegram_parser(commands.add_parser("telegram", help="answer from Telegram, with buttons"))
    from app.channels.slack import build_parser as slack_parser

    slack_parser(commands.add_parser("slack", help="answer from Slack, with buttons"))
    from app.channels.discord import build_parser as discord_parser

    discord_parser(commands.add_parser("discord", help="answer from Discord, with buttons"))
    args = parser.parse_args(argv)
    if args.command in ("app", "demo"):
        from app.launch import run as run_app

        return run_app(args, demo=args.command == "demo")
    if args.command == "gateway":
        from app.gateway.cli import run

        return run(args)
    if args.command in admin.COMMANDS:
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
    if args.command == "telegram":
        from app.channels.telegram import run as run_telegram

        return run_telegram(args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())

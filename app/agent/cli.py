"""`python -m app ask` (one prompt from a shell) and `python -m app mcp` (the MCP server).

`ask` prints the tool result JSON; exit 0 answered, 2 no_answer, 1 error, 128 + the signal on
Ctrl-C (130), SIGTERM (143) or SIGHUP (129), after cancelling the prompt at the gateway.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from app.protocol import limits
from app.protocol.asker import project_session_key

EXIT_ANSWERED, EXIT_ERROR, EXIT_NO_ANSWER, EXIT_INTERRUPTED = 0, 1, 2, 130
ASK_PROGRAM = "ask-user"  # how `ask` names itself on the card
# Where the gateway and the token come from when no flag names them (app/agent/environment.py).
URL_ORDER = (
    "$ASK_USER_GATEWAY_URL, else the address in this machine's gateway.json (a gateway "
    "or the app running here), else http://127.0.0.1:8765"
)
TOKEN_ORDER = "$ASK_USER_AGENT_TOKEN, else the agent token in this machine's tokens.json"


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gateway-url", help=f"default: {URL_ORDER}")
    parser.add_argument("--token", help=f"agent token (default: {TOKEN_ORDER})")
    parser.add_argument(
        "--session-key",
        default=None,
        help="the conversation (default: $ASK_USER_SESSION_KEY, else this folder's, "
        "program:~/path, asked in a slot of its own)",
    )
    parser.add_argument("--agent-id")
    parser.add_argument("--run-id")


def build_ask_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Ask the user and print the tool result JSON. The prompt is the tool's arguments "
        '({"questions": [...], "timeoutSeconds": N}) from --file, from stdin, or one quick '
        "question from --question/--option."
    )
    parser.add_argument("--file", help="a JSON file with the tool arguments ('-' for stdin)")
    parser.add_argument("--question", help="one quick question")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        help="an option of the quick question (2-4; repeat the flag)",
    )
    parser.add_argument("--header", help="short label of the quick question (default: Question)")
    parser.add_argument("--id", default="answer", help="answer key of the quick question")
    parser.add_argument("--multi", action="store_true", help="allow several options")
    parser.add_argument("--timeout", type=int, help="seconds (30-3600, default 900)")
    add_connection_flags(parser)
    return parser


def _prompt_from(args: argparse.Namespace) -> dict[str, Any]:
    if args.question:
        return {
            "questions": [
                {
                    "id": args.id,
                    "header": args.header or "Question",
                    "question": args.question,
                    "options": [{"label": label} for label in args.option],
                    "multiSelect": args.multi,
                }
            ]
        }
    if args.file and args.file != "-":
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
    elif args.file == "-" or not sys.stdin.isatty():
        text = sys.stdin.read()
    else:
        raise ValueError("give --file prompt.json, JSON on stdin, or --question with --option")
    if not text.strip():
        where = f"the file {args.file}" if args.file and args.file != "-" else "stdin"
        raise ValueError(
            f"{where} is empty: give the prompt as JSON, e.g. "
            '{"questions": [{"id": "q", "header": "Deploy", "question": "Where?", '
            '"options": [{"label": "Staging"}, {"label": "Production"}]}]}, '
            "or use --question with --option"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the prompt is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("the prompt must be a JSON object with a 'questions' array")
    return data


class _Stop(threading.Event):
    signum: int = signal.SIGINT


def _stop_on_signals() -> _Stop:
    """Ctrl-C, SIGTERM and SIGHUP stop the run, and a stopped run cancels its prompt (the
    specification). SIGINT is taken even when the process started with it ignored, as a
    shell's background job does."""
    stop = _Stop()

    def stopped(signum: int, _frame: object) -> None:
        stop.signum = signum
        stop.set()

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stopped)
    return stop


def _warnings_to_stderr() -> None:
    """What the agent side warns of (an unreachable gateway, retried) is said on stderr as it
    happens: a library leaves that to its program's logging, a command is the program."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    agent_log = logging.getLogger("ask_user.agent")
    agent_log.addHandler(handler)
    agent_log.setLevel(logging.WARNING)


def run_ask(args: argparse.Namespace) -> int:
    from .client import AskUserError, ask_user
    from .environment import AgentEnvironment

    _warnings_to_stderr()

    try:
        prompt = _prompt_from(args)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    known = {"questions", "timeoutSeconds", "sessionKey", "agentId", "runId"}
    if unknown := set(prompt) - known:
        print(f"error: unknown properties: {', '.join(sorted(unknown))}", file=sys.stderr)
        return EXIT_ERROR
    asked_timeout = args.timeout if args.timeout is not None else prompt.get("timeoutSeconds")
    whole = isinstance(asked_timeout, int) and not isinstance(asked_timeout, bool)
    if whole and (waits := limits.clamp_timeout(asked_timeout)) != asked_timeout:  # said
        print(
            f"note: a question waits {limits.MIN_TIMEOUT_SECONDS}-"
            f"{limits.MAX_TIMEOUT_SECONDS} s; {asked_timeout} s became {waits} s",
            file=sys.stderr,
        )
    stop = _stop_on_signals()
    chosen_key = args.session_key or prompt.get("sessionKey") or AgentEnvironment.read().session_key
    # Unnamed, it asks in its folder's slot, as `ask-user mcp` does (v1.4): two shells in two
    # folders both ask, and the card says "ask-user · shop" (#53).
    session_key = chosen_key or project_session_key(ASK_PROGRAM, os.getcwd(), Path.home())
    agent_id = args.agent_id or prompt.get("agentId")
    if agent_id is None and chosen_key is None:
        agent_id = f"{ASK_PROGRAM}/{secrets.token_hex(4)}"
    try:
        result = ask_user(
            prompt.get("questions", []),
            timeout_seconds=args.timeout
            if args.timeout is not None
            else prompt.get("timeoutSeconds"),
            session_key=session_key,
            agent_id=agent_id,
            run_id=args.run_id or prompt.get("runId"),
            gateway_url=args.gateway_url,
            token=args.token,
            abort=stop,
        )
    except AskUserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted: the prompt was cancelled at the gateway", file=sys.stderr)
        return EXIT_INTERRUPTED
    if stop.is_set():
        print("interrupted: the prompt was cancelled at the gateway", file=sys.stderr)
        return 128 + stop.signum
    print(json.dumps(result, ensure_ascii=False))
    return EXIT_ANSWERED if result["status"] == "answered" else EXIT_NO_ANSWER


def build_mcp_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = "Serve the ask_user tool over MCP on stdio."
    add_connection_flags(parser)
    return parser


def build_claude_hook_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Claude Code's hook (AskUserQuestion, its permission dialog and plans, late answers at "
        "Stop): reads the hook's JSON on stdin, asks on your phone, prints Claude Code's "
        "decision. Set it up with `setup claude-code`."
    )
    return _hook_flags(parser)


def build_codex_hook_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Codex's hook (request_user_input, its approvals, late answers at Stop): reads the "
        "hook's JSON on stdin, asks on your phone, prints Codex's decision. Set it up with "
        "`setup codex`."
    )
    return _hook_flags(parser)


def _hook_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--timeout", type=int, help="seconds (30-3600, default 900)")
    parser.add_argument("--gateway-url", help=f"default: {URL_ORDER}")
    parser.add_argument("--token", help=f"agent token (default: {TOKEN_ORDER})")
    return parser


def run_mcp(args: argparse.Namespace) -> int:
    import anyio

    from .handshake import answer_early

    _warnings_to_stderr()  # stdout is the protocol; clients keep a server's stderr in their log
    # The client's `initialize` and `tools/list` are answered before the SDK is imported
    # (handshake.py).
    first_lines, answered_ids = answer_early()

    from .client import AskUserError
    from .mcp_server import serve_stdio

    options = {
        "gateway_url": args.gateway_url,
        "token": args.token,
        "agent_id": args.agent_id,
        "run_id": args.run_id,
        "first_lines": first_lines,
        "answered_ids": answered_ids,
    }
    if args.session_key:
        options["session_key"] = args.session_key
    try:
        anyio.run(lambda: serve_stdio(**options))
    except AskUserError as exc:  # no token or gateway to ask through: one line, not a traceback
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    return 0

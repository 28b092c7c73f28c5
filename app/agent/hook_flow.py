"""One flow for the agent programs' hooks (`claude-hook`, `codex-hook`): read the program's JSON
on stdin, make it a card, ask and wait, print the program's decision.

Each program says only what differs (`HookProgram`): how one of its hook calls becomes a card
(questions, or a permission or plan with its `stop`) and how the person's answer becomes its
decision. What every hook shares is here, written once: whenever nobody chose — the card
expired or was cancelled, the gateway could not be reached within 3 s, the input is not what
the contract carries — the hook exits 0 with no decision, so the program asks in its terminal
as it always did and nothing is lost. A signal, the program's death (no signal reaches a hook
started in a session of its own: `caller.watch_caller`) or an answer given at the terminal
takes the card off the phone. The `Stop` event delivers the project's late answers (v1.4).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.protocol.asker import project_session_key
from app.protocol.stops import PromptKind

from .caller import Stoppable, watch_caller
from .client import AskUserError
from .dialog_watch import ANSWERED_ELSEWHERE
from .guard import Guard

STOP_EVENT = "Stop"
GATEWAY_DOWN_SECONDS = 3  # an unreachable gateway: the program asks itself after this
STOP_RETRY_SECONDS = 1.5  # the Stop hook's claim and each confirmation: a stop never waits long


class CannotCarry(Exception):
    """What the program asked is more than the contract carries: it asks itself."""


@dataclass
class Card:
    """One hook call as a prompt, and how its result becomes the program's decision (None: no
    decision, the program asks in its terminal)."""

    questions: list[dict[str, Any]]
    decide: Callable[[dict[str, Any]], dict[str, Any] | None]
    kind: PromptKind | None = None
    stop: dict[str, Any] | None = None
    question_tool: str | None = None  # a program's own question tool's wider limits (v1.5)
    # Started beside the wait: sets the stop (as ANSWERED_ELSEWHERE) once the program's own
    # dialog was answered at the terminal.
    watch: Callable[[Stoppable], object] | None = None


@dataclass(frozen=True)
class HookProgram:
    """What one program's hooks say and mean."""

    name: str  # as its users call it, in the notes it shows: "Claude Code"
    key: str  # its session prefix: the project's key is `claude-code:~/code/shop`
    card: Callable[[dict[str, Any]], Card | None]  # None: not ours to decide
    project: Callable[[dict[str, Any]], str] = field(
        default=lambda hook: str(hook.get("cwd") or Path.cwd())
    )
    # The program ends a hook it stops waiting for with SIGKILL (Codex): a guard process
    # takes the card back then (guard.py).
    kills_its_hooks: bool = False

    def session_key(self, hook: dict[str, Any]) -> str:
        """The project, so the app groups a project's questions."""
        return project_session_key(self.key, self.project(hook), Path.home())


def note(message: str) -> None:
    """Shown in the program's transcript view (stderr of a hook that exits 0)."""
    print(f"ask-user: {message}", file=sys.stderr)


def stop_decision(late: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Stop hook's output for the project's undelivered late answers; None: stop."""
    lines = []
    for item in late:
        for question in item.get("questions", []):
            values = item.get("answers", {}).get(question.get("id"))
            if values:
                lines.append(f"- {question.get('question')} → {', '.join(values)}")
    if not lines:
        return None
    return {
        "decision": "block",
        "reason": "The user answered after the question had expired (on their phone, Ask "
        "User); go on with your work with these answers:\n" + "\n".join(lines),
    }


def run_stop_hook(
    program: HookProgram, hook: dict[str, Any], gateway_url: str | None, token: str | None
) -> int:
    """The agent is about to stop: a late answer of this project, if any, keeps it going. Each
    late answer blocks one stop at most (it is claimed and confirmed before it is told); a
    stop already continued by a stop hook (`stop_hook_active`) goes through, so the program
    can never loop here."""
    from .client import late_answers

    if hook.get("stop_hook_active") is True:
        return 0
    try:
        late = late_answers(
            program.session_key(hook),
            gateway_url=gateway_url,
            token=token,
            connect_seconds=GATEWAY_DOWN_SECONDS,
            retry_seconds=STOP_RETRY_SECONDS,
        )
    except AskUserError as exc:  # no gateway configured here: nothing to deliver
        note(f"{exc}; no late answers looked for")
        return 0
    output = stop_decision(late)
    if output is not None:
        print(json.dumps(output, ensure_ascii=False))
    return 0


def run_hook(
    program: HookProgram,
    *,
    timeout_seconds: int | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
) -> int:
    """The hook: stdin's JSON in, the program's decision (or none) out; always exit 0 unless a
    signal stopped it."""
    from .cli import _stop_on_signals, _warnings_to_stderr
    from .client import ask_user, settings

    _warnings_to_stderr()  # the programs show a hook's stderr in their transcript view
    asks_itself = f"{program.name} asks itself"
    try:
        hook = json.loads(sys.stdin.read() or "null")
    except ValueError as exc:
        note(f"the hook's input is not JSON ({exc}); {asks_itself}")
        return 0
    if not isinstance(hook, dict):
        return 0
    if hook.get("hook_event_name") == STOP_EVENT:
        return run_stop_hook(program, hook, gateway_url, token)
    try:
        card = program.card(hook)
    except CannotCarry as exc:
        note(f"{exc}; {asks_itself}")
        return 0
    if card is None:
        return 0  # another tool: not ours to decide
    session = hook.get("session_id")
    stop = _stop_on_signals()  # Esc, or the program's hook timeout: cancel the prompt
    watch_caller(stop)  # the program killed: no signal reaches us, its end of stdout closes
    if card.watch is not None:
        card.watch(stop)
    guard = None
    if program.kills_its_hooks:
        try:
            config = settings(gateway_url, token)
        except AskUserError as exc:
            note(f"{exc}; {asks_itself}")
            return 0
        gateway_url, token = config.gateway_url, config.token  # read once, for both
        guard = Guard(gateway_url, token, str(session) if session else None)
        guard.start()  # before asking: killed while the create is on its way, it still acts
    try:
        result = ask_user(
            card.questions,
            session_key=program.session_key(hook),
            # One question at a time per session: two sessions in a project both ask.
            agent_id=f"{program.key}/{str(session)[:8]}" if session else program.key,
            run_id=str(session) if session else None,
            timeout_seconds=timeout_seconds,
            gateway_url=gateway_url,
            token=token,
            abort=stop,
            create_retry_seconds=GATEWAY_DOWN_SECONDS,
            question_tool=card.question_tool,
            kind=card.kind,
            stop=card.stop,
            on_asked=guard.asked if guard else None,
        )
    except AskUserError as exc:
        note(f"{exc}; {asks_itself}")
        return 0
    finally:
        if guard is not None:
            guard.done()
    if stop.is_set():
        if stop.signum == ANSWERED_ELSEWHERE:
            note("answered in the terminal; the card left the phone")
            return 0
        return 128 + stop.signum
    output = card.decide(result)
    if output is None:
        note(f"no answer on the phone ({result.get('reason')}); {asks_itself}")
        return 0
    print(json.dumps(output, ensure_ascii=False))
    return 0

"""Notice that Claude Code's own dialog was answered at the terminal, so the card leaves the phone.

Claude Code shows its permission dialog while the PermissionRequest hook waits, and a person at
the desk may answer it there; Claude Code then neither signals the hook nor closes its pipe
(measured with 2.1.332 in tmux: the card stayed on the phone). What does tell is the session's
transcript (`transcript_path`, JSON lines): the tool call the dialog was about gets its result
there once it ran or was refused. So the hook watches the transcript for a result of a call
with its tool and its input that had none when it started, and then stops, as it does when
Claude Code is killed (caller.py).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from .caller import CHECK_SECONDS, Stoppable

ANSWERED_ELSEWHERE = 0  # the "signal" a stop by this watch carries: no signal, no error


def _blocks(entry: Any, kind: str) -> list[dict[str, Any]]:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content or [] if isinstance(b, dict) and b.get("type") == kind]


class Transcript:
    """The calls of one tool with one input in a transcript, and which of them have a result."""

    def __init__(self, path: Path, tool: str, tool_input: Any) -> None:
        self.path, self.tool, self.tool_input = path, tool, tool_input
        self.offset = 0
        self.calls: set[str] = set()  # ids of calls like ours
        self.done: set[str] = set()  # ids with a result

    def read(self) -> None:
        """Take in what was written since the last read (whole lines only)."""
        try:
            with self.path.open("rb") as file:
                file.seek(self.offset)
                chunk = file.read()
        except OSError:
            return
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        for line in chunk[:end].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            for call in _blocks(entry, "tool_use"):
                if call.get("name") == self.tool and call.get("input") == self.tool_input:
                    self.calls.add(str(call.get("id")))
            for result in _blocks(entry, "tool_result"):
                self.done.add(str(result.get("tool_use_id")))


def watch_dialog(
    stop: Stoppable, transcript_path: Any, tool: str, tool_input: Any
) -> threading.Thread | None:
    """Set `stop` (with ANSWERED_ELSEWHERE) once a call like ours, open when this started or
    made since, has its result: the dialog was answered at the terminal. None: no transcript."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return None
    transcript = Transcript(Path(transcript_path), tool, tool_input)
    transcript.read()
    answered_before = transcript.calls & transcript.done  # earlier calls alike: not ours

    def watch() -> None:
        while not stop.wait(CHECK_SECONDS):
            transcript.read()
            ours = transcript.calls - answered_before
            if ours & transcript.done:
                stop.signum = ANSWERED_ELSEWHERE
                stop.set()
                return

    thread = threading.Thread(target=watch, name="ask-user-dialog-watch", daemon=True)
    thread.start()
    return thread


def plan_of(transcript_path: Any) -> str | None:
    """The plan Claude Code asks to start on: Claude Code 2.1.332 gives its PermissionRequest
    hook an empty ExitPlanMode input and keeps the plan in a file (~/.claude/plans/…). The
    transcript has the model's own ExitPlanMode call, with the plan in it, or else the plan
    file's last write; the newest of either is the plan."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return None
    try:
        lines = Path(transcript_path).read_bytes().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        for call in reversed(_blocks(entry, "tool_use")):
            given = call.get("input") if isinstance(call.get("input"), dict) else {}
            if call.get("name") == "ExitPlanMode" and isinstance(given.get("plan"), str):
                return str(given["plan"])
            path = given.get("file_path")
            if (
                call.get("name") in ("Write", "Edit")
                and isinstance(path, str)
                and "/plans/" in path
            ):
                try:
                    return Path(path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    return None
    return None

"""`ask-user mcp` answers its client's `initialize`, and then its `tools/list`, before it
imports the MCP SDK (#40).

Codex sends its first model request ~1.3 s after it starts and, unless the server is
`required`, without waiting for it; Claude Code in `-p` takes its list of tools once, early,
and keeps a server that has not listed its tools by then out of the whole run; importing the SDK
alone took 0.6-1.8 s here (more on a loaded machine: a CI run lost that race). So the first
lines on stdin are read here (byte by byte: nothing of the next line is taken from the pipe):
an `initialize` is answered at once with what the SDK would answer, and so is a `tools/list`
that follows it (after the client's `initialized` notification) within half a second; tests
hold each to the SDK's own bytes. The lines are then handed to the SDK as if they came first,
and its own answers to them are dropped, so the session's state is the SDK's as always.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import select
import sys
from pathlib import Path
from typing import Any

import anyio

from app import __version__
from app.asking.tool import INSTRUCTIONS, SERVER_NAME, SERVER_TITLE, mcp_tool
from app.protocol.asker import client_slug

LISTING_WAIT_SECONDS = 0.5  # how long the client's `tools/list` is waited for, before the SDK
EARLY_LINES = 4  # at most this many lines are read before the SDK (notifications, then one ask)


def read_first_line(fd: int = 0) -> bytes:
    """The first line on `fd`, and not a byte more; b"" at its end."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return bytes(line)


def _handshake_versions() -> tuple[str, ...]:
    """The protocol versions the SDK negotiates at `initialize`, from its own table, read
    without importing the SDK's package (whose types are most of its import time)."""
    spec = importlib.util.find_spec("mcp_types")
    assert spec is not None and spec.submodule_search_locations, "the MCP SDK is not installed"
    source = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    table: dict[str, Any] = {}
    exec(compile(source.read_text(encoding="utf-8"), str(source), "exec"), table)
    return tuple(table["HANDSHAKE_PROTOCOL_VERSIONS"])


def early_answer(line: bytes) -> tuple[bytes, Any] | None:
    """The answer to `line` if it is an `initialize` request, and its id; else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    if "id" not in message or not isinstance(message.get("params"), dict):
        return None
    versions = _handshake_versions()
    asked = message["params"].get("protocolVersion")
    result = {
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": INSTRUCTIONS,
        "protocolVersion": asked if asked in versions else versions[-1],
        "serverInfo": {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__},
    }
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n", message["id"]


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _client_of(initialize: bytes) -> str | None:
    """The program that sent this `initialize` (its key, as `client_slug` makes it)."""
    message = _message(initialize) or {}
    info = (message.get("params") or {}).get("clientInfo") or {}
    return client_slug(info.get("name") if isinstance(info, dict) else None)


def early_listing(line: bytes, program: str | None = None) -> tuple[bytes, Any] | None:
    """The answer to `line` if it is a `tools/list` request (the first page: the only one),
    and its id; else None. `program`: who asked (the tool's name depends on it)."""
    message = _message(line)
    if message is None or message.get("method") != "tools/list" or "id" not in message:
        return None
    if (message.get("params") or {}).get("cursor") is not None:
        return None
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [mcp_tool(program)]}}
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n", message["id"]


def _comes_within(seconds: float, fd: int = 0) -> bool:
    return bool(select.select([fd], [], [], seconds)[0])


def answer_early(fd: int = 0) -> tuple[list[bytes], set[Any]]:
    """Read the client's first lines and answer its `initialize` and its `tools/list` (written
    to stdout): the lines read, to hand to the SDK, and the ids answered."""
    first = read_first_line(fd)
    lines: list[bytes] = [first]
    answered: set[Any] = set()
    early = early_answer(first)
    if early is None:
        return lines, answered
    os.write(1, early[0])
    answered.add(early[1])
    while len(lines) < EARLY_LINES and _comes_within(LISTING_WAIT_SECONDS, fd):
        line = read_first_line(fd)
        if not line:
            break
        lines.append(line)
        listing = early_listing(line, _client_of(first))
        if listing is not None:
            os.write(1, listing[0])
            answered.add(listing[1])
            break
        message = _message(line)
        if message is None or "id" in message:  # a request of another kind: the SDK's
            break
    return lines, answered


class ReplayedStdin:
    """stdin for the SDK's stdio transport: the lines read early, then the rest."""

    def __init__(self, first: list[bytes]) -> None:
        self._first = [line.decode("utf-8") for line in first if line]
        self._rest = anyio.wrap_file(io.TextIOWrapper(os.fdopen(0, "rb", closefd=False), "utf-8"))

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        for line in self._first:
            yield line
        async for line in self._rest:
            yield line


class StdoutWithoutSecondAnswer:
    """stdout for the SDK's stdio transport, less its answers to the requests answered early
    (the client has had them)."""

    def __init__(self, answered_ids: set[Any]) -> None:
        self._answered_ids = set(answered_ids)
        self._out = anyio.wrap_file(io.TextIOWrapper(sys.stdout.buffer, "utf-8"))

    async def write(self, text: str) -> int:
        if self._answered_ids:
            message = _message(text.encode())
            if (
                message is not None
                and message.get("id") in self._answered_ids
                and ("result" in message or "error" in message)
            ):
                self._answered_ids.discard(message["id"])
                return len(text)
        return await self._out.write(text)

    async def flush(self) -> None:
        await self._out.flush()

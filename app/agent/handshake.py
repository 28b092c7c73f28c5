"""`ask-user mcp` answers its client's `initialize` before it imports the MCP SDK (#40).

Codex sends its first model request ~1.3 s after it starts and, unless the server is
`required`, without waiting for it; importing the SDK alone took 0.6-1.8 s here. So the first
line on stdin is read here (byte by byte: nothing of the next line is taken from the pipe),
and an `initialize` is answered at once with what the SDK would answer (a test holds the two
to the same bytes). The line is then handed to the SDK as if it came first, and the SDK's own
answer to it is dropped, so the session's state is the SDK's as always.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from app import __version__

from .tool import INSTRUCTIONS, SERVER_NAME, SERVER_TITLE


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


class ReplayedStdin:
    """stdin for the SDK's stdio transport: the line read early, then the rest."""

    def __init__(self, first: bytes) -> None:
        self._first = first.decode("utf-8")
        self._rest = anyio.wrap_file(io.TextIOWrapper(os.fdopen(0, "rb", closefd=False), "utf-8"))

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        if self._first:
            yield self._first
        async for line in self._rest:
            yield line


class StdoutWithoutSecondAnswer:
    """stdout for the SDK's stdio transport, less its answer to the `initialize` answered
    early (the client has had one)."""

    def __init__(self, answered_id: Any) -> None:
        self._answered_id = answered_id
        self._pending = True
        self._out = anyio.wrap_file(io.TextIOWrapper(sys.stdout.buffer, "utf-8"))

    async def write(self, text: str) -> int:
        if self._pending:
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if (
                isinstance(message, dict)
                and message.get("id") == self._answered_id
                and ("result" in message or "error" in message)
            ):
                self._pending = False
                return len(text)
        return await self._out.write(text)

    async def flush(self) -> None:
        await self._out.flush()

"""What `app/http_deadlines.py` and `app/gateway/http/connections.py` borrow from uvicorn's
private HTTP protocol, held still.

The layer subclasses `HttpToolsProtocol` (it was measured 1.7–2.2× cheaper per subscribed
device than stock uvicorn, #23), so an upgrade of uvicorn can break it silently. This test
fails naming what moved: a method we override or rely on (its source, hashed), an attribute
the layer reads, the scope `on_message_begin` builds, `STATUS_LINE`, the flow control. To
upgrade uvicorn: bump the pin in pyproject.toml, run this, read uvicorn's diff of each method
it names against connections.py, then record the new hashes here.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect

import pytest
import uvicorn
from uvicorn.protocols.http import flow_control, httptools_impl
from uvicorn.server import ServerState

from app.gateway.http.connections import GuardedHttpProtocol

TESTED_UVICORN = "0.55."

# The methods connections.py overrides (each calls uvicorn's) or whose effects it relies on
# (on_url and on_header fill the url and headers it reads; on_response_complete resumes
# reading and starts the next pipelined request), with the first 16 hex digits of the SHA-256
# of their source in the tested uvicorn.
BORROWED_METHODS = {
    "connection_made": "6efb565ff3d36b91",
    "data_received": "010a7ae59a5d3b1a",
    "shutdown": "d7351fa33f00d430",
    "on_message_begin": "96d377fdc7c2baef",
    "on_url": "37be44e962b04ca8",
    "on_header": "1e86ebb6cea0458c",
    "on_headers_complete": "1ea8589acfad92d8",
    "on_body": "dba9c32aeba35b6a",
    "on_message_complete": "1fbad42dc31fc01f",
    "connection_lost": "c91a4c9bf2e29c55",
    "pause_writing": "17a8fd215d96a13c",
    "resume_writing": "7844bbaa8cceb1ef",
    "_unsupported_upgrade_warning": "55bbd2762b189d9a",
    "on_response_complete": "64e254f28e389e76",
}
# Attributes of a connection the layer reads or sets, once connection_made has run.
CONNECTION_ATTRIBUTES = (
    "parser", "cycle", "connections", "tasks", "limit_concurrency", "app_state", "server_state",
    "url", "headers", "scope", "flow", "pipeline", "loop", "transport", "timeout_keep_alive",
    "expect_100_continue", "root_path",
)  # fmt: skip
# The scope keys uvicorn's on_message_begin makes (the layer's per-connection template).
SCOPE_KEYS = {
    "type", "asgi", "http_version", "server", "client", "scheme", "root_path", "headers", "state",
}  # fmt: skip


def _source_hash(function: object) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]  # type: ignore[arg-type]


def test_the_uvicorn_installed_is_the_minor_tested():
    assert uvicorn.__version__.startswith(TESTED_UVICORN), (
        f"uvicorn {uvicorn.__version__} is installed; connections.py was checked against "
        f"{TESTED_UVICORN}x (see this module's docstring)"
    )


@pytest.mark.parametrize("name", sorted(BORROWED_METHODS))
def test_each_borrowed_method_is_as_it_was_read(name):
    method = getattr(httptools_impl.HttpToolsProtocol, name, None)
    assert method is not None, f"uvicorn's HttpToolsProtocol no longer has {name}()"
    assert _source_hash(method) == BORROWED_METHODS[name], (
        f"uvicorn's HttpToolsProtocol.{name}() changed: read its diff against "
        f"connections.py, then record {_source_hash(method)!r} here"
    )
    ours = getattr(GuardedHttpProtocol, name)
    theirs = inspect.signature(method)
    assert inspect.signature(ours).parameters.keys() == theirs.parameters.keys(), name


async def _app(scope, receive, send) -> None:
    """An ASGI app for uvicorn's Config: never called here."""


class _Transport(asyncio.Transport):
    """The least a protocol needs at connection_made (an asyncio transport is not ours)."""

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8765)}.get(name, default)

    def is_closing(self) -> bool:
        return False


def test_a_connection_has_what_the_layer_reads_and_the_scope_it_copies():
    async def made() -> GuardedHttpProtocol:
        config = uvicorn.Config(app=_app, http=GuardedHttpProtocol, ws="none")
        config.load()
        protocol = GuardedHttpProtocol(config=config, server_state=ServerState(), app_state={})
        protocol.connection_made(_Transport())
        return protocol

    protocol = asyncio.run(made())
    missing = [name for name in CONNECTION_ATTRIBUTES if not hasattr(protocol, name)]
    assert not missing, f"uvicorn's connection no longer sets {missing}"
    assert set(protocol._scope_template) | {"headers", "state"} == SCOPE_KEYS
    assert isinstance(protocol.flow, flow_control.FlowControl)
    for name in ("pause_reading", "resume_reading", "write_paused", "read_paused"):
        assert hasattr(protocol.flow, name), f"uvicorn's FlowControl no longer has {name}"
    for name in ("response_complete", "response_started"):
        assert name in inspect.getsource(httptools_impl.RequestResponseCycle.__init__), name


def test_status_lines_are_the_wire_bytes():
    assert httptools_impl.STATUS_LINE[200] == b"HTTP/1.1 200 OK\r\n"
    assert httptools_impl.STATUS_LINE[410] == b"HTTP/1.1 410 Gone\r\n"

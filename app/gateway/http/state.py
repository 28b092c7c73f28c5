"""What the handlers reach through `call.state`: made once by the app's assembly (api.py), the
gateway's core attached at start-up, nothing else kept there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.auth import Authenticator
from ..core.guesses import Guesses
from ..core.service import Gateway


class Mounted(Protocol):
    """An ASGI app of another package, served whole once authenticated (remote_mcp.py)."""

    async def serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None: ...


@dataclass
class AppState:
    auth: Authenticator
    public_url: str | None  # the address phones reach, put in pairing links
    schema: bytes = b""  # /openapi.json, made from the table once
    link_guesses: Guesses = field(default_factory=lambda: Guesses("answer links"))
    gateway: Gateway | None = None  # set at start-up, None again after shut-down
    remote_mcp: Mounted | None = None  # /mcp

    def started(self) -> Gateway:
        """The core, once started: the router answers nothing before (it is attached first)."""
        assert self.gateway is not None, "the gateway has not started"
        return self.gateway

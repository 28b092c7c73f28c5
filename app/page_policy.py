"""The web app's Content-Security-Policy: its page loads nothing from anywhere but its own
server (#53). Flet's client still asks a CDN for a Rive animation runtime it never uses here
(`cdn.jsdelivr.net/…/rive_native.js`); the policy makes the browser refuse that before any
request leaves, and says to anyone who reads the headers what the page may load.

The page's own inline scripts (Flet writes its settings into index.html when it starts) are
allowed by their hashes, computed from the page as served: nothing else inline runs.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)
# What the Flutter web client needs from its own origin: WebAssembly (skwasm, CanvasKit),
# workers from blob: URLs, the WebSocket back to this server, data: images and fonts.
_POLICY = (
    "default-src 'self'; script-src {scripts}; worker-src 'self' blob:; connect-src 'self'; "
    "img-src 'self' data: blob:; font-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'self'"
)


def policy_for(page: bytes) -> str:
    """The policy for one HTML page: its inline scripts allowed by hash, nothing else."""
    scripts = ["'self'", "'wasm-unsafe-eval'"] + [
        f"'sha256-{base64.b64encode(hashlib.sha256(body).digest()).decode()}'"
        for body in _INLINE_SCRIPT.findall(page)
    ]
    return _POLICY.format(scripts=" ".join(scripts))


class PagePolicy:
    """ASGI middleware: every HTML page it serves carries the policy for what it holds."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        body = b""

        async def send_with_policy(message: Message) -> None:
            nonlocal held, body
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers") or []).get(b"content-type", b"")
                if not kind.startswith(b"text/html"):
                    await send(message)
                    return
                held = message  # an HTML page: its policy depends on its body
                return
            if held is None:
                await send(message)
                return
            body += message.get("body", b"")
            if message.get("more_body"):
                return
            kept = [(k, v) for k, v in held.get("headers") or [] if k != b"content-length"]
            await send(
                {
                    **held,
                    "headers": [
                        *kept,
                        (b"content-length", str(len(body)).encode()),
                        (b"content-security-policy", policy_for(body).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, send_with_policy)

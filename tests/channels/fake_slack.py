"""A local stand-in for Slack's Web API (we cannot reach Slack here): real HTTP, recording the
messages the adapter posts and updates, and the ephemeral answers sent to a press's
response_url."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .harness import LocalServer


class FakeSlack(LocalServer):
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[tuple[str, dict]] = []
        self.messages: dict[tuple[str, str], dict] = {}  # (channel, ts) → latest
        self.ephemeral: list[dict] = []
        self._ts = 1_700_000_000
        app = Starlette(
            routes=[
                Route("/api/{method}", self._api, methods=["POST"]),
                Route("/respond/{press}", self._respond, methods=["POST"]),
            ]
        )
        super().__init__(app)

    def posted(self) -> list[dict]:
        return [p for m, p in self.calls if m == "chat.postMessage"]

    def buttons(self, channel: str, ts: str) -> dict[str, str]:
        blocks = self.messages[(channel, ts)]["blocks"]
        return {
            e["text"]["text"]: e["value"]
            for b in blocks
            if b["type"] == "actions"
            for e in b["elements"]
        }

    async def _api(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"ok": False, "error": "invalid_auth"})
        method, payload = request.path_params["method"], await request.json()
        self.calls.append((method, payload))
        if method == "chat.postMessage":
            self._ts += 1
            ts = f"{self._ts}.000100"
            self.messages[(payload["channel"], ts)] = payload
            return JSONResponse({"ok": True, "channel": payload["channel"], "ts": ts})
        if method == "chat.update":
            self.messages[(payload["channel"], payload["ts"])] = payload
            return JSONResponse({"ok": True, "channel": payload["channel"], "ts": payload["ts"]})
        return JSONResponse({"ok": False, "error": "unknown_method"})

    async def _respond(self, request: Request) -> JSONResponse:
        self.ephemeral.append(await request.json())
        return JSONResponse({"ok": True})

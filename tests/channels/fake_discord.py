"""A local stand-in for Discord's REST API (we cannot reach Discord here): real HTTP, recording
the messages the adapter creates and edits."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .harness import LocalServer


class FakeDiscord(LocalServer):
    def __init__(self, token: str) -> None:
        self.token = token
        self.messages: dict[tuple[str, str], dict] = {}  # (channel, id) → latest
        self.created: list[dict] = []
        self._id = 1_000_000
        app = Starlette(
            routes=[
                Route("/channels/{channel}/messages", self._create, methods=["POST"]),
                Route("/channels/{channel}/messages/{message}", self._edit, methods=["PATCH"]),
            ]
        )
        super().__init__(app)

    def buttons(self, channel: str, message: str) -> dict[str, str]:
        rows = self.messages[(channel, message)].get("components") or []
        return {b["label"]: b["custom_id"] for row in rows for b in row["components"]}

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bot {self.token}"

    async def _create(self, request: Request) -> JSONResponse:
        if not self._authorized(request):
            return JSONResponse({"message": "401: Unauthorized"}, 401)
        payload = await request.json()
        self._id += 1
        channel, message = request.path_params["channel"], str(self._id)
        self.messages[(channel, message)] = payload
        self.created.append({"channel": channel, **payload})
        return JSONResponse({"id": message, "channel_id": channel, **payload})

    async def _edit(self, request: Request) -> JSONResponse:
        if not self._authorized(request):
            return JSONResponse({"message": "401: Unauthorized"}, 401)
        key = (request.path_params["channel"], request.path_params["message"])
        if key not in self.messages:
            return JSONResponse({"message": "Unknown Message"}, 404)
        self.messages[key] = await request.json()
        return JSONResponse({"id": key[1], "channel_id": key[0], **self.messages[key]})

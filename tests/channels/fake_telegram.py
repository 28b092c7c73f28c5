"""A local stand-in for Telegram's Bot API (we cannot reach Telegram here): real HTTP at
`/bot{token}/{method}`, recording what the bot sends and handing out the updates a test queues,
through a long-polled `getUpdates` as Telegram does."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .harness import LocalServer

BOT = {"id": 777, "is_bot": True, "first_name": "Ask User", "username": "ask_user_bot"}


class FakeTelegram(LocalServer):
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[tuple[str, dict]] = []
        self.messages: dict[tuple[int, int], dict] = {}  # (chat, message id) → latest state
        self._updates: list[dict] = []
        self._next_message = 100
        self._next_update = 1
        # Seconds between a message being there (and tappable) and sendMessage answering:
        # Telegram shows a message before the bot hears back, under load by much.
        self.send_answer_delay = 0.0
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/bot{token}/{method}", self._call, methods=["GET", "POST"])])
        super().__init__(app)

    # ---- what a test does ---------------------------------------------------------------

    def press(self, chat_id: int, message_id: int, data: str, user_id: int | None = None) -> None:
        """Someone taps an inline button of a message."""
        self._queue(
            {
                "callback_query": {
                    "id": f"cb{self._next_update}",
                    "from": {"id": user_id or chat_id, "is_bot": False, "first_name": "P"},
                    "chat_instance": "ci",
                    "data": data,
                    "message": self._message(chat_id, message_id),
                }
            }
        )

    def reply(self, chat_id: int, message_id: int, text: str) -> None:
        """Someone replies to a message with text."""
        with self._lock:
            number = self._next_message
            self._next_message += 1
        self._queue(
            {
                "message": {
                    **self._message(chat_id, number),
                    "text": text,
                    "from": {"id": chat_id, "is_bot": False, "first_name": "P"},
                    "reply_to_message": self._message(chat_id, message_id),
                }
            }
        )

    def sent(self, method: str) -> list[dict]:
        return [params for name, params in self.calls if name == method]

    def buttons(self, chat_id: int, message_id: int) -> list[tuple[str, str]]:
        markup = self.messages[(chat_id, message_id)].get("reply_markup") or {}
        return [
            (b["text"], b["callback_data"])
            for row in markup.get("inline_keyboard", [])
            for b in row
        ]

    # ---- the Bot API --------------------------------------------------------------------

    def _queue(self, update: dict) -> None:
        with self._lock:
            update["update_id"] = self._next_update
            self._next_update += 1
            self._updates.append(update)

    def _message(self, chat_id: int, message_id: int) -> dict:
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private"},
            **(
                {"text": self.messages[(chat_id, message_id)]["text"]}
                if (chat_id, message_id) in self.messages
                else {}
            ),
        }

    async def _call(self, request: Request) -> JSONResponse:
        if request.path_params["token"] != self.token:
            return JSONResponse(
                {"ok": False, "error_code": 401, "description": "Unauthorized"}, 401
            )
        method = request.path_params["method"]
        params = await _params(request)
        self.calls.append((method, params))
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            return JSONResponse({"ok": False, "error_code": 404, "description": "Not Found"}, 404)
        result = handler(params)
        if asyncio.iscoroutine(result):
            result = await result
        return JSONResponse({"ok": True, "result": result})

    def _getMe(self, params: dict) -> dict:
        return BOT

    async def _getUpdates(self, params: dict) -> list[dict]:
        offset = int(params.get("offset") or 0)
        deadline = time.monotonic() + min(float(params.get("timeout") or 0), 2.0)
        while True:
            with self._lock:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
                ready = list(self._updates)
            if ready or time.monotonic() >= deadline:
                return ready
            await asyncio.sleep(0.02)

    async def _sendMessage(self, params: dict) -> dict:
        chat = int(params["chat_id"])
        with self._lock:
            number = self._next_message
            self._next_message += 1
        self.messages[(chat, number)] = {
            "text": params["text"],
            "reply_markup": params.get("reply_markup"),
        }
        await asyncio.sleep(self.send_answer_delay)
        return {**self._message(chat, number), "text": params["text"]}

    def _editMessageText(self, params: dict) -> dict:
        chat, number = int(params["chat_id"]), int(params["message_id"])
        self.messages[(chat, number)] = {
            "text": params["text"],
            "reply_markup": params.get("reply_markup"),
        }
        return {**self._message(chat, number), "text": params["text"]}

    def _answerCallbackQuery(self, params: dict) -> bool:
        return True


async def _params(request: Request) -> dict[str, Any]:
    """python-telegram-bot posts form fields whose objects are JSON text."""
    if request.headers.get("content-type", "").startswith("application/json"):
        return await request.json()
    form = await request.form()
    params: dict[str, Any] = {}
    for key, value in form.items():
        try:
            params[key] = (
                json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value
            )
        except ValueError:
            params[key] = value
    return params

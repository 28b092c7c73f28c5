"""`python -m app discord`: prompts as Discord messages with buttons (message components).

Messages go out through Discord's REST API (`--api-url` for a stand-in); presses come to this
process's interactions endpoint (`POST /discord/interactions`, the application's "Interactions
Endpoint URL"), each verified with the application's Ed25519 public key before anything is
read. "Other" is a button that opens a text box (a modal): Discord sends no plain replies to an
interactions endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx

from .adapter import NOT_ALLOWED, ChannelAdapter
from .render import Button, callback_data, parse_callback
from .runtime import (
    Joining,
    JsonEndpoint,
    add_arguments,
    run_command,
    serve_callbacks,
)
from .signing import RecentSignatures, fresh

log = logging.getLogger("ask_user.channels.discord")

TOKEN_ENV = "ASK_USER_DISCORD_TOKEN"
PUBLIC_KEY_ENV = "ASK_USER_DISCORD_PUBLIC_KEY"
CHANNELS_ENV = "ASK_USER_DISCORD_CHANNEL_ID"
DEFAULT_API_URL = "https://discord.com/api/v10"
PING, COMPONENT, MODAL_SUBMIT = 1, 3, 5
PONG, REPLY, ACK_UPDATE, MODAL = 1, 4, 6, 9
EPHEMERAL = 64
BUTTONS_PER_ROW = 5


_SIGNATURE = re.compile(r"[0-9a-f]{128}")  # Discord's own spelling: 64 bytes, lower-case hex


def verified(public_key_hex: str, headers: dict[str, Any], body: bytes) -> bool:
    """Discord's request signing: Ed25519 over timestamp + body with the application's key.
    Only the signature's canonical spelling is taken: replays are remembered by its text, and
    `bytes.fromhex` would take the same bytes upper-cased or spaced (#39)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    signature = headers.get("x-signature-ed25519", "")
    timestamp = headers.get("x-signature-timestamp", "")
    if not fresh(timestamp):  # a year-old or empty timestamp signed once is not a press now
        return False
    if not _SIGNATURE.fullmatch(signature):
        return False
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
        key.verify(bytes.fromhex(signature), timestamp.encode() + body)
    except (InvalidSignature, ValueError):
        return False
    return True


def components(rows: list[list[Button]] | None) -> list[dict[str, Any]]:
    """Buttons five to a row (Discord allows five rows of five); "Other…" after the options."""
    buttons = [b for row in rows or [] for b in row]
    if not buttons:
        return []
    key = parse_callback(buttons[0].data)
    if key is not None:
        at = len([b for b in buttons if (parse_callback(b.data) or (0, "", 0))[1] in ("p", "t")])
        buttons.insert(at, Button("Other…", callback_data(key[0], "o")))
    rendered = [
        {
            "type": 2,
            "style": 4 if b.label == "Dismiss" else 1 if b.label in ("Done", "Submit") else 2,
            "label": b.label[:80],
            "custom_id": b.data,
        }
        for b in buttons
    ]
    return [
        {"type": 1, "components": rendered[i : i + BUTTONS_PER_ROW]}
        for i in range(0, len(rendered), BUTTONS_PER_ROW)
    ]


class DiscordApi:
    """The adapter's four needs: messages by REST; an alert becomes the interaction's own
    response (shown to the presser only), so it is held here until the endpoint answers."""

    def __init__(self, http: httpx.AsyncClient, api_url: str) -> None:
        self.http = http
        self.api_url = api_url.rstrip("/")
        self.alerts: dict[str, str] = {}

    async def send(self, chat_id: str, text: str, rows: list[list[Button]]) -> str:
        response = await self.http.post(
            f"{self.api_url}/channels/{chat_id}/messages",
            json={"content": text, "components": components(rows)},
        )
        response.raise_for_status()
        return str(response.json()["id"])

    async def edit(
        self, chat_id: str, message_id: str, text: str, rows: list[list[Button]] | None
    ) -> None:
        response = await self.http.patch(
            f"{self.api_url}/channels/{chat_id}/messages/{message_id}",
            json={"content": text, "components": components(rows)},
        )
        response.raise_for_status()

    async def alert(self, press_id: str, text: str) -> None:
        self.alerts[press_id] = text

    async def say(self, chat_id: str, text: str, reply_to: str | None = None) -> None:
        payload: dict[str, Any] = {"content": text}
        if reply_to:
            payload["message_reference"] = {"message_id": reply_to}
        response = await self.http.post(f"{self.api_url}/channels/{chat_id}/messages", json=payload)
        response.raise_for_status()


class DiscordEndpoint(JsonEndpoint):
    """What Discord calls with interactions."""

    signature_headers = ("x-signature-ed25519", "x-signature-timestamp")

    def __init__(self, adapter: ChannelAdapter, api: DiscordApi, public_key: str) -> None:
        self.adapter = adapter
        self.api = api
        self.public_key = public_key
        self.seen = RecentSignatures()

    async def handle(
        self, method: str, path: str, headers: dict[str, Any], body: bytes
    ) -> tuple[int, Any]:
        if method != "POST" or path != "/discord/interactions":
            return 404, {"error": "not_found"}
        if not verified(self.public_key, headers, body):
            return 401, {"error": "invalid request signature"}
        if not self.seen.first_time(headers["x-signature-ed25519"]):
            return 401, {"error": "replayed request"}
        interaction = json.loads(body)
        kind = interaction.get("type")
        if kind == PING:
            return 200, {"type": PONG}
        press_id = str(interaction.get("id", ""))
        channel = str(interaction.get("channel_id", ""))
        custom_id = (interaction.get("data") or {}).get("custom_id", "")
        parsed = parse_callback(custom_id)
        if kind == COMPONENT and parsed and parsed[1] == "o":
            if channel not in self.adapter.chats:
                return 200, _ephemeral(NOT_ALLOWED)
            return 200, _other_box(parsed[0])
        if kind == MODAL_SUBMIT and parsed and parsed[1] == "m":
            message = self.adapter.messages.by_key(parsed[0])
            text = _modal_text(interaction)
            if message is not None and message.message_id is not None and text:
                await self.adapter.replied(channel, message.message_id, text)
            return 200, {"type": ACK_UPDATE}
        if kind == COMPONENT:
            await self.adapter.pressed(press_id, channel, custom_id)
            text = self.api.alerts.pop(press_id, "")
            return 200, _ephemeral(text) if text and text != "Sent." else {"type": ACK_UPDATE}
        return 400, {"error": "unsupported interaction"}


def _ephemeral(text: str) -> dict[str, Any]:
    return {"type": REPLY, "data": {"content": text, "flags": EPHEMERAL}}


def _other_box(key: int) -> dict[str, Any]:
    return {
        "type": MODAL,
        "data": {
            "custom_id": callback_data(key, "m"),
            "title": "Your own answer",
            "components": [
                {
                    "type": 1,
                    "components": [
                        {
                            "type": 4,
                            "custom_id": "text",
                            "label": "Answer (several questions: one 'key: value' line each)",
                            "style": 2,
                            "required": True,
                            "max_length": 4000,
                        }
                    ],
                }
            ],
        },
    }


def _modal_text(interaction: dict[str, Any]) -> str:
    for row in (interaction.get("data") or {}).get("components", []):
        for field in row.get("components", []):
            if field.get("custom_id") == "text":
                return str(field.get("value", ""))
    return ""


async def serve(
    *,
    bot_token: str,
    public_key: str,
    channels: list[str],
    data_dir: Path,
    joining: Joining,
    host: str = "127.0.0.1",
    port: int = 3001,
    api_url: str = DEFAULT_API_URL,
    stop: asyncio.Event | None = None,
    started: Any = None,
) -> None:
    await serve_callbacks(
        "Discord",
        data_dir,
        joining,
        channels,
        authorization=f"Bot {bot_token}",
        make_api=lambda http: DiscordApi(http, api_url),
        make_endpoint=lambda adapter, api: DiscordEndpoint(adapter, api, public_key),
        host=host,
        port=port,
        stop=stop,
        started=started,
    )


def build_parser(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser, DEFAULT_API_URL, port=3001)


def run(args: argparse.Namespace) -> int:
    return run_command(
        "Discord",
        (TOKEN_ENV, PUBLIC_KEY_ENV, CHANNELS_ENV),
        args,
        lambda env: (
            f"Discord: answering from {', '.join(env.listed(CHANNELS_ENV))}; "
            f"interactions endpoint http://{args.host}:{args.port}/discord/interactions"
        ),
        lambda env, joining, data_dir: serve(
            bot_token=env.own[TOKEN_ENV],
            public_key=env.own[PUBLIC_KEY_ENV],
            channels=env.listed(CHANNELS_ENV),
            data_dir=data_dir,
            joining=joining,
            host=args.host,
            port=args.port,
            api_url=args.api_url,
        ),
    )

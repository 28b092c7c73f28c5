"""`python -m app slack`: prompts as Slack messages with Block Kit buttons.

Messages go out through the Web API (`chat.postMessage`, `chat.update`; `--api-url` for a
stand-in); presses come to this process's interactivity endpoint (`POST /slack/interactions`),
replies in a message's thread through the Events API (`POST /slack/events`). Every request is
verified with the app's signing secret (`slack_sdk`'s SignatureVerifier: HMAC-SHA256 of
`v0:timestamp:body`, at most five minutes old) before anything is read from it, and acted on
once: a signature seen before is a replay.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx

from .adapter import ChannelAdapter
from .render import Button
from .runtime import (
    Joining,
    JsonEndpoint,
    add_arguments,
    run_command,
    serve_callbacks,
)
from .signing import RecentSignatures, fresh

log = logging.getLogger("ask_user.channels.slack")

TOKEN_ENV = "ASK_USER_SLACK_TOKEN"
SECRET_ENV = "ASK_USER_SLACK_SIGNING_SECRET"
CHANNELS_ENV = "ASK_USER_SLACK_CHANNEL_ID"
DEFAULT_API_URL = "https://slack.com/api"


def verified(verifier: Any, headers: Any, body: bytes, now: float | None = None) -> bool:
    """Slack's request signing, checked by `slack_sdk`'s SignatureVerifier, after our own
    check that the timestamp is plain digits and fresh (the SDK's int() fails on "²")."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    if not fresh(timestamp, now):
        return False
    return bool(verifier.is_valid(body, timestamp, headers.get("x-slack-signature", "")))


def blocks(text: str, rows: list[list[Button]] | None) -> list[dict[str, Any]]:
    """The message as Block Kit: its text, then one actions block of buttons (a value each)."""
    out: list[dict[str, Any]] = [{"type": "section", "text": {"type": "plain_text", "text": text}}]
    buttons = [b for row in rows or [] for b in row]
    if buttons:
        out.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": b.label[:75]},
                        "action_id": f"ask_user_{n}",
                        "value": b.data,
                    }
                    for n, b in enumerate(buttons)
                ],
            }
        )
    return out


class SlackApi:
    """The adapter's four needs in Web API calls; a press's alert goes back through its
    `response_url`, visible to the presser only."""

    def __init__(self, http: httpx.AsyncClient, api_url: str) -> None:
        self.http = http
        self.api_url = api_url.rstrip("/")

    async def _call(self, method: str, payload: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.post(f"{self.api_url}/{method}", json=payload)
        data: dict[str, Any] = response.json()
        if not data.get("ok"):
            raise RuntimeError(f"Slack {method}: {data.get('error', response.status_code)}")
        return data

    async def send(self, chat_id: str, text: str, rows: list[list[Button]]) -> str:
        data = await self._call(
            "chat.postMessage", {"channel": chat_id, "text": text, "blocks": blocks(text, rows)}
        )
        return str(data["ts"])

    async def edit(
        self, chat_id: str, message_id: str, text: str, rows: list[list[Button]] | None
    ) -> None:
        await self._call(
            "chat.update",
            {"channel": chat_id, "ts": message_id, "text": text, "blocks": blocks(text, rows)},
        )

    async def alert(self, press_id: str, text: str) -> None:
        if text and press_id.startswith(("http://", "https://")):
            await self.http.post(
                press_id,
                json={"response_type": "ephemeral", "replace_original": False, "text": text},
            )

    async def say(self, chat_id: str, text: str, reply_to: str | None = None) -> None:
        payload = {"channel": chat_id, "text": text}
        if reply_to:
            payload["thread_ts"] = reply_to
        await self._call("chat.postMessage", payload)


class SlackEndpoints(JsonEndpoint):
    """What Slack calls: interactions (button presses) and events (thread replies)."""

    signature_headers = ("x-slack-request-timestamp", "x-slack-signature")

    def __init__(self, adapter: ChannelAdapter, secret: str) -> None:
        from slack_sdk.signature import SignatureVerifier

        self.adapter = adapter
        self.verifier = SignatureVerifier(secret)
        self.seen = RecentSignatures()

    async def handle(
        self, method: str, path: str, headers: dict[str, Any], body: bytes
    ) -> tuple[int, Any]:
        if method != "POST" or path not in ("/slack/interactions", "/slack/events"):
            return 404, {"error": "not_found"}
        if not verified(self.verifier, headers, body):
            return 401, {"error": "invalid_signature"}
        if not self.seen.first_time(headers["x-slack-signature"]):
            return 200, {}  # a delivery seen already (a replay, or Slack's retry): done once
        if path == "/slack/events":
            event = json.loads(body or b"{}")
            if event.get("type") == "url_verification":
                return 200, {"challenge": event.get("challenge", "")}
            inner = event.get("event") or {}
            if (
                inner.get("type") == "message"
                and inner.get("thread_ts")
                and not inner.get("bot_id")
            ):
                await self.adapter.replied(
                    inner.get("channel", ""), inner["thread_ts"], inner.get("text", "")
                )
            return 200, {}
        payload = json.loads(parse_qs(body.decode()).get("payload", ["{}"])[0])
        if payload.get("type") == "block_actions":
            channel = (payload.get("channel") or {}).get("id", "")
            for action in payload.get("actions", []):
                await self.adapter.pressed(
                    payload.get("response_url", ""), channel, action.get("value", "")
                )
        return 200, {}


async def serve(
    *,
    bot_token: str,
    signing_secret: str,
    channels: list[str],
    data_dir: Path,
    joining: Joining,
    host: str = "127.0.0.1",
    port: int = 3000,
    api_url: str = DEFAULT_API_URL,
    stop: asyncio.Event | None = None,
    started: Any = None,
) -> None:
    await serve_callbacks(
        "Slack",
        data_dir,
        joining,
        channels,
        authorization=f"Bearer {bot_token}",
        make_api=lambda http: SlackApi(http, api_url),
        make_endpoint=lambda adapter, _api: SlackEndpoints(adapter, signing_secret),
        host=host,
        port=port,
        stop=stop,
        started=started,
    )


def build_parser(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser, DEFAULT_API_URL, port=3000)


def run(args: argparse.Namespace) -> int:
    return run_command(
        "Slack",
        (TOKEN_ENV, SECRET_ENV, CHANNELS_ENV),
        args,
        lambda env: (
            f"Slack: answering from {', '.join(env.listed(CHANNELS_ENV))}; request "
            f"URLs http://{args.host}:{args.port}/slack/interactions and /slack/events"
        ),
        lambda env, joining, data_dir: serve(
            bot_token=env.own[TOKEN_ENV],
            signing_secret=env.own[SECRET_ENV],
            channels=env.listed(CHANNELS_ENV),
            data_dir=data_dir,
            joining=joining,
            host=args.host,
            port=args.port,
            api_url=args.api_url,
        ),
    )

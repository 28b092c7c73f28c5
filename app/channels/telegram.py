"""`python -m app telegram`: prompts as Telegram messages with inline buttons.

The Bot API through python-telegram-bot's `Bot` (requests go to `{api_url}/bot{token}/{method}`,
so a self-hosted Bot API server, or the tests' local fake, works the same); updates by long
polling `getUpdates`, the offset kept in the message map so a restart takes up where it left.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from .adapter import ChannelAdapter
from .render import Button
from .runtime import Joining, add_arguments, joined_device, run_command, running

log = logging.getLogger("ask_user.channels.telegram")

TOKEN_ENV = "ASK_USER_TELEGRAM_TOKEN"
CHATS_ENV = "ASK_USER_TELEGRAM_CHAT_ID"
DEFAULT_API_URL = "https://api.telegram.org"
POLL_SECONDS = 25


class TelegramApi:
    """The four things the adapter asks of a chat, in Bot API calls."""

    def __init__(self, bot: Any) -> None:  # telegram.Bot (imported only when used)
        self.bot = bot

    @staticmethod
    def _markup(rows: list[list[Button]] | None) -> Any:
        from telegram import InlineKeyboardButton, InlineKeyboardMarkup

        if not rows:
            return None
        return InlineKeyboardMarkup(
            [[InlineKeyboardButton(b.label, callback_data=b.data) for b in row] for row in rows]
        )

    async def send(self, chat_id: str, text: str, rows: list[list[Button]]) -> str:
        message = await self.bot.send_message(int(chat_id), text, reply_markup=self._markup(rows))
        return str(message.message_id)

    async def edit(
        self, chat_id: str, message_id: str, text: str, rows: list[list[Button]] | None
    ) -> None:
        from telegram.error import BadRequest

        try:
            await self.bot.edit_message_text(
                text,
                chat_id=int(chat_id),
                message_id=int(message_id),
                reply_markup=self._markup(rows),
            )
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise

    async def alert(self, press_id: str, text: str) -> None:
        await self.bot.answer_callback_query(press_id, text=text or None)

    async def say(self, chat_id: str, text: str, reply_to: str | None = None) -> None:
        from telegram import ReplyParameters

        reply = ReplyParameters(message_id=int(reply_to)) if reply_to else None
        await self.bot.send_message(int(chat_id), text, reply_parameters=reply)


async def handle_update(adapter: ChannelAdapter, update: Any) -> None:  # telegram.Update
    """A button press or a reply to one of our messages; everything else is ignored."""
    query = update.callback_query
    if query is not None:
        chat = query.message.chat.id if query.message is not None else None
        await adapter.pressed(query.id, str(chat), query.data or "")
        return
    message = update.message
    if message is not None and message.text and message.reply_to_message is not None:
        await adapter.replied(
            str(message.chat.id), str(message.reply_to_message.message_id), message.text
        )


async def serve(
    *,
    bot_token: str,
    chats: list[str],
    data_dir: Path,
    joining: Joining,
    api_url: str = DEFAULT_API_URL,
    poll_seconds: int = POLL_SECONDS,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until `stop` is set (or forever): sync with the gateway, mirror prompts to the chats,
    turn presses and replies into answers."""
    from telegram import Bot
    from telegram.error import NetworkError

    stop = stop or asyncio.Event()
    core = await joined_device("Telegram", data_dir, joining)
    bot = Bot(bot_token, base_url=f"{api_url.rstrip('/')}/bot")
    async with bot, running(core, "Telegram", data_dir, TelegramApi(bot), chats) as adapter:
        offset = int(adapter.messages.get_meta("offset", "0"))
        while not stop.is_set():
            try:
                updates = await bot.get_updates(
                    offset=offset or None,
                    timeout=poll_seconds,
                    allowed_updates=["message", "callback_query"],
                )
            except NetworkError as exc:
                log.warning("Telegram: %s; trying again", exc)
                await asyncio.sleep(2)
                continue
            for update in updates:
                try:
                    await handle_update(adapter, update)
                except Exception:
                    log.exception("could not handle update %s", update.update_id)
                offset = update.update_id + 1
                adapter.messages.set_meta("offset", str(offset))


def build_parser(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser, DEFAULT_API_URL, port=None)


def run(args: argparse.Namespace) -> int:
    try:
        import telegram  # noqa: F401
    except ImportError:
        print("error: pip install 'ask-user[telegram]'", file=sys.stderr)
        return 2
    return run_command(
        "Telegram",
        (TOKEN_ENV, CHATS_ENV),
        args,
        lambda env: f"Telegram: answering from chat(s) {', '.join(env.listed(CHATS_ENV))}",
        lambda env, joining, data_dir: serve(
            bot_token=env.own[TOKEN_ENV],
            chats=env.listed(CHATS_ENV),
            data_dir=data_dir,
            joining=joining,
            api_url=args.api_url,
        ),
    )

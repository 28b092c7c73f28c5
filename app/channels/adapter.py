"""A chat channel as one more device: the device core syncs and sends (outbox, idempotency keys,
retries); this turns its timeline into chat messages and presses and replies into answers.

Platform-free: an adapter gives a `ChatApi` (send, edit, alert, say). Everything it shows is
reconciled from the core's store and the message map, so a restart, a lost update or an answer
given on a phone all end in the same messages.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from app.device import EVERYTHING, Change, DeviceCore, DisplayStatus, TimelineItem
from app.protocol import ProtocolError, parse_reply
from app.protocol.selection import QuestionAnswer

from .messages import Message, MessageMap
from .render import STATUS_LINE, Button, keyboard, parse_callback, prompt_text, summary_text

log = logging.getLogger("ask_user.channels")

NOT_ALLOWED = "This chat is not allowed to answer these questions."
CHOOSE_ONE = "Choose at least one option first."


class ChatApi(Protocol):
    async def send(self, chat_id: str, text: str, rows: list[list[Button]]) -> str: ...

    async def edit(
        self, chat_id: str, message_id: str, text: str, rows: list[list[Button]] | None
    ) -> None: ...

    async def alert(self, press_id: str, text: str) -> None: ...

    async def say(self, chat_id: str, text: str, reply_to: str | None = None) -> None: ...


class ChannelAdapter:
    def __init__(
        self, core: DeviceCore, messages: MessageMap, api: ChatApi, chats: list[str]
    ) -> None:
        self.core = core
        self.messages = messages
        self.api = api
        self.chats = [str(c) for c in chats]
        self._lock = asyncio.Lock()
        self._again = False
        self._pending: asyncio.Task[None] | None = None

    # ---- the core's timeline → messages -----------------------------------------------

    def changed(self, change: Change = EVERYTHING) -> None:
        """The core's store changed: reconcile soon (coalesced; never two at once; every open
        message is looked at, whatever `change` names)."""
        if self._pending is None or self._pending.done():
            self._pending = asyncio.get_running_loop().create_task(self.reconcile())
        else:
            self._again = True

    async def reconcile(self) -> None:
        async with self._lock:
            while True:
                self._again = False
                for item in self.core.waiting():
                    for chat in self.chats:
                        await self._ensure_sent(item, chat)
                for message in self.messages.open_messages():
                    await self._ensure_current(message)
                if not self._again:
                    return

    async def _ensure_sent(self, item: TimelineItem, chat: str) -> None:
        message = self.messages.reserve(item.id, chat)
        if message.message_id is not None:
            return
        sent = await self.api.send(
            chat,
            prompt_text(item.record, message.view),
            keyboard(item.record, message.view, message.key),
        )
        self.messages.sent(message.key, sent)

    async def _ensure_current(self, message: Message) -> None:
        """A resolved (or sending) prompt's message shows its summary, without buttons."""
        item = self.core.item(message.prompt_id)
        if item is None or item.is_open:
            return
        shown = item.status.value
        if message.view.shown == shown:
            return
        await self.api.edit(message.chat_id, str(message.message_id), summary_text(item), None)
        message.view.shown = shown
        self.messages.save_view(message.key, message.view)
        if item.status != DisplayStatus.SENDING:
            self.messages.summarized(message.key)

    # ---- presses and replies → the core ------------------------------------------------

    async def pressed(self, press_id: str, chat_id: str, data: str) -> None:
        """A button: choose, tick, go on, or dismiss. Anyone outside the allowed chats, or a
        press on a prompt no longer open, is told so and changes nothing."""
        chat_id = str(chat_id)
        parsed = parse_callback(data)
        if chat_id not in self.chats:
            await self.api.alert(press_id, NOT_ALLOWED)
            return
        message = self.messages.by_key(parsed[0]) if parsed else None
        if message is not None and message.message_id is None:
            await self._sends_done()  # pressed before its send came back: wait for its id
            message = self.messages.by_key(message.key)
        if parsed is None or message is None or message.chat_id != chat_id:
            await self.api.alert(press_id, "This button is no longer valid.")
            return
        _, action, arg = parsed
        item = self.core.item(message.prompt_id)
        if item is None or not item.is_open:
            status = item.status if item else DisplayStatus.UNAVAILABLE
            await self.api.alert(press_id, STATUS_LINE.get(status, status.value))
            await self.reconcile()
            return
        if action == "x":
            self.core.dismiss(item.id)
            await self.api.alert(press_id, "Dismissed.")
            return
        await self._choose(press_id, message, item, action, arg)

    async def _choose(
        self, press_id: str, message: Message, item: TimelineItem, action: str, arg: int
    ) -> None:
        view, questions = message.view, item.record.questions
        question = questions[view.question]
        # Only the buttons this question's keyboard has (render.keyboard): a pick on a single
        # choice; a tick or Done on several, for the question on screen. Anything else (forged
        # or stale) is said so, and the message is drawn again from the store.
        fits = {
            "p": not question.multi_select and 0 <= arg < len(question.options),
            "t": question.multi_select and 0 <= arg < len(question.options),
            "n": question.multi_select and arg == view.question,
        }
        if not fits.get(action, False):
            await self.api.alert(press_id, "This button is no longer valid.")
            await self._redraw(message, item)
            return
        answer = QuestionAnswer(question, tuple(view.chosen.get(question.id, [])))
        if action == "t":
            view.chosen[question.id] = list(answer.toggle(question.options[arg].label).chosen)
            self.messages.save_view(message.key, view)
            await self._redraw(message, item)
            await self.api.alert(press_id, "")
            return
        if action == "p":
            view.chosen[question.id] = list(answer.choose(question.options[arg].label).chosen)
        elif action == "n" and not view.chosen.get(question.id):
            await self.api.alert(press_id, CHOOSE_ONE)
            return
        if view.question + 1 < len(questions):  # on to the next question, same message
            view.question += 1
            self.messages.save_view(message.key, view)
            await self._redraw(message, item)
            await self.api.alert(press_id, "")
            return
        self.messages.save_view(message.key, view)
        refused = self._answer(item, view.chosen)
        await self.api.alert(press_id, refused or "Sent.")

    async def replied(self, chat_id: str, reply_to: str, text: str) -> None:
        """A text reply to a prompt's message: the contract's plain-text rules (`key: value`
        lines for several questions) make it an answer, or the person is told what is missing."""
        chat_id = str(chat_id)
        if chat_id not in self.chats:
            return
        message = self.messages.by_message(chat_id, str(reply_to))
        if message is None:
            await self._sends_done()  # a reply to a message whose send has not come back yet
            message = self.messages.by_message(chat_id, str(reply_to))
        if message is None:
            return
        item = self.core.item(message.prompt_id)
        if item is None or not item.is_open:
            status = item.status if item else DisplayStatus.UNAVAILABLE
            await self.api.say(chat_id, STATUS_LINE.get(status, status.value), str(reply_to))
            return
        try:
            answers = parse_reply(item.record.questions, text)
        except ProtocolError as exc:
            await self.api.say(chat_id, exc.message, str(reply_to))
            return
        self._answer(item, answers)

    async def _sends_done(self) -> None:
        """Wait for a reconcile under way: the platform can deliver a press on (or a reply
        to) a message before the call that sent it has returned its id to us."""
        async with self._lock:
            pass

    def _answer(self, item: TimelineItem, answers: dict[str, list[str]]) -> str | None:
        """Into the core's outbox (kept across restarts, sent with its idempotency key); what
        to tell the person when it was not taken."""
        try:
            self.core.answer(item.id, answers)
        except ProtocolError as exc:
            log.warning("answer for %s not taken: %s", item.id, exc)
            return f"Not sent: {exc.message}"
        return None

    async def _redraw(self, message: Message, item: TimelineItem) -> None:
        await self.api.edit(
            message.chat_id,
            str(message.message_id),
            prompt_text(item.record, message.view),
            keyboard(item.record, message.view, message.key),
        )

"""Announce each new prompt (ASK_USER_NOTIFY): through Apprise (Pushover, Telegram, e-mail, a
webhook, …), and for ntfy through ntfy's own JSON API, whose actions answer from the
notification itself (Apprise's ntfy plugin sends no actions).

Every announcement carries the prompt's answer link (`<public URL>/a/<token>`, a page any phone
browser opens) and the app's link. Off the request path: a create only puts the message on a
queue; each notifier URL has its own thread, so one that hangs or fails delays no create and
no other notifier. Logs name a notifier without its secrets.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from app.protocol import PromptRecord, prompt_link
from app.protocol.asker import asker_label
from app.protocol.quick import quick_options

log = logging.getLogger("ask_user.gateway.notify")

_QUEUE_LIMIT = 1000  # per notifier: past this, announcements are dropped (and logged)
LINK_PATH = "/a/{token}"  # an answer link: its route, its page's form and the notifications
NTFY_SCHEMES = ("ntfy", "ntfys")
NTFY_DEFAULT_SERVER = "https://ntfy.sh"
NTFY_MAX_ONE_TAP_OPTIONS = 3  # ntfy shows at most three actions


def answer_link(public_url: str, token: str) -> str:
    return public_url.rstrip("/") + LINK_PATH.format(token=token)


@dataclass(frozen=True)
class Announcement:
    title: str
    body: str
    link: str  # the answer page
    one_tap: tuple[tuple[str, str], ...] = ()  # (label, URL to POST) when one tap can answer


def announcement(record: PromptRecord, link: str, minutes_left: int | None = None) -> Announcement:
    """Title: who asks and the first question's header ("Claude Code · shop-api: Target"),
    after "Reminder, N min left" for a reminder. Body: each question with its options, then
    the answer link and the app's link. One single-select question with at most three options
    can be answered with one tap on each option (`<link>?choose=N`)."""
    lines: list[str] = []
    for question in record.questions:
        lines.append(question.question)
        lines.extend(f"• {option.label}" for option in question.options)
        lines.append("")
    lines.append(f"Answer: {link}")
    lines.append(f"In the app: {prompt_link(record.id)}")
    one_tap: tuple[tuple[str, str], ...] = ()
    [first, *more] = record.questions
    quick = quick_options(record)  # never a permission's "allow always" (v1.5)
    if not more and not first.multi_select and len(quick) <= NTFY_MAX_ONE_TAP_OPTIONS:
        one_tap = tuple((option.label, f"{link}?choose={n}") for n, option in quick)
    title = f"{asker_label(record.session_key, record.agent_id)}: {first.header}"
    if minutes_left is not None:
        title = f"Reminder, {minutes_left} min left — {title}"
    return Announcement(title, "\n".join(lines), link, one_tap)


@dataclass(frozen=True)
class NtfyTopic:
    """An Apprise-style ntfy URL: `ntfy://topic` (ntfy.sh), `ntfy[s]://host[:port]/topic[/…]`,
    with `user:password@`, a `tk_…@` access token or `?token=`."""

    server: str
    topics: tuple[str, ...]
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, url: str) -> NtfyTopic | None:
        parts = urlsplit(url)
        if parts.scheme not in NTFY_SCHEMES:
            return None
        userinfo, _, hostport = parts.netloc.rpartition("@")
        segments = [unquote(s) for s in parts.path.split("/") if s]
        if not segments:  # ntfy://topic: the public server
            server, segments = NTFY_DEFAULT_SERVER, [unquote(hostport)]
        else:
            server = f"{'https' if parts.scheme == 'ntfys' else 'http'}://{hostport}"
        token = (parse_qs(parts.query).get("token") or [""])[0]
        user, _, password = userinfo.partition(":")
        headers: list[tuple[str, str]] = []
        if token or (user and not password and user.startswith("tk_")):
            headers.append(("Authorization", f"Bearer {token or unquote(user)}"))
        elif user:
            pair = f"{unquote(user)}:{unquote(password)}".encode()
            headers.append(("Authorization", "Basic " + base64.b64encode(pair).decode()))
        if not segments or not all(segments):
            return None
        return cls(server, tuple(segments), tuple(headers))

    @property
    def private_name(self) -> str:
        return f"ntfy {self.server}/{'…' * bool(self.headers)}{len(self.topics)} topic(s)"

    def message(self, topic: str, announcement: Announcement) -> dict[str, Any]:
        """ntfy's JSON publish body: `click` opens the page; the actions answer."""
        if announcement.one_tap:
            actions = [
                {"action": "http", "label": label, "url": url, "method": "POST", "clear": True}
                for label, url in announcement.one_tap
            ]
        else:
            actions = [{"action": "view", "label": "Answer", "url": announcement.link}]
        return {
            "topic": topic,
            "title": announcement.title,
            "message": announcement.body,
            "click": announcement.link,
            "actions": actions,
        }

    def send(self, announcement: Announcement) -> bool:
        import httpx

        delivered = True
        with httpx.Client(timeout=15, headers=dict(self.headers)) as http:
            for topic in self.topics:
                response = http.post(self.server + "/", json=self.message(topic, announcement))
                delivered = delivered and response.is_success
        return delivered


def _apprise_sender(url: str) -> tuple[Callable[[Announcement], bool], str] | None:
    import apprise

    # Apprise logs each payload at debug, and the payload carries the answer link: at every
    # level of ours, its log says only what went wrong (#39).
    logging.getLogger("apprise").setLevel(logging.WARNING)

    target = apprise.Apprise()
    if not target.add(url):
        return None
    server = next(iter(target))

    def send(message: Announcement) -> bool:
        return bool(server.notify(body=message.body, title=message.title))

    return send, str(server.url(privacy=True))  # type: ignore[no-untyped-call]  # Apprise's


class Announcer:
    """One worker thread and queue per notifier URL."""

    def __init__(self, urls: tuple[str, ...], public_url: str) -> None:
        self.public_url = public_url
        self._queues: list[queue.Queue[Announcement | None]] = []
        for url in urls:
            ntfy = NtfyTopic.parse(url)
            sender = (ntfy.send, ntfy.private_name) if ntfy else _apprise_sender(url)
            if sender is None:
                scheme = url.partition("://")[0] if "://" in url else "?"
                log.error(
                    "ASK_USER_NOTIFY: not a notifier URL this gateway can use (%s://…)", scheme
                )
                continue
            inbox: queue.Queue[Announcement | None] = queue.Queue(_QUEUE_LIMIT)
            threading.Thread(
                target=self._deliver, args=(*sender, inbox), name="ask-user-notify", daemon=True
            ).start()
            self._queues.append(inbox)

    @property
    def targets(self) -> int:
        return len(self._queues)

    def announce(
        self, record: PromptRecord, link_token: str, minutes_left: int | None = None
    ) -> None:
        """Queue the announcement (a reminder with `minutes_left`); never blocks."""
        message = announcement(record, answer_link(self.public_url, link_token), minutes_left)
        for inbox in self._queues:
            try:
                inbox.put_nowait(message)
            except queue.Full:
                log.warning("a notifier is %d announcements behind; dropped one", _QUEUE_LIMIT)

    def close(self) -> None:
        for inbox in self._queues:
            # A hung worker is a daemon thread: it goes with the process.
            with contextlib.suppress(queue.Full):
                inbox.put_nowait(None)

    @staticmethod
    def _deliver(
        send: Callable[[Announcement], bool], where: str, inbox: queue.Queue[Announcement | None]
    ) -> None:
        while (message := inbox.get()) is not None:
            try:
                delivered = send(message)
            except Exception as exc:  # a notifier's bug or a lost network must not end the thread
                log.warning("notification to %s failed: %s", where, type(exc).__name__)
                continue
            if not delivered:
                log.warning("notification to %s failed", where)

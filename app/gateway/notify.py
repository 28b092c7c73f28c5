"""Announce each new prompt through Apprise (ntfy, Pushover, Telegram, e-mail, …): ASK_USER_NOTIFY.

Off the request path: a create only puts the message on a queue. Each notifier URL has its own
thread, so one that hangs or fails delays no create and no other notifier. Logs name a
notifier by Apprise's privacy form of its URL, never its secrets.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from dataclasses import dataclass

from app.protocol import PromptRecord, prompt_link

log = logging.getLogger("ask_user.gateway.notify")

_QUEUE_LIMIT = 1000  # per notifier: past this, announcements are dropped (and logged)


@dataclass(frozen=True)
class Announcement:
    title: str
    body: str


def announcement(record: PromptRecord) -> Announcement:
    """Title: the first question's header. Body: each question with its options, then the
    link that opens the card in the app."""
    lines: list[str] = []
    for question in record.questions:
        lines.append(question.question)
        lines.extend(f"• {option.label}" for option in question.options)
        lines.append("")
    lines.append(f"Answer: {prompt_link(record.id)}")
    return Announcement(record.questions[0].header, "\n".join(lines))


class Announcer:
    """One worker thread and queue per Apprise URL."""

    def __init__(self, urls: tuple[str, ...]) -> None:
        import apprise

        self._queues: list[queue.Queue[Announcement | None]] = []
        self._threads: list[threading.Thread] = []
        for url in urls:
            target = apprise.Apprise()
            if not target.add(url):
                scheme = url.partition("://")[0] if "://" in url else "?"
                log.error(
                    "ASK_USER_NOTIFY: not an Apprise URL this gateway can use (%s://…)", scheme
                )
                continue
            server = next(iter(target))
            inbox: queue.Queue[Announcement | None] = queue.Queue(_QUEUE_LIMIT)
            thread = threading.Thread(
                target=self._deliver, args=(server, inbox), name="ask-user-notify", daemon=True
            )
            thread.start()
            self._queues.append(inbox)
            self._threads.append(thread)

    @property
    def targets(self) -> int:
        return len(self._queues)

    def announce(self, record: PromptRecord) -> None:
        """Queue the announcement; never blocks."""
        message = announcement(record)
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
    def _deliver(server, inbox: queue.Queue[Announcement | None]) -> None:
        where = server.url(privacy=True)
        while (message := inbox.get()) is not None:
            try:
                delivered = server.notify(body=message.body, title=message.title)
            except Exception as exc:  # a notifier's bug must not end the thread
                log.warning("notification to %s failed: %s", where, type(exc).__name__)
                continue
            if not delivered:
                log.warning("notification to %s failed", where)

"""Which chat message shows which prompt, and how far along it is: a small SQLite file, so a
restarted adapter edits the messages it sent instead of sending them again."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .render import View

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    prompt_id TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    message_id TEXT,
    view TEXT NOT NULL DEFAULT '{}',
    summarized INTEGER NOT NULL DEFAULT 0,
    UNIQUE (prompt_id, chat_id)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass
class Message:
    key: int
    prompt_id: str
    chat_id: str
    message_id: str | None
    view: View
    summarized: bool


def _message(row: tuple[Any, ...]) -> Message:
    key, prompt_id, chat_id, message_id, view, summarized = row
    return Message(
        key, prompt_id, chat_id, message_id, View.from_json(json.loads(view)), bool(summarized)
    )


class MessageMap:
    def __init__(self, path: Path | str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def _one(self, where: str, params: tuple[Any, ...]) -> Message | None:
        row = self._db.execute(
            "SELECT key, prompt_id, chat_id, message_id, view, summarized FROM messages "
            f"WHERE {where}",
            params,
        ).fetchone()
        return _message(row) if row else None

    def of_prompt(self, prompt_id: str, chat_id: str) -> Message | None:
        return self._one("prompt_id = ? AND chat_id = ?", (prompt_id, chat_id))

    def by_key(self, key: int) -> Message | None:
        return self._one("key = ?", (key,))

    def by_message(self, chat_id: str, message_id: str) -> Message | None:
        return self._one("chat_id = ? AND message_id = ?", (chat_id, message_id))

    def reserve(self, prompt_id: str, chat_id: str) -> Message:
        """The row for a message about to be sent (its key goes in the buttons' data)."""
        self._db.execute(
            "INSERT OR IGNORE INTO messages (prompt_id, chat_id) VALUES (?, ?)",
            (prompt_id, chat_id),
        )
        found = self.of_prompt(prompt_id, chat_id)
        assert found is not None
        return found

    def sent(self, key: int, message_id: str) -> None:
        self._db.execute("UPDATE messages SET message_id = ? WHERE key = ?", (message_id, key))

    def save_view(self, key: int, view: View) -> None:
        self._db.execute(
            "UPDATE messages SET view = ? WHERE key = ?", (json.dumps(view.to_json()), key)
        )

    def summarized(self, key: int) -> None:
        self._db.execute("UPDATE messages SET summarized = 1 WHERE key = ?", (key,))

    def open_messages(self) -> list[Message]:
        rows = self._db.execute(
            "SELECT key, prompt_id, chat_id, message_id, view, summarized FROM messages "
            "WHERE summarized = 0 AND message_id IS NOT NULL"
        )
        return [_message(row) for row in rows]

    def get_meta(self, key: str, default: str = "") -> str:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

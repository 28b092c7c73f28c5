"""SQLite's write-ahead-log checkpoints on a thread of their own, off the event loop.

By default the commit that takes the log past 1,000 pages copies them into the database file,
on the loop: one request in a few hundred waited 20 ms and more for it (#27: the latency
benchmark's p99). The store's own connection therefore never checkpoints; this thread does,
on a connection of its own, a passive checkpoint (it never waits for, nor blocks, the writer)
every CHECKPOINT_SECONDS — cheap when nothing was written. Durability is unchanged: a change is
in the log (synchronous=NORMAL) before it is acknowledged, checkpointed or not.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger("ask_user.gateway")

CHECKPOINT_SECONDS = 0.5


class Checkpointer:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ask-user-checkpoints", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            while not self._stop.wait(CHECKPOINT_SECONDS):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as exc:  # a full disk, say: the next turn tries again
                    log.warning("checkpoint of %s failed: %s", self._path.name, exc)
        finally:
            db.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

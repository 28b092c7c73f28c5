"""Paired devices and pairing codes, in the gateway's SQLite file; only hashes of secrets kept.

A device token is looked up by its SHA-256 in memory (no SQL on a request's path); the table is
the durable copy. A device's `lastSeenAt` is written at most once a minute.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from collections import deque
from dataclasses import dataclass

from app.protocol import ErrorCode, ProtocolError, limits, normalize_code
from app.protocol.pairing import CODE_ALPHABET, CODE_LENGTH

SCHEMA = """
CREATE TABLE IF NOT EXISTS devices (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL,
    last_seen_ms INTEGER
);
CREATE TABLE IF NOT EXISTS pairings (
    code_hash TEXT PRIMARY KEY,
    name TEXT,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    used_ms INTEGER
);
"""
_SEEN_WRITE_EVERY_MS = 60_000
_FAILURE_WINDOW_MS = 60_000


def secret_hash(secret: str) -> str:
    """Tokens and codes are random, so one SHA-256 is enough to keep them out of the file."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_code() -> str:
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return normalize_code(raw)


@dataclass(frozen=True)
class Device:
    id: str
    name: str
    created_ms: int
    last_seen_ms: int | None


class DeviceRegistry:
    """Pairing codes → devices with their own tokens; revocation; failed-code rate limit."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._db.executescript(SCHEMA)
        self._by_hash: dict[str, str] = dict(
            self._db.execute("SELECT token_hash, id FROM devices").fetchall()
        )
        self._active: set[str] = set(self._by_hash.values())
        self._seen: dict[str, int] = {}  # device id → last time written to the table
        self._failures: dict[str, deque[int]] = {}

    # ---- tokens --------------------------------------------------------------------------

    def device_of(self, token: str) -> str | None:
        return self._by_hash.get(secret_hash(token))

    def is_active(self, device_id: str) -> bool:
        return device_id in self._active

    def seen(self, device_id: str, now_ms: int) -> None:
        if now_ms - self._seen.get(device_id, 0) < _SEEN_WRITE_EVERY_MS:
            return
        self._seen[device_id] = now_ms
        self._db.execute("UPDATE devices SET last_seen_ms = ? WHERE id = ?", (now_ms, device_id))

    # ---- pairing -------------------------------------------------------------------------

    def new_pairing(self, name: str | None, now_ms: int) -> tuple[str, int]:
        """A fresh single-use code and when it expires."""
        code = new_code()
        expires_ms = now_ms + limits.PAIRING_CODE_SECONDS * 1000
        self._db.execute("DELETE FROM pairings WHERE expires_ms < ?", (now_ms,))
        self._db.execute(
            "INSERT INTO pairings (code_hash, name, created_ms, expires_ms) VALUES (?, ?, ?, ?)",
            (secret_hash(code), name, now_ms, expires_ms),
        )
        return code, expires_ms

    def pair(self, code: str, name: str | None, address: str, now_ms: int) -> tuple[Device, str]:
        """Use a code: a new device and its token (shown once, stored hashed)."""
        self._refuse_when_limited(address, now_ms)
        code_hash = secret_hash(normalize_code(code))
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._db.execute(
                "SELECT name FROM pairings WHERE code_hash = ? AND used_ms IS NULL "
                "AND expires_ms > ?",
                (code_hash, now_ms),
            ).fetchone()
            if row is None:
                self._db.execute("ROLLBACK")
                self._failed(address, now_ms)
                raise ProtocolError(
                    ErrorCode.PAIRING_INVALID,
                    "this pairing code is unknown, already used or expired: "
                    "make a new one with `python -m app pair`",
                )
            token = "dvt_" + secrets.token_urlsafe(32)
            device = Device(
                "dv_" + secrets.token_urlsafe(9), name or row[0] or "Device", now_ms, None
            )
            self._db.execute(
                "UPDATE pairings SET used_ms = ? WHERE code_hash = ?", (now_ms, code_hash)
            )
            self._db.execute(
                "INSERT INTO devices (id, name, token_hash, created_ms) VALUES (?, ?, ?, ?)",
                (device.id, device.name, secret_hash(token), now_ms),
            )
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._by_hash[secret_hash(token)] = device.id
        self._active.add(device.id)
        return device, token

    def _refuse_when_limited(self, address: str, now_ms: int) -> None:
        recent = self._failures.get(address)
        while recent and recent[0] <= now_ms - _FAILURE_WINDOW_MS:
            recent.popleft()
        if recent is not None and not recent:
            del self._failures[address]
        if recent and len(recent) >= limits.MAX_FAILED_PAIRINGS_PER_MINUTE:
            retry = (recent[0] + _FAILURE_WINDOW_MS - now_ms + 999) // 1000
            raise ProtocolError(
                ErrorCode.TOO_MANY_ATTEMPTS,
                f"too many wrong pairing codes from this address; try again in {retry} s",
                extra={"retryAfterSeconds": retry},
            )

    def _failed(self, address: str, now_ms: int) -> None:
        if len(self._failures) > 10_000:  # many addresses at once: forget the oldest
            self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(address, deque()).append(now_ms)

    # ---- devices -------------------------------------------------------------------------

    def devices(self) -> list[Device]:
        rows = self._db.execute(
            "SELECT id, name, created_ms, last_seen_ms FROM devices ORDER BY created_ms, id"
        )
        return [Device(*row) for row in rows]

    def revoke(self, device_id: str) -> bool:
        """Forget a device; its token stops working at once. False when there is no such device."""
        gone = self._db.execute("DELETE FROM devices WHERE id = ?", (device_id,)).rowcount
        self._by_hash = {h: d for h, d in self._by_hash.items() if d != device_id}
        self._active.discard(device_id)
        self._seen.pop(device_id, None)
        return bool(gone)

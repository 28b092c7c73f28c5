"""Paired devices and pairing codes, in the gateway's store; only hashes of secrets kept.

A device token is looked up by its SHA-256 in memory (no SQL on a request's path); the table is
the durable copy, re-read when another gateway process paired or revoked a device. A device's
`lastSeenAt` is written at most once a minute. Each device, and each code, belongs to a person
(docs/PROTOCOL.md v1.3): the default one unless the code says.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass

from app.protocol import DEFAULT_PERSON_ID, ErrorCode, ProtocolError, limits, normalize_code
from app.protocol.pairing import CODE_ALPHABET, CODE_LENGTH

from ..store.storage import Database, Statements
from .eager import spawn
from .guesses import Guesses

log = logging.getLogger("ask_user.gateway")

_SEEN_WRITE_EVERY_MS = 60_000


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
    person: str


class DeviceRegistry:
    """Pairing codes → devices with their own tokens; revocation; failed-code rate limit."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._by_hash: dict[str, tuple[str, str]] = {}  # token hash → (device id, its person)
        self._active: set[str] = set()  # read by reload(), at start-up and when told
        self._seen: dict[str, int] = {}  # device id → last time written to the table
        self._guesses = Guesses("pairing codes")
        self._wrong_guesses = 0  # since start, from anywhere
        self._guesses_before: dict[str, int] = {}  # code hash → _wrong_guesses when it was made

    async def reload(self) -> set[str]:
        """Re-read the tokens (another gateway process paired or revoked a device): the ids of
        the devices gone since, whose parked polls are to end."""
        rows = await self._db.execute("SELECT token_hash, id, person_id FROM devices")
        self._by_hash = {token_hash: (device_id, person) for token_hash, device_id, person in rows}
        before, self._active = self._active, {d for d, _ in self._by_hash.values()}
        return before - self._active

    # ---- tokens --------------------------------------------------------------------------

    def device_of(self, token: str) -> tuple[str, str] | None:
        """The device a token is, and its person."""
        return self._by_hash.get(secret_hash(token))

    def is_active(self, device_id: str) -> bool:
        return device_id in self._active

    def seen(self, device_id: str, now_ms: int) -> None:
        """Note the time a device was last heard from: at most once a minute, and never at the
        cost of its request: a store locked by someone else is not waited for (#39), and takes
        it a minute later."""
        if now_ms - self._seen.get(device_id, 0) < _SEEN_WRITE_EVERY_MS:
            return
        self._seen[device_id] = now_ms
        spawn(self._write_seen(device_id, now_ms), f"lastSeenAt of {device_id} not written")

    async def _write_seen(self, device_id: str, now_ms: int) -> None:
        async with self._db.transaction_if_free() as db:
            await db.execute(
                "UPDATE devices SET last_seen_ms = ? WHERE id = ?", (now_ms, device_id)
            )

    # ---- pairing -------------------------------------------------------------------------

    async def new_pairing(
        self, name: str | None, now_ms: int, person: str = DEFAULT_PERSON_ID
    ) -> tuple[str, int]:
        """A fresh single-use code for a device of `person`, and when it expires."""
        code = new_code()
        expires_ms = now_ms + limits.PAIRING_CODE_SECONDS * 1000
        async with self._db.transaction() as db:
            await db.execute("DELETE FROM pairings WHERE expires_ms < ?", (now_ms,))
            await db.execute(
                "INSERT INTO pairings (code_hash, name, created_ms, expires_ms, person_id) "
                "VALUES (?, ?, ?, ?, ?)",
                (secret_hash(code), name, now_ms, expires_ms, person),
            )
        self._guesses_before[secret_hash(code)] = self._wrong_guesses
        return code, expires_ms

    async def pair(
        self, code: str, name: str | None, address: str, now_ms: int
    ) -> tuple[Device, str]:
        """Use a code: a new device and its token (shown once, stored hashed).

        A live code is taken from any address, whatever others got wrong: behind a proxy or a
        shared NAT one guesser must not block everyone's pairing. What stops guessing is each
        code's budget: past MAX_WRONG_GUESSES_PER_CODE wrong codes tried (from anywhere) while
        it is live, it is spent. An address past its own limit gets 429 for wrong codes."""
        code_hash = secret_hash(normalize_code(code))
        token = "dvt_" + secrets.token_urlsafe(32)
        device: Device | None = None
        spent = False
        async with self._db.transaction() as db:
            row = (
                await db.execute(
                    "SELECT name, person_id FROM pairings WHERE code_hash = ? AND used_ms IS NULL "
                    "AND expires_ms > ?",
                    (code_hash, now_ms),
                )
            ).fetchone()
            guessed = self._wrong_guesses - self._guesses_before.get(code_hash, 0)
            spent = row is not None and guessed >= limits.MAX_WRONG_GUESSES_PER_CODE
            if row is not None and not spent:
                device_id = "dv_" + secrets.token_urlsafe(9)
                # The person named this pairing (`pair --name`): that wins over the name the
                # device proposes for itself, a default like its host's (#44).
                device = Device(device_id, row[0] or name or "Device", now_ms, None, row[1])
                await db.execute(
                    "UPDATE pairings SET used_ms = ? WHERE code_hash = ?", (now_ms, code_hash)
                )
                await db.execute(
                    "INSERT INTO devices (id, name, token_hash, created_ms, person_id) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (device.id, device.name, secret_hash(token), now_ms, device.person),
                )
                await db.announce_registry_change()
        if device is not None:
            self._guesses_before.pop(code_hash, None)
            self._by_hash[secret_hash(token)] = (device.id, device.person)
            self._active.add(device.id)
            return device, token
        if spent:
            log.warning(
                "a pairing code was spent: %d wrong codes were tried while it was live",
                limits.MAX_WRONG_GUESSES_PER_CODE,
            )
            raise ProtocolError(
                ErrorCode.PAIRING_INVALID,
                "too many wrong pairing codes were tried while this one was live, so it was "
                "cancelled: make a new one with `ask-user pair`",
            )
        self._wrong_guesses += 1
        self._guesses.refuse_when_limited(address, now_ms)
        self._guesses.failed(address, now_ms)
        raise ProtocolError(
            ErrorCode.PAIRING_INVALID,
            "this pairing code is unknown, already used or expired: "
            "make a new one with `ask-user pair`",
        )

    # ---- devices -------------------------------------------------------------------------

    async def devices(self) -> list[Device]:
        rows = await self._db.execute(
            "SELECT id, name, created_ms, last_seen_ms, person_id FROM devices "
            "ORDER BY created_ms, id"
        )
        return [Device(*row) for row in rows]

    async def name_of(self, device_id: str) -> str | None:
        """A paired device's name (what the person's other devices call it)."""
        rows = await self._db.execute("SELECT name FROM devices WHERE id = ?", (device_id,))
        row = rows.fetchone()
        return str(row[0]) if row else None

    async def revoke(self, device_id: str) -> bool:
        """Forget a device; its token stops working at once. False when there is no such device.
        A store that cannot take it answers 503 and the token still works: retry."""
        async with self._db.transaction() as db:
            gone = (await db.execute("DELETE FROM devices WHERE id = ?", (device_id,))).rowcount
            await db.announce_registry_change()
        self.forget({device_id})
        return bool(gone)

    @staticmethod
    async def delete_person(db: Statements, person: str) -> set[str]:
        """Within the caller's transaction (`db`): the person's devices and unused codes go; the
        ids of the devices, to `forget` once it has committed."""
        rows = await db.execute("SELECT id FROM devices WHERE person_id = ?", (person,))
        gone = {row[0] for row in rows}
        await db.execute("DELETE FROM devices WHERE person_id = ?", (person,))
        await db.execute("DELETE FROM pairings WHERE person_id = ?", (person,))
        await db.announce_registry_change()
        return gone

    def forget(self, device_ids: set[str]) -> None:
        """The devices' tokens stop working now (their rows are gone)."""
        self._by_hash = {h: d for h, d in self._by_hash.items() if d[0] not in device_ids}
        self._active -= device_ids
        for device_id in device_ids:
            self._seen.pop(device_id, None)

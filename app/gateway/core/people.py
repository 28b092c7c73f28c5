"""People and their agent tokens (docs/PROTOCOL.md v1.3), in the gateway's store.

The default person is not a row: it owns every token named in the environment or in
`tokens.json`, so a gateway with no people configured behaves as it always did. Agent tokens
minted for a person are kept as SHA-256 hashes and looked up in memory, like device tokens (and
re-read when another gateway process changed them).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from app.protocol import DEFAULT_PERSON_ID, ErrorCode, ProtocolError
from app.protocol.people import DEFAULT_PERSON_NAME, PERSON_ID_PREFIX

from ..store.storage import Database
from .devices import DeviceRegistry, secret_hash


@dataclass(frozen=True)
class PersonRow:
    id: str
    name: str
    created_ms: int | None  # None: the default person


DEFAULT_PERSON = PersonRow(DEFAULT_PERSON_ID, DEFAULT_PERSON_NAME, None)


def name_key(name: str) -> str:
    """Names are told apart as a person reads them: `Ann` and `ann ` are one name."""
    return " ".join(name.split()).casefold()


class People:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._agent_tokens: dict[str, str] = {}  # read by reload(), at start-up and when told

    async def reload(self) -> None:
        """Re-read the agent tokens (another gateway process minted or removed some)."""
        rows = await self._db.execute("SELECT token_hash, person_id FROM agent_tokens")
        self._agent_tokens = {token_hash: person for token_hash, person in rows}

    def person_of_agent_token(self, token: str) -> str | None:
        return self._agent_tokens.get(secret_hash(token))

    async def all(self) -> list[PersonRow]:
        rows = await self._db.execute(
            "SELECT id, name, created_ms FROM people ORDER BY created_ms, id"
        )
        return [DEFAULT_PERSON, *(PersonRow(*row) for row in rows)]

    async def find(self, person_id: str) -> PersonRow | None:
        if person_id == DEFAULT_PERSON_ID:
            return DEFAULT_PERSON
        rows = await self._db.execute(
            "SELECT id, name, created_ms FROM people WHERE id = ?", (person_id,)
        )
        row = rows.fetchone()
        return PersonRow(*row) if row else None

    async def require(self, person_id: str, field: str | None = None) -> PersonRow:
        """The person, or 404 naming the id (and the body field it came in, if any)."""
        found = await self.find(person_id)
        if found is None:
            where = f"{field}: " if field else ""
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"{where}no person with id {person_id!r} (see GET /v1/people)",
            )
        return found

    async def add(self, name: str, now_ms: int) -> PersonRow:
        """A new person; 409 `name_taken` when the name is in use (case and spaces aside)."""
        key = name_key(name)
        person = PersonRow(PERSON_ID_PREFIX + secrets.token_urlsafe(9), name, now_ms)
        async with self._db.transaction() as db:
            taken = (
                key == name_key(DEFAULT_PERSON_NAME)
                or (await db.execute("SELECT 1 FROM people WHERE name_key = ?", (key,))).fetchone()
            )
            if not taken:
                await db.execute(
                    "INSERT INTO people (id, name, name_key, created_ms) VALUES (?, ?, ?, ?)",
                    (person.id, name, key, now_ms),
                )
        if taken:
            raise ProtocolError(
                ErrorCode.NAME_TAKEN, f"name: a person named {name!r} already exists"
            )
        return person

    async def new_agent_token(self, person_id: str, now_ms: int) -> str:
        """A token for one more agent of the person: shown once, kept hashed."""
        await self.require(person_id)
        token = "agt_" + secrets.token_urlsafe(32)
        async with self._db.transaction() as db:
            await db.execute(
                "INSERT INTO agent_tokens (token_hash, person_id, created_ms) VALUES (?, ?, ?)",
                (secret_hash(token), person_id, now_ms),
            )
            await db.announce_registry_change()
        self._agent_tokens[secret_hash(token)] = person_id
        return token

    async def removable(self, person_id: str) -> None:
        """404 for no such person, 409 for the default one."""
        if person_id == DEFAULT_PERSON_ID:
            raise ProtocolError(
                ErrorCode.DEFAULT_PERSON,
                "the default person cannot be removed: it owns the tokens named in the "
                "environment and in tokens.json",
            )
        await self.require(person_id)

    async def remove(self, person_id: str, devices: DeviceRegistry) -> set[str]:
        """The person, their agent tokens, devices and pairing codes go, in one transaction;
        the tokens stop working at once. The removed devices' ids (their parked polls are to
        be ended)."""
        await self.removable(person_id)
        async with self._db.transaction() as db:
            await db.execute("DELETE FROM people WHERE id = ?", (person_id,))
            await db.execute("DELETE FROM agent_tokens WHERE person_id = ?", (person_id,))
            gone = await devices.delete_person(db, person_id)
        self._agent_tokens = {h: p for h, p in self._agent_tokens.items() if p != person_id}
        devices.forget(gone)
        return gone

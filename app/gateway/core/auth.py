"""Bearer tokens, their roles and their people: named tokens compared in constant time (they
belong to the default person), paired devices and minted agent tokens by hash."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.protocol import DEFAULT_PERSON_ID, ErrorCode, ProtocolError

from .devices import DeviceRegistry
from .people import People

Role = Literal["agent", "device", "admin"]


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: its token, role, person (whose prompts it may reach), and the
    paired device it is, if any."""

    token: str
    role: Role
    device_id: str | None = None
    person: str = DEFAULT_PERSON_ID


@dataclass(frozen=True)
class Tokens:
    """The tokens named in the environment or tokens.json, by role (config.py reads them)."""

    agent: tuple[str, ...]
    device: tuple[str, ...]
    file: Path | None = None  # where they are kept, when the gateway made them
    admin: tuple[str, ...] = ()  # manage devices and pairing codes (docs/PROTOCOL.md v1.1)


class Authenticator:
    def __init__(self, tokens: Tokens) -> None:
        named: list[tuple[str, Role]] = [
            *((t, "agent") for t in tokens.agent),
            *((t, "device") for t in tokens.device),
            *((t, "admin") for t in tokens.admin),
        ]
        # Each named token's Caller is made once: a device polls once per event (#16).
        self._tokens = [(token.encode(), Caller(token, role)) for token, role in named]
        self.devices: DeviceRegistry | None = None
        self._people: People | None = None
        self.now_ms: Callable[[], int] = lambda: 0

    @property
    def registry(self) -> DeviceRegistry:
        """The paired devices (attached at start-up, before any request)."""
        assert self.devices is not None, "the gateway has not started"
        return self.devices

    @property
    def people(self) -> People:
        """People and their agent tokens (attached at start-up, before any request)."""
        assert self._people is not None, "the gateway has not started"
        return self._people

    def attach(self, devices: DeviceRegistry, people: People, now_ms: Callable[[], int]) -> None:
        """Paired devices and minted agent tokens join the named tokens once the store is open."""
        self.devices, self._people, self.now_ms = devices, people, now_ms

    def caller(self, token: str) -> Caller | None:
        given = token.encode()
        found: Caller | None = None
        for known, named in self._tokens:  # no early exit: every token is compared
            if hmac.compare_digest(given, known):
                found = named
        if found is not None:
            return found
        if self.devices is not None and (device := self.devices.device_of(token)):
            self.devices.seen(device[0], self.now_ms())
            return Caller(token, "device", device[0], device[1])
        if self._people is not None and (person := self._people.person_of_agent_token(token)):
            return Caller(token, "agent", None, person)
        return None

    def require(self, authorization: str | None, role: Role) -> Caller:
        """The caller, when its token is known and of `role`; else 401 (none/unknown) or 403."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ProtocolError(
                ErrorCode.UNAUTHORIZED, "a bearer token is required: Authorization: Bearer <token>"
            )
        found = self.caller(token.strip())
        if found is None:
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "unknown token")
        if found.role != role:
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"this call needs {_article(role)} token; this is {_article(found.role)} token",
            )
        return found

    def still_valid(self, caller: Caller) -> None:
        """401 when the caller's device was revoked meanwhile (e.g. during a long-poll)."""
        if caller.device_id is not None and not (
            self.devices is not None and self.devices.is_active(caller.device_id)
        ):
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "this device's token was revoked")


def _article(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"

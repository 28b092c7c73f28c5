"""Bearer tokens and their roles, compared in constant time."""

from __future__ import annotations

import hmac
from typing import Literal

from app.protocol import ErrorCode, ProtocolError

from .config import Tokens

Role = Literal["agent", "device"]


class Authenticator:
    def __init__(self, tokens: Tokens) -> None:
        self._tokens: list[tuple[bytes, Role]] = [
            *((t.encode(), "agent") for t in tokens.agent),
            *((t.encode(), "device") for t in tokens.device),
        ]

    def role_of(self, token: str) -> Role | None:
        given = token.encode()
        found: Role | None = None
        for known, role in self._tokens:  # no early exit: every token is compared
            if hmac.compare_digest(given, known):
                found = role
        return found

    def require(self, authorization: str | None, role: Role) -> str:
        """The token, when it is known and of `role`; else 401 (none/unknown) or 403."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ProtocolError(
                ErrorCode.UNAUTHORIZED, "a bearer token is required: Authorization: Bearer <token>"
            )
        found = self.role_of(token.strip())
        if found is None:
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "unknown token")
        if found != role:
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"this call needs {_article(role)} token; this is {_article(found)} token",
            )
        return token.strip()


def _article(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"

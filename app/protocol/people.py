"""People (docs/PROTOCOL.md v1.3): who a token, a device and a prompt belong to, on the wire.

A gateway shared by a team keeps each person's prompts to that person's devices. A gateway
with no people configured has one person, the default, who owns every token named in the
environment or in `tokens.json`: today's behaviour.
"""

from __future__ import annotations

from pydantic import field_validator

from . import limits
from .base import RequestModel, ResponseModel
from .models import UtcTime, _id_text, _optional_identifier

DEFAULT_PERSON_ID = "ps_default"
DEFAULT_PERSON_NAME = "default"
PERSON_ID_PREFIX = "ps_"


class PersonRequest(RequestModel):
    """`POST /v1/people` (admin): a name, unique on this gateway (case does not count)."""

    name: str = _id_text(minLength=1, maxLength=limits.MAX_PERSON_NAME_CHARS)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        name = _optional_identifier(value, limits.MAX_PERSON_NAME_CHARS)
        assert name is not None
        return name


class Person(ResponseModel):
    person_id: str
    name: str
    created_at: UtcTime | None = None  # None: the default person, who was always there


class PersonList(ResponseModel):
    people: list[Person]


class AgentToken(ResponseModel):
    """A new agent token of one person: shown once, stored hashed."""

    token: str
    person_id: str

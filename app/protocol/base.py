"""The two kinds of wire model (docs/PROTOCOL.md): a request rejects unknown properties, a
response ignores them (an older device keeps working against a newer gateway); and the one
way a rule says what is wrong. Below every other wire module (models, stops, pairing)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError


def _invalid(message: str, **ctx: Any) -> PydanticCustomError:
    """A validation error whose message is final text (values may hold braces of their own)."""
    return PydanticCustomError("invalid", message.format(**ctx))


class RequestModel(BaseModel):
    """A request body: camelCase on the wire, unknown properties rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,  # the wire names only: `session_key` is an unknown property
        serialize_by_alias=True,
        extra="forbid",
        str_strict=True,  # type: ignore[typeddict-unknown-key]  # pydantic-core's, not in the stubs
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResponseModel(BaseModel):
    """A response body: camelCase on the wire, unknown properties ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

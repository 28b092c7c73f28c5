"""People and their agent tokens (admin)."""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import Response

from app.protocol import (
    AgentToken,
    Person,
    PersonList,
    PersonRequest,
)

from ...core.clock import to_datetime
from ...core.people import PersonRow
from ..routing import Call

log = logging.getLogger("ask_user.gateway")


# ---- people (admin) ----------------------------------------------------------------------------


def _person(row: PersonRow) -> Person:
    created = to_datetime(row.created_ms) if row.created_ms is not None else None
    return Person(person_id=row.id, name=row.name, created_at=created)


async def add_person(call: Call) -> dict[str, Any]:
    """A person of the team: their agents' prompts reach only their devices."""
    body: PersonRequest = call.body
    person = await call.auth.people.add(body.name, call.gateway.clock.now_ms())
    log.info("added person %s", person.id)
    return _person(person).to_wire()


async def list_people(call: Call) -> dict[str, Any]:
    """Everyone, the default person (the environment's and tokens.json's tokens) first."""
    return PersonList(people=[_person(row) for row in await call.auth.people.all()]).to_wire()


async def remove_person(call: Call) -> Response:
    """Their pending prompts are cancelled (their agents stop waiting), then their agent
    tokens and devices stop at once: a long-poll parked by one of them ends with 401."""
    person_id, people = call.params["person_id"], call.auth.people
    await people.removable(person_id)
    await call.gateway.cancel_person(person_id, reason="person-removed")
    for device_id in await people.remove(person_id, call.auth.registry):
        call.gateway.feed.device_revoked(device_id)
    log.info("removed person %s", person_id)
    return Response(status_code=204)


async def new_agent_token(call: Call) -> dict[str, Any]:
    """One more agent token of the person: shown only here, stored hashed."""
    person_id = call.params["person_id"]
    token = await call.auth.people.new_agent_token(person_id, call.gateway.clock.now_ms())
    return AgentToken(token=token, person_id=person_id).to_wire()

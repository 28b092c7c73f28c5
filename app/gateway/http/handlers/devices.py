"""Devices and pairing (admin; pairing itself needs only the code)."""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import Response

from app.protocol import (
    DEFAULT_PERSON_ID,
    DeviceInfo,
    DeviceList,
    ErrorCode,
    PairDeviceRequest,
    PairedDevice,
    Pairing,
    PairingRequest,
    ProtocolError,
    pair_link,
)

from ...core.clock import to_datetime
from ..routing import Call

log = logging.getLogger("ask_user.gateway")


# ---- devices and pairing (admin; pairing itself needs only the code) --------------------------


async def create_pairing(call: Call) -> dict[str, Any]:
    """A single-use code (10 minutes) and the `askuser://pair` link a phone opens."""
    body: PairingRequest = call.body or PairingRequest()
    person = await call.auth.people.require(body.person_id or DEFAULT_PERSON_ID, "personId")
    code, expires_ms = await call.auth.registry.new_pairing(
        body.name, call.gateway.clock.now_ms(), person.id
    )
    url = body.gateway_url or call.state.public_url or call.own_url
    return Pairing(
        code=code, expires_at=to_datetime(expires_ms), link=pair_link(url, code)
    ).to_wire()


async def pair_device(call: Call) -> dict[str, Any]:
    """No token: the pairing code is the credential. The token is shown only here."""
    body: PairDeviceRequest = call.body
    device, token = await call.auth.registry.pair(
        body.code, body.name, call.client_address, call.gateway.clock.now_ms()
    )
    log.info("paired device %s (%s)", device.id, device.name)
    return PairedDevice(device_id=device.id, token=token, name=device.name).to_wire()


async def list_devices(call: Call) -> dict[str, Any]:
    """Paired devices (not the tokens named in the environment)."""
    return DeviceList(
        devices=[
            DeviceInfo(
                device_id=d.id,
                name=d.name,
                person_id=d.person,
                created_at=to_datetime(d.created_ms),
                last_seen_at=to_datetime(d.last_seen_ms) if d.last_seen_ms else None,
            )
            for d in await call.auth.registry.devices()
        ]
    ).to_wire()


async def revoke_device(call: Call) -> Response:
    """The device's token gets 401 from now on; a long-poll it has parked ends with 401."""
    device_id = call.params["device_id"]
    if not await call.auth.registry.revoke(device_id):
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no device with id {device_id!r}")
    call.gateway.feed.device_revoked(device_id)
    log.info("revoked device %s", device_id)
    return Response(status_code=204)

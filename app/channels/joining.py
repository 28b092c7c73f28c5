"""How a channel becomes a device on the gateway, like a phone: by a pairing link (its own
token, revocable on its own), by a URL and token given to it, or as it was paired before."""

from __future__ import annotations

from app.device import DeviceCore, PairingError, Settings
from app.protocol import PairLink, parse_link


class JoinError(Exception):
    """The channel has no way to reach the gateway; the message says what to give it."""


async def join(
    core: DeviceCore,
    name: str,
    *,
    gateway_url: str | None = None,
    device_token: str | None = None,
    pair_link: str | None = None,
) -> None:
    if pair_link:
        link = parse_link(pair_link)
        if not isinstance(link, PairLink):
            raise JoinError(f"not a pairing link: {pair_link!r} (python -m app pair makes one)")
        core.configure(Settings(core.settings.gateway_url, core.settings.token, name))
        try:
            await core.pair(link.gateway_url, link.code)
        except PairingError as exc:
            raise JoinError(f"pairing failed ({exc.kind}): {exc.detail}") from exc
    elif gateway_url and device_token:
        core.configure(Settings(gateway_url, device_token, name))
    elif not core.settings.configured:
        raise JoinError(
            "pair it once with --pair '<link from python -m app pair>', or set "
            "ASK_USER_GATEWAY_URL and ASK_USER_DEVICE_TOKEN"
        )

"""Which address a phone can reach this gateway at, for pairing links and the start-up banner."""

from __future__ import annotations

import ipaddress
import socket

_ANY = ("0.0.0.0", "::", "")


def lan_address() -> str | None:
    """This machine's address on its local network: the source address of the default route.
    A UDP `connect` sends nothing; None when there is no network."""
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))
                address = s.getsockname()[0]
        except OSError:
            continue
        if not ipaddress.ip_address(address).is_loopback:
            return str(address)
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_for(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def reachable_url(host: str, port: int) -> str | None:
    """The URL other devices use: the LAN address when listening on every interface, the host
    itself when it names one, None when only this machine can connect (loopback)."""
    if host in _ANY:
        address = lan_address()
        return url_for(address, port) if address else None
    return None if is_loopback(host) else url_for(host, port)

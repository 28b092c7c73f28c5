"""`python -m app pair`, `devices`, `people` and `agent-token`: the admin's side, over HTTP.

On the gateway's own machine they find it (gateway.json) and its admin token (tokens.json) in
the data directory; elsewhere `--gateway-url` and `ASK_USER_ADMIN_TOKEN` say where and who.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from app.protocol import error_from_body
from app.protocol.local_gateway import (
    AGENT_TOKEN_ENV,
    DATA_DIR_ENV,
    GATEWAY_URL_ENV,
    gateway_data_dir,
    read_local_gateway,
)

from .config import TOKENS_FILE
from .settings import DEFAULT_HOST, DEFAULT_PORT

ADMIN_TOKEN_ENV = "ASK_USER_ADMIN_TOKEN"


class AdminError(Exception):
    """Something the person must fix; the message says what."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gateway-url",
        default=None,
        help=f"the gateway to manage (default: ${GATEWAY_URL_ENV}, else the one running on "
        "this machine)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the gateway's data directory, to find it and its admin token on this machine",
    )


def build_pair_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    _common(parser)
    parser.add_argument("--name", help="a label for the device, e.g. 'Pixel 8'")
    parser.add_argument(
        "--link-url",
        help="the gateway URL to put in the link, when phones reach it by another address "
        "(e.g. https://askuser.example.ts.net)",
    )
    parser.add_argument(
        "--person", help="whose phone this is: a person's id or name (default: the default person)"
    )
    return parser


def build_devices_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    _common(parser)
    parser.add_argument("action", nargs="?", choices=["list", "revoke"], default="list")
    parser.add_argument("device_id", nargs="?", help="the device to revoke (see the list)")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    return parser


def build_people_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    _common(parser)
    parser.add_argument("action", nargs="?", choices=["add", "list", "remove"], default="list")
    parser.add_argument("person", nargs="?", help="add: the name; remove: the id or name")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    return parser


def build_agent_token_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    _common(parser)
    parser.add_argument("person", help="the person the agent works for: their id or name")
    return parser


def _connect(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> httpx.Client:
    """The admin commands' one read of their environment, in the precedence of every process:
    a flag, then the variable, then what the gateway on this machine wrote, then the default."""
    env = os.environ if env is None else env
    data_dir = gateway_data_dir(args.data_dir or env.get(DATA_DIR_ENV)).expanduser()
    local = read_local_gateway(data_dir)
    given_url = args.gateway_url or env.get(GATEWAY_URL_ENV)
    # The web app that embeds this machine's gateway, for a browser's pairing link.
    args.web_app_url = local.web_app_url if not given_url else None
    url = given_url or local.local_url or f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
    token = env.get(ADMIN_TOKEN_ENV) or local.token("admin")
    if not token:
        raise AdminError(
            f"no admin token: set {ADMIN_TOKEN_ENV}, or run this on the gateway's machine "
            f"(it reads {data_dir / TOKENS_FILE})"
        )
    return httpx.Client(
        base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"}, timeout=15
    )


def _call(client: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    try:
        response = client.request(method, path, **kwargs)
    except httpx.TransportError as exc:
        raise AdminError(
            f"no gateway answers at {client.base_url} ({exc.__class__.__name__}); start it with "
            "`python -m app gateway`, or pass --gateway-url"
        ) from exc
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = None
        error = error_from_body(body, response.status_code, f"HTTP {response.status_code}")
        message = error.message
        if not error.code.startswith("http_"):
            message += f" ({error.code})"
        if response.status_code in (401, 403):
            message += f": check {ADMIN_TOKEN_ENV} (an admin token from the gateway's tokens.json)"
        raise AdminError(message)
    return response


def _local_time(text: str) -> str:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone().strftime("%H:%M")


def pair(args: argparse.Namespace) -> int:
    body = {k: v for k, v in {"name": args.name, "gatewayUrl": args.link_url}.items() if v}
    with _connect(args) as client:
        if args.person:
            body["personId"] = _person_id(client, args.person)
        pairing = _call(client, "POST", "/v1/pairings", json=body).json()
    from app.protocol import PairLink, parse_link
    from app.protocol.pairing import web_pair_link

    link = parse_link(pairing["link"])
    gateway_url = link.gateway_url if isinstance(link, PairLink) else "?"
    print("Pair a phone with Ask User: scan this with the phone's camera")
    print("(or open the link on the phone, or type the address and code in Settings).\n")
    print(_qr(pairing["link"]))
    print(f"Link:    {pairing['link']}")
    web_app = getattr(args, "web_app_url", None)
    browser = web_pair_link(web_app or "", gateway_url, pairing["code"])
    print(f"Browser: {browser}" + ("" if web_app else "   (after the web app's address)"))
    print(f"Address: {gateway_url}")
    print(f"Code:    {pairing['code']}")
    print(f"Valid once, for 10 minutes (until {_local_time(pairing['expiresAt'])}).")
    from .addresses import is_loopback

    if link and is_loopback(httpx.URL(gateway_url).host):
        print(
            "\nNote: this address works on this machine only. For a phone, run the gateway "
            "with --host 0.0.0.0 (same network) or behind HTTPS, or pass --link-url.",
            file=sys.stderr,
        )
    return 0


def _qr(text: str) -> str:
    import io

    import segno

    out = io.StringIO()
    segno.make(text, error="m").terminal(out=out, compact=True)
    return out.getvalue()


def devices(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        if args.action == "revoke":
            if not args.device_id:
                raise AdminError("which device? python -m app devices revoke DEVICE_ID")
            _call(client, "DELETE", f"/v1/devices/{args.device_id}")
            print(f"Revoked {args.device_id}: its token no longer works.")
            return 0
        listed = _call(client, "GET", "/v1/devices").json()["devices"]
    if args.json:
        print(json.dumps(listed, indent=2))
        return 0
    if not listed:
        print("No paired devices. Pair one with: python -m app pair")
        return 0
    _table(
        ("ID", "NAME", "PERSON", "PAIRED (UTC)", "LAST SEEN (UTC)"),
        [
            (d["deviceId"], d["name"], d["personId"], _utc(d["createdAt"]), _seen(d["lastSeenAt"]))
            for d in listed
        ],
    )
    return 0


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _utc(text: str) -> str:
    return text[:16].replace("T", " ")


def _person_id(client: httpx.Client, given: str) -> str:
    """A person named by id or by name (case and spaces aside), as `people list` shows them."""
    people = _call(client, "GET", "/v1/people").json()["people"]
    from .core.people import name_key

    for person in people:
        if given == person["personId"] or name_key(given) == name_key(person["name"]):
            return str(person["personId"])
    known = ", ".join(f"{p['name']} ({p['personId']})" for p in people)
    raise AdminError(f"no person with the id or name {given!r}; the people are: {known}")


def people(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        if args.action == "add":
            if not args.person:
                raise AdminError("what is their name? python -m app people add NAME")
            added = _call(client, "POST", "/v1/people", json={"name": args.person}).json()
            print(f"Added {added['name']} ({added['personId']}).")
            print("Give their agents a token:  python -m app agent-token " + added["personId"])
            print("Pair their phone:           python -m app pair --person " + added["personId"])
            return 0
        if args.action == "remove":
            if not args.person:
                raise AdminError("who? python -m app people remove ID")
            person_id = _person_id(client, args.person)
            _call(client, "DELETE", f"/v1/people/{person_id}")
            print(
                f"Removed {person_id}: their agent tokens and devices no longer work, and their "
                "pending prompts were cancelled."
            )
            return 0
        listed = _call(client, "GET", "/v1/people").json()["people"]
    if args.json:
        print(json.dumps(listed, indent=2))
        return 0
    _table(
        ("ID", "NAME", "ADDED (UTC)"),
        [(p["personId"], p["name"], _utc(p["createdAt"] or "-")) for p in listed],
    )
    return 0


def agent_token(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        person_id = _person_id(client, args.person)
        minted = _call(client, "POST", f"/v1/people/{person_id}/agent-tokens").json()
    print(minted["token"])
    print(
        f"\nAn agent token of {person_id}, shown only this once: give it to the agent as "
        f"{AGENT_TOKEN_ENV} (its prompts reach only this person's devices).",
        file=sys.stderr,
    )
    return 0


def _seen(text: str | None) -> str:
    return text[:16].replace("T", " ") if text else "never"


COMMANDS = {"pair": pair, "devices": devices, "people": people, "agent-token": agent_token}


def run(args: argparse.Namespace) -> int:
    try:
        return COMMANDS[args.command](args)
    except AdminError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

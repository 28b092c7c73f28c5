"""Pairing and devices (docs/PROTOCOL.md v1.1): the wire models, the code's shape, and the links.

A phone joins by opening `askuser://pair?url=…&code=…` (its camera reads it from a QR code);
`askuser://prompt/<id>` opens one card. The web app gets the same as page routes
(`/pair?url=…&code=…`, `/prompt/<id>`), so both are parsed here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from pydantic import Field, field_validator

from . import limits
from .base import RequestModel, ResponseModel, _invalid
from .models import UtcTime
from .text import NO_CONTROL_PATTERN, has_control

LINK_SCHEME = "askuser"

# Crockford's base32: no I, L, O or U, so a code read aloud or typed from a screen survives.
CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 8
_MISREAD = str.maketrans({"O": "0", "I": "1", "L": "1"})


def normalize_code(text: str) -> str:
    """`k7qf 2m9x`, `K7QF2M9X` and `K7QF-2M9X` are one code: upper case, `XXXX-XXXX`."""
    compact = "".join(c for c in text.upper() if c.isalnum()).translate(_MISREAD)
    if len(compact) != CODE_LENGTH:
        return compact
    return f"{compact[:4]}-{compact[4:]}"


def url_problem(value: str) -> str | None:
    """What is wrong with a gateway URL, as a string key ("url_scheme": not http:// or
    https://; "url_host": no host after it), or None: the one rule the gateway's requests,
    the app's Settings and pairing all check."""
    try:
        parts = urlsplit(value.strip())
        hostname = parts.hostname
    except ValueError:  # "http://[" or a bracketed host that is no IP address
        return "url_host"
    if parts.scheme not in ("http", "https"):
        return "url_scheme"
    if not hostname:
        return "url_host"
    return None


# `url_problem(value) is None` as a JSON Schema pattern, for the OpenAPI document: http:// or
# https:// (any case), then a host (after any user info) before the path, query or fragment.
# A little stricter than the rule (no IPv6 literal, one `@`): never looser.
HTTP_URL_PATTERN = (
    r"^\s*[Hh][Tt][Tt][Pp][Ss]?://(?:[^/?#@\[\]]*@)?"
    r"[^/?#:@\s\[\]][^/?#@\[\]]*(?:[/?#]|$)"
)


def _without_control(value: str | None) -> str | None:
    """A name or code holds no control character (a NUL broke PostgreSQL's queries, #52)."""
    if value is not None and has_control(value):
        raise _invalid("must not hold control characters (such as NUL or a new line)")
    return value


def _http_url(value: str) -> str:
    value = value.strip()
    if url_problem(value) is not None:
        raise _invalid("must be an http:// or https:// URL, e.g. http://192.168.1.20:8765")
    return value.rstrip("/")


class PairingRequest(RequestModel):
    """`POST /v1/pairings` (admin): an optional label and the gateway URL to put in the link."""

    name: str | None = Field(
        default=None,
        max_length=limits.MAX_DEVICE_NAME_CHARS,
        json_schema_extra={"pattern": NO_CONTROL_PATTERN},
    )
    gateway_url: str | None = Field(
        default=None,
        max_length=limits.MAX_URL_CHARS,
        json_schema_extra={"pattern": HTTP_URL_PATTERN},
    )  # `_url` below says it in its own words
    # The person the paired device will belong to (docs/PROTOCOL.md v1.3); none: the default.
    person_id: str | None = Field(
        default=None,
        max_length=limits.MAX_IDENTIFIER_CHARS,
        json_schema_extra={"pattern": NO_CONTROL_PATTERN},
    )

    @field_validator("name", "person_id")
    @classmethod
    def _no_control(cls, value: str | None) -> str | None:
        return _without_control(value)

    @field_validator("gateway_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else _http_url(value)


class Pairing(ResponseModel):
    code: str
    expires_at: UtcTime
    link: str


class PairDeviceRequest(RequestModel):
    """`POST /v1/devices` (no token): the code shown by `python -m app pair`, and a name."""

    code: str = Field(max_length=64, json_schema_extra={"pattern": NO_CONTROL_PATTERN})
    name: str | None = Field(
        default=None,
        max_length=limits.MAX_DEVICE_NAME_CHARS,
        json_schema_extra={"pattern": NO_CONTROL_PATTERN},
    )

    @field_validator("code")
    @classmethod
    def _code(cls, value: str) -> str:
        return _without_control(value) or ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return (_without_control(value) or "").strip() or None


class PairedDevice(ResponseModel):
    device_id: str
    token: str
    name: str


class DeviceInfo(ResponseModel):
    device_id: str
    name: str
    person_id: str
    created_at: UtcTime
    last_seen_at: UtcTime | None = None


class DeviceList(ResponseModel):
    devices: list[DeviceInfo]


# ---- links --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairLink:
    gateway_url: str
    code: str


@dataclass(frozen=True)
class PromptLink:
    prompt_id: str


def pair_link(gateway_url: str, code: str) -> str:
    return f"{LINK_SCHEME}://pair?" + urlencode({"url": gateway_url, "code": code})


def web_pair_link(app_url: str, gateway_url: str, code: str) -> str:
    """The same pairing for the app in a browser: its page route `/pair?url=…&code=…`."""
    return f"{app_url.rstrip('/')}/pair?" + urlencode({"url": gateway_url, "code": code})


def prompt_link(prompt_id: str) -> str:
    return f"{LINK_SCHEME}://prompt/{quote(prompt_id, safe='')}"


def parse_link(text: str) -> PairLink | PromptLink | None:
    """A pairing or prompt link (`askuser://…`, or the web app's `/pair?…`, `/prompt/…`,
    `#/…`, or a whole `https://host/pair?…`); None for anything else."""
    text = text.strip()
    parts = urlsplit(text)
    if parts.scheme == LINK_SCHEME:
        where, rest = parts.netloc, parts.path
    else:
        path = parts.path
        if parts.fragment.startswith("/"):  # a hash route: `…/#/pair?…`
            fragment = urlsplit(parts.fragment)
            path, parts = fragment.path, fragment
        where, _, rest = path.lstrip("/").partition("/")
        rest = "/" + rest if rest else ""
    query = parse_qs(parts.query)
    if where in ("pair", "") and "url" in query and "code" in query:
        # `askuser://pair?…`; a built app may be handed the link without its host: `/?…`
        url, code = query["url"][0], query["code"][0]
        try:
            url = _http_url(url)
        except ValueError:
            return None
        return PairLink(url, normalize_code(code)) if code.strip() else None
    if where == "prompt" and rest.strip("/"):
        return PromptLink(rest.strip("/"))
    if where.startswith("pr_") and not rest.strip("/"):  # `askuser://prompt/pr_…` without host
        return PromptLink(where)
    return None

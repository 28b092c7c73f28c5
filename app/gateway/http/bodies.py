"""Request bodies: read under a size limit, and decoded as JSON safely (any bytes give a value
or a 4xx saying what is wrong). Part of the HTTP floor."""

from __future__ import annotations

import json
import re
from typing import Any

from app.protocol import (
    BODY_REQUIRED,
    NOT_A_JSON_BODY,
    ErrorCode,
    FieldError,
    ProtocolError,
    json_error_message,
    limits,
)

MAX_JSON_DEPTH = 16  # the deepest real body (an answer's values) is 3 levels
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _too_large(max_bytes: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.PAYLOAD_TOO_LARGE, f"request bodies are limited to {max_bytes} bytes"
    )


def refuse_declared_too_large(
    scope: dict[str, Any], max_bytes: int = limits.MAX_BODY_BYTES
) -> None:
    """413 for a body declared longer than `max_bytes`, before a byte of it is read."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > max_bytes:
            raise _too_large(max_bytes)


async def read_body(
    scope: dict[str, Any], receive: Any, max_bytes: int = limits.MAX_BODY_BYTES
) -> bytes | None:
    """The whole request body, or None if the client went away; 413 (ProtocolError) past
    `max_bytes`, whether or not the request declared its length."""
    refuse_declared_too_large(scope, max_bytes)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > max_bytes:
            raise _too_large(max_bytes)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _bad_body(code: str, message: str, path: str = "") -> ProtocolError:
    return ProtocolError(
        code, f"{path}: {message}" if path else message, [FieldError(path, message)]
    )


def decode_json_body(headers: Any, raw: bytes, code: str, required: bool = True) -> Any:
    """The body's JSON object (None for an empty optional body), or a ProtocolError with `code`.

    Whatever the bytes, the answer is a value or a 4xx: not JSON, not UTF-8, not an object,
    nested too deep, integers past Python's digit limit, and lone surrogates written as `\\ud800`
    escapes (text no store or screen can hold) are each refused with what is wrong. A body
    without a content type is read as JSON (so `curl -d` works); one declared as something
    else is refused.
    """
    for name, value in headers:
        if name == b"content-type":
            kind = value.decode("latin-1").split(";")[0].strip().lower()
            if kind != "application/json" and not kind.endswith("+json"):
                raise _bad_body(code, NOT_A_JSON_BODY)
    if not raw.strip():
        if not required:
            return None
        raise _bad_body(code, BODY_REQUIRED)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _bad_body(code, json_error_message(exc.msg, exc.pos)) from None
    except UnicodeDecodeError as exc:
        raise _bad_body(code, json_error_message(f"not UTF-8 ({exc.reason})", exc.start)) from None
    except RecursionError:
        raise _bad_body(code, f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # an integer past the interpreter's digit limit
        raise _bad_body(code, json_error_message(str(exc).split(";")[0], None)) from None
    if not isinstance(data, dict):
        raise _bad_body(code, f"must be an object ({{...}}), got {_json_kind(data)}")
    if b"\\u" in raw or raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:
        _check_tree(data, code)  # only escapes make surrogates; only that many brackets, depth
    return data


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kinds: dict[type, str] = {list: "an array", str: "a string"}
    return kinds.get(type(value), "a number")


def _check_tree(data: dict[str, Any], code: str) -> None:
    """Depth and lone surrogates, walked without recursion (the input chooses the depth)."""
    stack: list[tuple[str, Any, int]] = [("", data, 1)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, str):
            if _LONE_SURROGATE.search(value):
                raise _bad_body(code, "contains a lone surrogate (\\ud800-\\udfff): not text", path)
            continue
        if depth > MAX_JSON_DEPTH and isinstance(value, dict | list):
            raise _bad_body(code, f"nested deeper than {MAX_JSON_DEPTH} levels", path)
        if isinstance(value, dict):
            for key, item in value.items():
                sub = f"{path}.{key}" if path else key
                if _LONE_SURROGATE.search(key):
                    raise _bad_body(code, "a key holds a lone surrogate: not text", path)
                stack.append((sub, item, depth + 1))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item, depth + 1) for i, item in enumerate(value))

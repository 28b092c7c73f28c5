"""The OpenAPI 3.1 document, generated from the route table and the contract's models.

Nothing here is written by hand per endpoint: paths, parameters, bodies, responses and error
statuses all come from each `Endpoint`, so the document cannot drift from what is served.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from app.protocol import ErrorBody, limits
from app.protocol.text import NO_CONTROL_PATTERN

from .connections import MAX_HEADER_BYTES
from .routing import Endpoint

_REF = "#/components/schemas/{model}"

_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    204: "Done; no body",
    400: "A malformed MCP message or session header (a JSON-RPC error, from the MCP SDK).",
    401: "Missing or unknown token (`unauthorized`).",
    403: "A token of the wrong role (`forbidden`), not the main session, or an unknown, used "
    "or expired pairing code (`pairing_invalid`).",
    404: "No such prompt or device (`not_found`), or an MCP session that ended.",
    408: "The request line, headers or body did not all arrive in time (`request_timeout`); "
    "the connection is closed.",
    409: "No longer pending (`already_resolved`, with the record), `pending_exists`, or a key "
    "reused with a different request (`idempotency_conflict`).",
    410: "The cursor is older than the events kept (`cursor_expired`): re-sync.",
    406: "The client does not accept both JSON and SSE (MCP Streamable HTTP).",
    431: f"Request line and headers over {MAX_HEADER_BYTES // 1024} KiB (`headers_too_large`); "
    "the connection is closed.",
    413: f"The request body is over {limits.MAX_BODY_BYTES // 1024} KiB (`payload_too_large`).",
    422: "Invalid input, with `fields` naming each problem.",
    429: "Too many wrong pairing codes or answer links from this address (`too_many_attempts`), "
    "on /mcp, this agent token's or person's share of MCP sessions is in use; on a create, "
    "this agent token or person has as many prompts pending as allowed (`too_many_pending`); "
    "on a draft, this device sends drafts faster than a person types (`too_many_drafts`).",
    503: "The store could not take the write (`unavailable`): nothing changed; retry.",
}


# /mcp speaks JSON-RPC (MCP Streamable HTTP, served by the SDK): its messages and errors.
_JSONRPC_MESSAGE = {
    "description": "A JSON-RPC message of MCP; without `Mcp-Session-Id`, only `initialize`.",
    "anyOf": [
        {  # a request or, without an id, a notification
            "type": "object",
            "required": ["jsonrpc", "method"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"type": ["string", "integer"]},
                "method": {"type": "string"},
                "params": {"type": "object"},
            },
        },
        {  # the answer to a request of the server's
            "type": "object",
            "required": ["jsonrpc", "id"],
            "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
            "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]}},
        },
    ],
}
_JSONRPC_ERROR = {
    "type": "object",
    "required": ["jsonrpc", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        },
    },
}

Mode = Literal["validation", "serialization"]
ModelKey = tuple[type[BaseModel], Mode]


def _models(endpoints: tuple[Endpoint, ...]) -> list[ModelKey]:
    keyed: dict[ModelKey, None] = {(ErrorBody, "serialization"): None}
    for endpoint in endpoints:
        if endpoint.body is not None:
            keyed[(endpoint.body, "validation")] = None
        responses = (
            endpoint.response if isinstance(endpoint.response, tuple) else (endpoint.response,)
        )
        for model in responses:
            if isinstance(model, type) and issubclass(model, BaseModel):
                keyed[(model, "serialization")] = None
    return list(keyed)


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter is a string or absent: `X | None` is described as X."""
    options = [s for s in schema.get("anyOf", ()) if s.get("type") != "null"]
    if len(options) == 1:
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        return {**options[0], **rest}
    return schema


def _parameters(endpoint: Endpoint) -> list[dict[str, Any]]:
    no_control = {"type": "string", "pattern": NO_CONTROL_PATTERN}  # else 422 (#52)
    params = [
        {"name": name, "in": "path", "required": True, "schema": dict(no_control)}
        for name in endpoint.pattern.groupindex
    ]
    if endpoint.query is not None:
        schema = endpoint.query.model_json_schema(ref_template=_REF)
        required = set(schema.get("required", ()))
        for name, prop in schema.get("properties", {}).items():
            prop = _not_null(prop)
            prop.pop("title", None)
            if prop.get("type") == "string" and "pattern" not in prop and "enum" not in prop:
                prop["pattern"] = NO_CONTROL_PATTERN
            params.append(
                {"name": name, "in": "query", "required": name in required, "schema": prop}
            )
    return params


def _error_statuses(endpoint: Endpoint) -> list[int]:
    statuses = set(endpoint.errors) | {408, 431}  # the connection's, before any route
    if endpoint.role is not None:
        statuses |= {401, 403}
    if endpoint.body is not None or endpoint.query is not None or endpoint.pattern.groupindex:
        statuses.add(422)
    if endpoint.changes:
        statuses |= {413, 503}
    return sorted(statuses)


def _operation(endpoint: Endpoint, refs: dict[Any, Any]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": _STATUS_TEXT[endpoint.status]}
    if endpoint.response == "text":
        success["content"] = {"text/plain": {"schema": {"type": "string"}}}
    elif endpoint.response == "html":
        success["content"] = {"text/html": {"schema": {"type": "string"}}}
    elif endpoint.response == "mcp":
        success["description"] = "JSON-RPC messages of MCP Streamable HTTP"
        success["content"] = {"application/json": {}, "text/event-stream": {}}
    elif isinstance(endpoint.response, tuple):
        one_of = [refs[(m, "serialization")] for m in endpoint.response]
        success["content"] = {"application/json": {"schema": {"oneOf": one_of}}}
    elif endpoint.response is not None:
        schema = refs[(endpoint.response, "serialization")]
        success["content"] = {"application/json": {"schema": schema}}
    responses: dict[str, Any] = {str(endpoint.status): success}
    if endpoint.response == "mcp" and endpoint.method == "POST":
        responses["202"] = {"description": "A notification or a response, taken (no body)"}
    if endpoint.replays:
        responses["200"] = {"description": "Idempotent replay", **{"content": success["content"]}}
    error: dict[str, Any] = {"application/json": {"schema": refs[(ErrorBody, "serialization")]}}
    if endpoint.response == "html":  # a page's own refusals are pages too
        error["text/html"] = {"schema": {"type": "string"}}
    elif endpoint.response == "mcp":  # the SDK's refusals: JSON-RPC errors, or a line of text
        either = [error["application/json"]["schema"], {"$ref": _REF.format(model="JsonRpcError")}]
        error = {
            "application/json": {"schema": {"anyOf": either}},
            "text/plain": {"schema": {"type": "string"}},
        }
    for status in _error_statuses(endpoint):
        responses[str(status)] = {"description": _STATUS_TEXT[status], "content": error}
    operation: dict[str, Any] = {
        "tags": [endpoint.tag],
        "summary": endpoint.summary,
        "description": (endpoint.handler.__doc__ or "").strip(),
        "operationId": endpoint.handler.__name__,
        "parameters": _parameters(endpoint),
        "responses": dict(sorted(responses.items())),
    }
    if endpoint.response == "mcp" and endpoint.method == "POST":
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": _REF.format(model="JsonRpcMessage")}}
            },
        }
    if endpoint.body is not None:
        operation["requestBody"] = {
            "required": endpoint.body_required,
            "content": {"application/json": {"schema": refs[(endpoint.body, "validation")]}},
        }
    if endpoint.role is not None:
        operation["security"] = [{"bearer": []}]
    return operation


def openapi_document(
    endpoints: tuple[Endpoint, ...], *, title: str, version: str, description: str
) -> bytes:
    """The document as JSON bytes, built once at start-up and served as they are."""
    refs, definitions = models_json_schema(_models(endpoints), ref_template=_REF)
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        if endpoint.in_schema:
            operation = _operation(endpoint, refs)
            paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    document = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version, "description": description},
        "paths": paths,
        "components": {
            "schemas": {
                **definitions.get("$defs", {}),
                "JsonRpcMessage": _JSONRPC_MESSAGE,
                "JsonRpcError": _JSONRPC_ERROR,
            },
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An agent, device or admin token.",
                }
            },
        },
    }
    return json.dumps(document, indent=1).encode()

"""An MkDocs hook: the API reference page (api.md) is written at build time from the gateway's own
OpenAPI document, made from the one endpoint table (app/gateway/http/endpoints.py), so the page
cannot drift from what is served. Its placeholder line is replaced by a table per tag."""

from __future__ import annotations

import json
from typing import Any

PLACEHOLDER = "<!-- api-reference -->"


def _document() -> dict[str, Any]:
    from app.gateway.http.endpoints import openapi_json

    return json.loads(openapi_json())


def _schema_name(content: dict[str, Any] | None) -> str:
    if not content:
        return "—"
    schema = next(iter(content.values())).get("schema") or {}
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}`"
    if "oneOf" in schema:
        return " or ".join(f"`{s['$ref'].rsplit('/', 1)[-1]}`" for s in schema["oneOf"])
    return f"`{next(iter(content))}`"


def reference() -> str:
    document = _document()
    by_tag: dict[str, list[str]] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = _schema_name((operation.get("requestBody") or {}).get("content"))
            statuses = sorted(operation["responses"])
            success = next(
                s
                for s in statuses
                if s.startswith("2")
                and operation["responses"][s]["description"] != "Idempotent replay"
            )
            answer = _schema_name(operation["responses"][success].get("content"))
            row = (
                f"| `{method.upper()} {path}` | {operation['summary']} | {body} | "
                f"{success} {answer} | {', '.join(s for s in statuses if not s.startswith('2'))} |"
            )
            by_tag.setdefault(operation["tags"][0], []).append(row)
    out = []
    for tag, rows in by_tag.items():
        out += [
            f"## {tag}",
            "",
            "| endpoint | what | body | success | errors |",
            "|---|---|---|---|---|",
            *rows,
            "",
        ]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if PLACEHOLDER in markdown:
        return markdown.replace(PLACEHOLDER, reference())
    return markdown

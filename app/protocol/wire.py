"""JSON for the pages served most (a device's events, the prompt list), written from parts that
are already JSON — each prompt's record is stored encoded — instead of a model → dict → JSON
round trip per page. The keys and their order come from the response model itself, so the
bytes and the schema `/openapi.json` publishes cannot drift apart."""

from __future__ import annotations

import json

from pydantic import BaseModel

from .records import Draft, Event, EventsPage, PendingResult, PromptList, ToolResult


class RawObject:
    """Writes a model's JSON object from values already encoded as JSON, one per field (by the
    field's name; the key on the wire is its alias). A field left out is a KeyError, an
    unknown one a TypeError: never a body the schema does not describe."""

    __slots__ = ("_fields", "_template")

    def __init__(self, model: type[BaseModel]) -> None:
        fields = model.model_fields
        self._fields = frozenset(fields)
        pairs = (f"{json.dumps(f.alias or name)}:{{{name}}}" for name, f in fields.items())
        self._template = "{{" + ",".join(pairs) + "}}"  # the object's own braces, escaped

    def __call__(self, **encoded: str) -> str:
        if not self._fields.issuperset(encoded):
            raise TypeError(f"not fields of this object: {sorted(set(encoded) - self._fields)}")
        return self._template.format(**encoded)


EVENT = RawObject(Event)
EVENTS_PAGE = RawObject(EventsPage)
PROMPT_LIST = RawObject(PromptList)


def json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def record_with_draft(record_json: str, draft: Draft) -> str:
    """A `prompt.draft` event's record: the prompt as stored, and the draft, which only that
    event carries (the field is never written with a record)."""
    return f'{record_json[:-1]},"draft":{draft.model_dump_json(by_alias=True)}}}'


def events_page(events: list[tuple[int, str, str]], cursor: int, server_time: str) -> bytes:
    """An `EventsPage`: `events` as (seq, type, the prompt's record as JSON)."""
    items = ",".join(
        EVENT(seq=str(seq), type=json_string(kind), prompt=record) for seq, kind, record in events
    )
    return EVENTS_PAGE(
        events=f"[{items}]", cursor=json_string(str(cursor)), server_time=json_string(server_time)
    ).encode()


def prompt_list(records: list[str], cursor: int, server_time: str) -> bytes:
    """A `PromptList`: `records` are the prompts' records as JSON, newest first."""
    return PROMPT_LIST(
        prompts=f"[{','.join(records)}]",
        cursor=json_string(str(cursor)),
        server_time=json_string(server_time),
    ).encode()


def result_body(result: ToolResult | PendingResult) -> bytes:
    """`GET /result`'s body: the tool result, or `{"status": "pending", …}`, as JSON with the
    separators every other response of the gateway uses."""
    wire = result.to_wire()
    return json.dumps(wire, ensure_ascii=False, separators=(",", ":")).encode()

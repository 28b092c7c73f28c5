"""The pages written from encoded parts are exactly what their response models describe."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from app.protocol import EventsPage, PromptList, PromptRecord
from app.protocol.records import Health
from app.protocol.wire import RawObject, events_page, prompt_list

from .factories import question


def record_json(prompt_id: str, header: str = "Target") -> str:
    record = PromptRecord.model_validate(
        {
            "id": prompt_id,
            "sessionKey": "main",
            "questions": [question(header=header)],
            "status": "pending",
            "version": 1,
            "createdAt": "2026-12-04T10:00:00Z",
            "expiresAt": "2026-12-04T10:15:00Z",
        }
    )
    return json.dumps(record.to_wire(), ensure_ascii=False)


NOW = "2026-12-04T10:00:01.000Z"


def test_an_events_page_is_an_events_page():
    body = events_page([(7, "prompt.created", record_json("pr_a"))], 7, NOW)
    page = EventsPage.model_validate_json(body)
    assert [(e.seq, e.type, e.prompt.id) for e in page.events] == [(7, "prompt.created", "pr_a")]
    assert page.cursor == "7" and page.server_time == datetime(2026, 12, 4, 10, 0, 1, tzinfo=UTC)
    assert list(json.loads(body)) == ["events", "cursor", "serverTime"]


def test_a_prompt_list_is_a_prompt_list_and_an_empty_one_too():
    body = prompt_list([record_json("pr_b"), record_json("pr_a")], 12, NOW)
    assert [p.id for p in PromptList.model_validate_json(body).prompts] == ["pr_b", "pr_a"]
    assert PromptList.model_validate_json(prompt_list([], 0, NOW)).prompts == []


@given(st.text(min_size=1, max_size=12))
def test_any_text_in_a_record_survives_the_page(header):
    try:
        encoded = record_json("pr_a", header)
    except ValidationError:
        assume(False)  # a header the contract refuses (blank, surrounded by spaces)
    assume(json.loads(encoded)["questions"][0]["header"] == header)
    body = events_page([(1, "prompt.created", encoded)], 1, NOW)
    assert EventsPage.model_validate_json(body).events[0].prompt.questions[0].header == header


def test_a_field_left_out_or_unknown_is_refused_not_written():
    health = RawObject(Health)
    assert json.loads(health(status='"ok"')) == {"status": "ok"}
    with pytest.raises(KeyError):
        health()
    with pytest.raises(TypeError, match="surprise"):
        health(status='"ok"', surprise="1")

import pytest

from app.protocol import (
    ErrorCode,
    ProtocolError,
    canonicalize_answers,
    tool_result,
    validate_prompt,
)
from app.protocol.records import PromptRecord

from .factories import option, prompt, question

QUESTIONS = validate_prompt(
    prompt(
        question("target"),
        question(
            "features",
            header="Features",
            question="Which features ship?",
            options=[option("Search"), option("Export, CSV"), option("Dark mode")],
            multiSelect=True,
        ),
    )
).questions


def errors(answers) -> dict[str, str]:
    with pytest.raises(ProtocolError) as info:
        canonicalize_answers(QUESTIONS, answers)
    assert info.value.code == ErrorCode.INVALID_ANSWER
    return {f.path: f.message for f in info.value.fields}


def test_labels_are_canonicalised_and_free_text_kept():
    result = canonicalize_answers(
        QUESTIONS,
        {"target": ["  production "], "features": ["search", "EXPORT, CSV", " my own idea "]},
    )
    assert result == {
        "target": ["Production"],
        "features": ["Search", "Export, CSV", "my own idea"],
    }


def test_missing_question():
    assert errors({"target": ["Production"]}) == {
        "answers.features": "required: 'Features' has no answer"
    }


def test_empty_list():
    assert "at least one" in errors({"target": [], "features": ["Search"]})["answers.target"]


def test_blank_value():
    assert (
        errors({"target": ["  "], "features": ["Search"]})["answers.target[0]"]
        == "must not be blank"
    )


def test_two_values_for_single_select():
    msg = errors({"target": ["Production", "Staging (Recommended)"], "features": ["Search"]})
    assert msg["answers.target"] == "single-select: exactly one answer allowed, got 2"


def test_same_label_twice_in_any_case_counts_once():
    result = canonicalize_answers(
        QUESTIONS, {"target": ["production", "Production"], "features": ["Search", "search"]}
    )
    assert result == {"target": ["Production"], "features": ["Search"]}


def test_unknown_id():
    msg = errors({"target": ["Production"], "features": ["Search"], "colour": ["red"]})
    assert msg["answers.colour"].startswith("unknown question id")


@pytest.mark.parametrize("value", ["Production", None, 5, ["ok", 3]])
def test_values_must_be_arrays_of_strings(value):
    assert errors({"target": value, "features": ["Search"]})["answers.target"] == (
        "must be an array of strings"
    )


def test_free_text_too_long():
    assert (
        "at most 2000"
        in errors({"target": ["x" * 2001], "features": ["Search"]})["answers.target[0]"]
    )


def _record(status, answers=None):
    return PromptRecord.model_validate(
        {
            "id": "pr_1",
            "sessionKey": "main",
            "questions": [q.to_wire() for q in QUESTIONS],
            "status": status,
            "createdAt": "2026-01-01T00:00:00Z",
            "expiresAt": "2026-01-01T00:15:00Z",
            "answers": answers,
        }
    )


def test_tool_results():
    assert tool_result(_record("pending")) is None
    assert tool_result(_record("answered", {"target": ["Production"]})).to_wire() == {
        "status": "answered",
        "answers": {"answers": {"target": ["Production"]}},
    }
    for status in ("expired", "dismissed", "cancelled"):
        assert tool_result(_record(status)).to_wire() == {"status": "no_answer", "reason": status}

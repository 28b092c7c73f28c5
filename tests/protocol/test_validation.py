import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.protocol import ErrorCode, ProtocolError, limits, validate_prompt

from .factories import option, prompt, question


def field_paths(exc: ProtocolError) -> dict[str, str]:
    return {f.path: f.message for f in exc.fields}


def rejected(body, code=ErrorCode.INVALID_PROMPT) -> dict[str, str]:
    with pytest.raises(ProtocolError) as info:
        validate_prompt(body)
    assert info.value.code == code
    return field_paths(info.value)


def test_import_is_pure():
    code = (
        "import app.protocol, sys; "
        "print(sorted({'flet','httpx','fastapi','uvicorn'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("count, ok", [(0, False), (1, True), (3, True), (4, False)])
def test_question_count(count, ok):
    body = prompt(*[question(f"q{i}") for i in range(count)]) if count else prompt()
    body["questions"] = [question(f"q{i}") for i in range(count)]
    if ok:
        assert len(validate_prompt(body).questions) == count
    else:
        assert rejected(body)["questions"] == f"1 to 3 questions allowed, got {count}"


@pytest.mark.parametrize("count, ok", [(1, False), (2, True), (4, True), (5, False)])
def test_option_count(count, ok):
    opts = [option(f"Choice {i}") for i in range(count)]
    body = prompt(question("a"), question("b", options=opts))
    if ok:
        assert len(validate_prompt(body).questions[1].options) == count
    else:
        assert rejected(body)["questions[1].options"] == f"2 to 4 options allowed, got {count}"


@pytest.mark.parametrize(
    "header, stored",
    [
        ("Twelve chars", "Twelve chars"),  # exactly 12
        ("Thirteen char", "Thirteen cha"),  # 13 -> 12
        ("  Padded  ", "Padded"),
        ("مقصد استقرار", "مقصد استقرار"),  # 12 Persian characters
        ("مقصدِ استقرار", "مقصدِ استقرا"),  # 13 with a combining kasra: cut stays whole
        ("Deploy 👨‍👩‍👧 x", "Deploy 👨‍👩‍👧"),  # 7 + a 5-code-point family = 12
        ("Deploy it 👨‍👩‍👧", "Deploy it"),  # the family would be split: dropped whole
        ("Go now, ok 🇮🇷", "Go now, ok"),  # half a flag is never left
        ("abcdefghijk\u200cx", "abcdefghijk"),  # no dangling joiner at the end
        ("abcdefghijke\u0301", "abcdefghijk"),  # e + combining acute at the cut
        ("abcdefghijk👍🏽", "abcdefghijk"),  # thumbs up + skin tone is one character
        ("نمی\u200cخواهمش بله", "نمی\u200cخواهمش ب"),  # ZWNJ inside a word is kept
    ],
)
def test_header_is_cut_without_splitting_characters(header, stored):
    result = validate_prompt(prompt(question(header=header))).questions[0].header
    assert result == stored
    assert len(result) <= limits.MAX_HEADER_CHARS


def test_blank_header_and_question_rejected():
    fields = rejected(prompt(question(header="   ", question="\t")))
    assert fields["questions[0].header"] == "must not be blank"
    assert fields["questions[0].question"] == "must not be blank"


def test_question_length():
    assert validate_prompt(prompt(question(question="x" * 1000))).questions[0].question
    fields = rejected(prompt(question(question="x" * 1001)))
    assert fields["questions[0].question"] == "at most 1000 characters, got 1001"


@pytest.mark.parametrize("length, ok", [(64, True), (65, False)])
def test_label_length(length, ok):
    body = prompt(question(options=[option("L" * length), option("Two")]))
    if ok:
        assert validate_prompt(body).questions[0].options[0].label == "L" * length
    else:
        assert rejected(body)["questions[0].options[0].label"] == "at most 64 characters, got 65"


def test_labels_and_descriptions_are_trimmed_blank_description_dropped():
    body = prompt(question(options=[option("  A  ", "  why  "), option("B", "   ")]))
    q = validate_prompt(body).questions[0]
    assert [o.label for o in q.options] == ["A", "B"]
    assert q.options[0].description == "why"
    assert q.options[1].description is None
    assert q.to_wire()["options"][1] == {"label": "B"}


def test_description_length():
    ok = prompt(question(options=[option("A", "d" * 200), option("B")]))
    assert validate_prompt(ok)
    fields = rejected(prompt(question(options=[option("A", "d" * 201), option("B")])))
    assert fields["questions[0].options[0].description"] == "at most 200 characters, got 201"


def test_blank_label_rejected():
    fields = rejected(prompt(question(options=[option("  "), option("B")])))
    assert fields["questions[0].options[0].label"] == "must not be blank"


@pytest.mark.parametrize("clash", ["staging", "  STAGING ", "Staging"])
def test_labels_clash_after_trim_and_case_fold(clash):
    fields = rejected(prompt(question(options=[option("Staging"), option(clash)])))
    assert "must be unique ignoring case" in fields["questions[0].options"]


@pytest.mark.parametrize(
    "label",
    [
        "Other",
        "other",
        "OTHER",
        "Other…",
        "other...",
        "Other (please specify)",
        "Other: type it",
        "Other.",
        "  other  ",
        "Other - specify",
    ],
)
def test_authored_other_rejected(label):
    fields = rejected(prompt(question(options=[option("Staging"), option(label)])))
    assert "free-text answer is always offered" in fields["questions[0].options[1].label"]


@pytest.mark.parametrize("label", ["Other region", "Otherwise", "Another", "Others' choice"])
def test_legitimate_labels_starting_like_other_accepted(label):
    assert validate_prompt(prompt(question(options=[option("Staging"), option(label)])))


@pytest.mark.parametrize(
    "qid, ok",
    [
        ("deploy_target", True),
        ("Deploy Target", False),
        ("1st", False),
        ("a", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("_x", False),
        ("db-name", False),
        ("", False),
    ],
)
def test_question_ids(qid, ok):
    body = prompt(question(qid))
    if ok:
        assert validate_prompt(body).questions[0].id == qid
    else:
        assert "questions[0].id" in rejected(body)


def test_duplicate_ids_rejected():
    fields = rejected(prompt(question("db"), question("db")))
    assert fields["questions"] == "question ids must be unique: 'db' appears twice"


@pytest.mark.parametrize(
    "raw, stored",
    [
        (29, 30),
        (30, 30),
        (3600, 3600),
        (3601, 3600),
        (900.0, 900),
        (None, 900),
        (-5, 30),
        (10**9, 3600),
    ],
)
def test_timeout_clamped(raw, stored):
    body = prompt() if raw is None else prompt(timeoutSeconds=raw)
    assert validate_prompt(body).timeout_seconds == stored


@pytest.mark.parametrize("raw", [900.5, "900", True, False, [900], float("inf")])
def test_timeout_must_be_an_integral_json_number(raw):
    fields = rejected(prompt(timeoutSeconds=raw))
    assert "timeoutSeconds" in fields


def test_timeout_from_json_text():
    assert (
        validate_prompt(
            json.loads(
                '{"sessionKey":"s","questions":['
                + json.dumps(question())
                + '],"timeoutSeconds":900.0}'
            )
        ).timeout_seconds
        == 900
    )


@pytest.mark.parametrize(
    "where, body",
    [
        ("unknownField", prompt(unknownField=1)),
        ("questions[0].extra", prompt(question(extra=True))),
        (
            "questions[0].options[0].icon",
            prompt(question(options=[{"label": "A", "icon": "x"}, option("B")])),
        ),
    ],
)
def test_unknown_properties_rejected(where, body):
    assert rejected(body)[where] == "unknown property: the contract does not define it"


def test_multiselect_must_be_boolean():
    assert rejected(prompt(question(multiSelect="yes")))["questions[0].multiSelect"]
    assert validate_prompt(prompt(question(multiSelect=True))).questions[0].multi_select


def test_session_key_rules():
    assert rejected({"questions": [question()]})["sessionKey"] == "required"
    assert "sessionKey" in rejected(prompt(sessionKey=""))
    assert "sessionKey" in rejected(prompt(sessionKey="k" * 201))
    assert validate_prompt(prompt(sessionKey="k" * 200))


def test_non_main_session_is_forbidden():
    with pytest.raises(ProtocolError) as info:
        validate_prompt(prompt(sessionKind="subagent"))
    assert info.value.code == ErrorCode.NOT_MAIN_SESSION
    assert info.value.http_status == 403


def test_error_body_shape():
    with pytest.raises(ProtocolError) as info:
        validate_prompt(prompt(question(options=[option("only")])))
    body = info.value.to_body()
    assert body["error"]["code"] == "invalid_prompt"
    assert body["error"]["fields"] == [
        {"path": "questions[0].options", "message": "2 to 4 options allowed, got 1"}
    ]
    assert "questions[0].options: 2 to 4 options allowed, got 1" in body["error"]["message"]


@pytest.mark.parametrize("body", [None, [], "x", 5, {"questions": "nope", "sessionKey": "s"}])
def test_wrong_shapes_give_contract_errors(body):
    with pytest.raises(ProtocolError) as info:
        validate_prompt(body)
    assert info.value.code == ErrorCode.INVALID_PROMPT
    assert info.value.fields


def test_an_error_body_reads_back_as_the_error_that_wrote_it():
    """One builder (`to_body`) and one reader (`error_from_body`) for the contract's errors;
    a body of another shape is named after its status."""
    from app.protocol import ErrorCode, FieldError, ProtocolError, error_from_body

    written = ProtocolError(
        ErrorCode.INVALID_PROMPT,
        "questions[0].options: 2 to 4 options allowed",
        [FieldError("questions[0].options", "2 to 4 options allowed")],
        extra={"promptId": "pr_1"},
    )
    assert error_from_body(written.to_body(), 422) == written
    for other in (None, "<html>bad gateway</html>", {"detail": "x"}, {"error": "x"}, []):
        read = error_from_body(other, 502, "Bad Gateway")
        assert (read.code, read.message) == ("http_502", "Bad Gateway")


@given(st.text(max_size=8))
def test_the_documents_not_blank_pattern_is_the_validators_rule(text):
    """The OpenAPI document says "not blank" with a pattern made from `is_blank` itself (#39):
    the two agree on any text, invisible format characters and odd spaces included."""
    import re

    from app.protocol.text import is_blank, not_blank_pattern

    assert (re.search(not_blank_pattern(), text) is None) == is_blank(text)


@pytest.mark.parametrize(
    "invisible", ["\u200b", "\u00ad", "\u2060", "\ufeff", "\x1d", "\U000e0020"]
)
def test_the_not_blank_pattern_knows_each_invisible_character(invisible):
    import re

    from app.protocol.text import not_blank_pattern

    assert re.search(not_blank_pattern(), invisible * 3) is None
    assert re.search(not_blank_pattern(), invisible + "a") is not None

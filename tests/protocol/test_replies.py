import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.protocol import (
    ErrorCode,
    ProtocolError,
    parse_reply,
    render_prompt_text,
    validate_prompt,
)

from .factories import option, prompt, question


def questions_of(*qs):
    return validate_prompt(prompt(*qs)).questions


SINGLE = questions_of(
    question(
        "target", options=[option("Staging (Recommended)"), option("Production"), option("Local")]
    )
)
MULTI = questions_of(
    question(
        "features",
        header="Features",
        multiSelect=True,
        options=[option("Search"), option("Export, CSV"), option("Dark")],
    )
)
SEVERAL = questions_of(
    question("target", options=[option("Staging"), option("Production")]),
    question(
        "features",
        header="Features",
        multiSelect=True,
        options=[option("Search"), option("Export"), option("Dark")],
    ),
    question("when", header="When", options=[option("Now"), option("Tonight")]),
)


def reply_error(questions, text) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_reply(questions, text)
    assert info.value.code == ErrorCode.INVALID_REPLY
    return info.value


@pytest.mark.parametrize(
    "text, value",
    [
        ("1", "Staging (Recommended)"),
        ("3", "Local"),
        (" 2 ", "Production"),
        ("0", "0"),
        ("4", "4"),
        ("production", "Production"),
        ("LOCAL", "Local"),
        ("somewhere else", "somewhere else"),
        ("۲", "Production"),
    ],
)
def test_single_question(text, value):
    assert parse_reply(SINGLE, text) == {"target": [value]}


def test_single_question_keyed_by_id_or_header():
    assert parse_reply(SINGLE, "target: 2") == {"target": ["Production"]}
    assert parse_reply(SINGLE, "Target = local") == {"target": ["Local"]}


@pytest.mark.parametrize("text", ["1:30", "https://example.com/x", r"C:\Users\me", "note: soon"])
def test_single_question_times_urls_paths_are_free_text(text):
    assert parse_reply(SINGLE, text) == {"target": [text]}


@pytest.mark.parametrize(
    "text, values",
    [
        ("1, 3", ["Search", "Dark"]),
        ("Export, CSV", ["Export, CSV"]),
        ("2; dark", ["Export, CSV", "Dark"]),
        ("1\n3", ["Search", "Dark"]),
        ("1, 1, search", ["Search"]),
        ("dark, my idea", ["Dark", "my idea"]),
        ("2", ["Export, CSV"]),
        ("1,,3", ["Search", "Dark"]),
    ],
)
def test_multi_select(text, values):
    assert parse_reply(MULTI, text) == {"features": values}


def test_several_questions_in_order():
    assert parse_reply(SEVERAL, "2\n1, 3\ntonight") == {
        "target": ["Production"],
        "features": ["Search", "Dark"],
        "when": ["Tonight"],
    }


def test_several_questions_keyed_any_way_and_blank_lines():
    text = "\nWHEN: now\n\nfeatures = export\n1: staging\n"
    assert parse_reply(SEVERAL, text) == {
        "target": ["Staging"],
        "features": ["Export"],
        "when": ["Now"],
    }


def test_keyed_and_unkeyed_lines_mix():
    assert parse_reply(SEVERAL, "3: 1:30\nproduction\nSearch") == {
        "target": ["Production"],
        "features": ["Search"],
        "when": ["1:30"],
    }


def test_time_url_and_path_lines_are_values():
    text = "1:30\nhttps://example.com/a\nC:\\Temp\\x"
    assert parse_reply(SEVERAL, text) == {
        "target": ["1:30"],
        "features": ["https://example.com/a"],
        "when": ["C:\\Temp\\x"],
    }


def test_missing_question_named():
    exc = reply_error(SEVERAL, "1: staging\nwhen: now")
    assert exc.message.startswith("No answer for question 2 (Features).")
    assert [f.path for f in exc.fields] == ["answers.features"]


def test_too_many_lines():
    exc = reply_error(SEVERAL, "1\n2\n1\nextra")
    assert "'extra'" in exc.message


def test_single_select_given_two_answers_by_keys():
    exc = reply_error(SEVERAL, "1: staging\n1: production\n2: search\n3: now")
    assert "takes one answer" in exc.message


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_empty_reply(text):
    assert "empty" in reply_error(SINGLE, text).message


# ---- properties ------------------------------------------------------------------------------

_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
    max_size=20,
).filter(lambda s: s.strip() and not s.strip().isdigit())


@st.composite
def prompts(draw):
    count = draw(st.integers(1, 3))
    qs = []
    for i in range(count):
        labels = draw(
            st.lists(_words, min_size=2, max_size=4, unique_by=lambda s: s.strip().casefold())
        )
        qs.append(
            question(
                f"q{i}",
                header=f"H{i}",
                options=[option(lbl) for lbl in labels],
                multiSelect=draw(st.booleans()),
            )
        )
    return prompt(*qs)


def _valid_questions(body):
    try:
        return validate_prompt(body).questions
    except ProtocolError:
        return None


@given(prompts(), st.data())
def test_every_option_replied_by_number_or_label_parses_back(body, data):
    questions = _valid_questions(body)
    if questions is None:  # e.g. a drawn label reads as an authored "Other"
        return
    assert render_prompt_text(questions)
    chosen = {q.id: data.draw(st.integers(0, len(q.options) - 1)) for q in questions}
    by_label = data.draw(st.booleans())

    def word(q):
        return q.options[chosen[q.id]].label if by_label else str(chosen[q.id] + 1)

    if len(questions) == 1:
        text = word(questions[0])
    else:
        text = "\n".join(f"{n}: {word(q)}" for n, q in enumerate(questions, start=1))
    expected = {q.id: [q.options[chosen[q.id]].label] for q in questions}
    assert parse_reply(questions, text) == expected


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
        lambda children: (
            st.lists(children, max_size=5)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "questions",
                        "sessionKey",
                        "id",
                        "header",
                        "question",
                        "options",
                        "label",
                        "timeoutSeconds",
                        "multiSelect",
                        "description",
                        "x",
                    ]
                ),
                children,
                max_size=6,
            )
        ),
        max_leaves=30,
    )
)
def test_validation_raises_only_contract_errors(data):
    try:
        validate_prompt(data)
    except ProtocolError as exc:
        assert exc.code in {ErrorCode.INVALID_PROMPT, ErrorCode.NOT_MAIN_SESSION}
        assert exc.to_body()["error"]["message"]


@given(prompts(), st.text(max_size=200))
def test_parse_reply_raises_only_contract_errors(body, text):
    questions = _valid_questions(body)
    if questions is None:
        return
    try:
        answers = parse_reply(questions, text)
    except ProtocolError as exc:
        assert exc.code == ErrorCode.INVALID_REPLY
    else:
        assert set(answers) == {q.id for q in questions}
        assert all(answers[q.id] for q in questions)

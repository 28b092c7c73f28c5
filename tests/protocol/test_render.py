from app.protocol import render_prompt_text, validate_prompt

from .factories import option, prompt, question


def render(*qs) -> str:
    return render_prompt_text(validate_prompt(prompt(*qs)).questions)


def test_single_choice():
    assert render(question()) == (
        "Target — Where should this deploy?\n"
        "1. Staging (Recommended) — Safe default\n"
        "2. Production\n"
        "Other: reply with your own answer\n"
        "\n"
        "Reply with an option's number or label, or your own answer.\n"
    )


def test_multi_select_guidance():
    text = render(question(multiSelect=True))
    assert "(choose one or more)" in text
    assert text.rstrip().endswith('separated by commas (like "1, 3"), or your own answer.')


def test_several_questions_are_numbered_with_one_guidance_line():
    text = render(
        question("a"),
        question("b", header="Region", options=[option("EU"), option("US")], multiSelect=True),
    )
    lines = text.splitlines()
    assert lines[0] == "1. Target — Where should this deploy?"
    assert "   1. Staging (Recommended) — Safe default" in lines
    assert "2. Region — Where should this deploy? (choose one or more)" in lines
    assert text.count("Other: reply with your own answer") == 2
    assert lines[-1].startswith("Reply with one line per question, starting with its number")
    assert lines[-1].endswith("separate several choices with commas.")

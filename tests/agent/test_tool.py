import jsonschema
import pytest

from app.agent import (
    DESCRIPTION,
    anthropic_tool,
    mcp_tool,
    openai_tool,
    should_offer_tool,
)
from app.asking.tool import input_schema
from app.protocol import AskUserRequest, ProtocolError, parse_model

VALID = {
    "questions": [
        {
            "id": "deploy_target",
            "header": "Target",
            "question": "Where should this deploy?",
            "options": [
                {"label": "Staging (Recommended)", "description": "Safe"},
                {"label": "Production"},
            ],
            "multiSelect": False,
        }
    ],
    "timeoutSeconds": 600,
}


def test_schema_is_valid_draft_2020_12():
    schema = input_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    item = schema["properties"]["questions"]["items"]
    assert item["additionalProperties"] is False
    assert item["properties"]["options"]["items"]["additionalProperties"] is False


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.update(extra=1),
        lambda p: p["questions"][0].update(color="red"),
        lambda p: p["questions"][0].update(id="Deploy Target"),
        lambda p: p["questions"][0]["options"].pop(),
        lambda p: p.update(questions=[]),
        lambda p: p.update(timeoutSeconds="900"),
        lambda p: p["questions"][0].update(multiSelect="yes"),
    ],
)
def test_schema_and_contract_agree_on_rejections(change):
    import copy

    prompt = copy.deepcopy(VALID)
    change(prompt)
    validator = jsonschema.Draft202012Validator(input_schema())
    assert list(validator.iter_errors(prompt))
    with pytest.raises(ProtocolError):
        parse_model(AskUserRequest, prompt)


def test_valid_prompt_passes_both():
    jsonschema.Draft202012Validator(input_schema()).validate(VALID)
    assert parse_model(AskUserRequest, VALID).timeout_seconds == 600


@pytest.mark.parametrize(
    "phrase",
    [
        "truly belongs to the user",
        "Prefer one question",
        "never ask more than 3",
        '"(Recommended)"',
        'Do not add an "Other" option',
        "best judgment",
        "to ask permission to continue",
        "to confirm your own plan",
    ],
)
def test_description_carries_the_model_guidance(phrase):
    assert phrase in DESCRIPTION


def test_framework_shapes():
    assert openai_tool()["type"] == "function"
    assert openai_tool()["function"]["name"] == "ask_user"
    assert openai_tool()["function"]["parameters"] == input_schema()
    assert anthropic_tool()["input_schema"] == input_schema()
    assert anthropic_tool()["description"] == DESCRIPTION
    assert mcp_tool()["inputSchema"] == input_schema()


def test_offered_to_main_sessions_only():
    assert should_offer_tool("main") and should_offer_tool(None)
    assert not should_offer_tool("subagent")
    assert not should_offer_tool("cron")

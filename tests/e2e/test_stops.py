"""Every stop on the phone (#54), as a person sees it in the real web client: Claude Code's
permission dialog and its plan, through the real hook, as cards that show exactly what they
allow — the command, the diff, the plan — at 320 px; decided only by Submit."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.agent.test_claude_hook import _finish, _hook
from tests.agent.test_permission_hook import SUGGESTION, _permission

from .conftest import open_app, shot
from .test_app import TIMEOUT, option

pytestmark = pytest.mark.browser


def test_a_command_card_shows_the_command_and_the_rule_and_submit_decides(browser, stack, agent):
    gateway, app = stack
    asked = _permission(
        "Bash", {"command": "npm test -- --watch=false && npm run lint"}, [SUGGESTION]
    )
    hook = _hook(gateway.url, asked)
    page = open_app(browser, app.url, "phone-320")
    expect(page.get_by_text("npm test -- --watch=false && npm run lint")).to_be_visible(
        timeout=TIMEOUT
    )
    expect(page.get_by_text("Bash would run")).to_be_visible()
    said = "Allow always adds Bash(npm test:*) (this project, on this machine)"
    expect(page.get_by_text(said)).to_be_attached()
    option(page, "Allow always").click()  # one tap chooses; it decides nothing
    expect(page.get_by_role("button", name="Submit")).to_be_enabled(timeout=TIMEOUT)
    shot(page, "50-permission-command-320")
    assert hook.poll() is None  # still waiting: nothing was sent by the tap
    page.get_by_role("button", name="Submit").click()
    code, out, err = _finish(hook)
    assert code == 0, err
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedPermissions": [SUGGESTION]}


def test_an_edit_card_shows_the_diff_and_a_plan_card_its_markdown(browser, stack, agent):
    gateway, app = stack
    edit = {
        "file_path": "/home/dev/code/shop/app/config.py",
        "old_string": "DEBUG = True\nPORT = 8000",
        "new_string": "DEBUG = False\nPORT = 8000",
    }
    editing = _hook(gateway.url, _permission("Edit", edit))
    page = open_app(browser, app.url, "phone-320")
    expect(page.get_by_text("Claude Code asks to change config.py.")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("+DEBUG = False", exact=False)).to_be_attached()
    shot(page, "51-permission-diff-320")
    option(page, "Deny").click()
    page.get_by_role("button", name="Submit").click()
    assert json.loads(_finish(editing)[1])["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    plan = (
        "# Add sign-in\n\n1. Add the **users** table\n2. Send a link by email\n\n"
        "```sql\nCREATE TABLE users (id serial);\n```"
    )
    planning = _hook(
        gateway.url, {**_permission("ExitPlanMode", {"plan": plan}), "session_id": "9d"}
    )
    expect(page.get_by_text("Claude Code has a plan and asks to start on it.")).to_be_visible(
        timeout=TIMEOUT
    )
    expect(page.get_by_text("Add sign-in")).to_be_visible()  # the heading, drawn as one
    shot(page, "52-plan-markdown-320")
    option(page, "Approve the plan").click()
    page.get_by_role("button", name="Submit").click()
    assert json.loads(_finish(planning)[1])["hookSpecificOutput"]["decision"] == {
        "behavior": "allow",
        "updatedInput": {"plan": plan},  # Claude Code takes a plan's allow with its input
    }


def test_codex_cards_say_why_show_the_patch_and_never_offer_allow_always(browser, stack, agent):
    """Codex's approvals through the real `codex-hook` (#54): its reason in the question, a
    patch as a diff, Allow once and Deny only; at 375 px and in the wide stepper."""
    from tests.agent.test_codex_hook import _codex_hook, _codex_input

    gateway, app = stack
    command = {"command": "npm publish --tag next", "description": "Publish the release"}
    publishing = _codex_hook(gateway.url, _codex_input("PermissionRequest", "Bash", command))
    page = open_app(browser, app.url, "iphone-se")
    said = "Codex asks to run this command: Publish the release"
    expect(page.get_by_text(said)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("npm publish --tag next")).to_be_visible()
    expect(option(page, "Allow once")).to_be_visible()
    expect(option(page, "Allow always")).to_have_count(0)
    shot(page, "53-codex-command-375")
    option(page, "Allow once").click()
    page.get_by_role("button", name="Submit").click()
    decided = json.loads(_finish(publishing)[1])["hookSpecificOutput"]["decision"]
    assert decided == {"behavior": "allow"}

    patch = (
        "*** Begin Patch\n*** Update File: src/config.py\n@@\n-DEBUG = True\n+DEBUG = False\n"
        "*** End Patch\n"
    )
    patching = _codex_hook(
        gateway.url,
        {**_codex_input("PermissionRequest", "apply_patch", {"command": patch}), "session_id": "p"},
    )
    wide = open_app(browser, app.url, "wide")
    expect(wide.get_by_text("Codex asks to change config.py.")).to_be_visible(timeout=TIMEOUT)
    expect(wide.get_by_text("+DEBUG = False", exact=False)).to_be_attached()
    shot(wide, "54-codex-patch-1440")
    option(wide, "Deny").click()
    wide.get_by_role("button", name="Submit").click()
    decided = json.loads(_finish(patching)[1])["hookSpecificOutput"]["decision"]
    assert decided["behavior"] == "deny"

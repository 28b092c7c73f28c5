"""Links in the real app: a pairing link pairs it (after asking), Settings pairs by address and
code, and a prompt link opens that card — on phones, in the web app's page route."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.support import start_gateway, wait_until

from .conftest import AppProcess, open_app, shot, type_into

pytestmark = pytest.mark.browser
TIMEOUT = 30_000


@pytest.fixture
def unpaired(tmp_path):
    """A real gateway and an app that has never been configured."""
    gateway = start_gateway(tmp_path / "gateway")
    app = AppProcess(tmp_path / "app", None).start()
    yield gateway, app
    app.stop()
    gateway.stop()


def _pairing(gateway) -> dict:
    response = gateway.admin.post("/v1/pairings", json={"gatewayUrl": gateway.url})
    assert response.status_code == 201, response.text
    return response.json()


def _route(link: str) -> str:
    """The web app's route for an askuser:// link: /pair?url=…&code=…"""
    parts = urlsplit(link)
    return f"/{parts.netloc}{parts.path}?{parts.query}"


def _devices(gateway) -> list[dict]:
    return gateway.admin.get("/v1/devices").json()["devices"]


def test_a_pairing_link_asks_then_pairs_and_questions_arrive(browser, unpaired):
    gateway, app = unpaired
    pairing = _pairing(gateway)
    page = open_app(browser, app.url + _route(pairing["link"]), "pixel-7")
    expect(page.get_by_text(f"Pair this app with the gateway at {gateway.url}?")).to_be_visible(
        timeout=TIMEOUT
    )
    assert _devices(gateway) == []  # nothing happens before the person says so
    shot(page, "pair-link-ask-pixel-7")
    page.get_by_role("button", name="Pair", exact=True).tap()
    expect(page.get_by_text(f"Paired with {gateway.url}.")).to_be_visible(timeout=TIMEOUT)
    assert len(_devices(gateway)) == 1
    gateway.create()
    expect(page.get_by_text("Where should this deploy?")).to_be_visible(timeout=TIMEOUT)
    shot(page, "pair-link-paired-pixel-7")
    assert page.title() == "(1) Ask User"  # a tab in the background says a question waits

    page.reload()  # the same link again (the address bar still holds it): no second pairing
    page.wait_for_selector("flutter-view", timeout=60_000)
    expect(page.get_by_text(f"Pair this app with the gateway at {gateway.url}?")).to_have_count(0)
    assert len(_devices(gateway)) == 1


def test_pairing_in_settings_with_the_address_and_code(browser, unpaired):
    gateway, app = unpaired
    page = open_app(browser, app.url, "iphone-se")
    expect(page.get_by_text(re.compile("^No gateway yet"))).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Settings").click()
    address = page.get_by_role("textbox", name="Pairing link or gateway URL")
    type_into(page, address, gateway.url)
    code = page.get_by_role("textbox", name="Code")
    type_into(page, code, "AAAA-BBBB")
    page.get_by_role("button", name="Pair", exact=True).click()
    expect(
        page.get_by_text(re.compile("That code is unknown, already used or expired"))
    ).to_be_visible(timeout=TIMEOUT)
    shot(page, "pair-settings-wrong-code-iphone-se")
    assert _devices(gateway) == []

    good = _pairing(gateway)["code"]
    type_into(page, code, good.lower(), shows=good)  # typed as on a phone
    page.get_by_role("button", name="Pair", exact=True).click()
    expect(page.get_by_text(f"Paired with {gateway.url}.")).to_be_visible(timeout=TIMEOUT)
    wait_until(lambda: len(_devices(gateway)) == 1)
    expect(page.get_by_text("Connection: Connected")).to_be_attached(timeout=TIMEOUT)


def test_a_prompt_link_opens_that_card_below_the_fold(browser, stack):
    gateway, app = stack
    target = gateway.create(session="s0")
    for n in range(1, 4):  # newer prompts go on top: the target is pushed off a small screen
        gateway.create(session=f"s{n}")
    page = open_app(browser, f"{app.url}/prompt/{target['id']}", "phone-320")
    expect(page.get_by_text("Where should this deploy?")).to_have_count(4, timeout=TIMEOUT)
    wait_until(lambda: page.title() == "(4) Ask User", timeout=30)
    # The linked card is the last one in the timeline; it is scrolled into view...
    status_of_target = page.get_by_text(re.compile("left$")).nth(3)
    expect(status_of_target).to_be_in_viewport(timeout=TIMEOUT)
    shot(page, "prompt-link-phone-320")
    # ...and chosen: the keys act on it, not on the one on top.
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    wait_until(
        lambda: gateway.device.get(f"/v1/prompts/{target['id']}").json()["status"] == "answered"
    )
    answered = gateway.device.get(f"/v1/prompts/{target['id']}").json()
    assert answered["answers"] == {"deploy_target": ["Production"]}
    others = gateway.device.get("/v1/prompts").json()["prompts"]
    assert len(others) == 3 and all(p["status"] == "pending" for p in others)


def test_a_link_to_a_prompt_this_device_does_not_have_says_so(browser, stack):
    _gateway, app = stack
    page = open_app(browser, f"{app.url}/prompt/pr_NOSUCHPROMPT", "iphone-se")
    expect(page.get_by_text(re.compile("That question is not on this device"))).to_be_visible(
        timeout=TIMEOUT
    )
    page.get_by_role("button", name="Close").click()
    expect(page.get_by_text(re.compile("That question is not on this device"))).to_have_count(0)

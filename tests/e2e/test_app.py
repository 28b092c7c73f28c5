"""What a person sees and does in the real app, on phones and desktops: tapping cards, keys,
Dismiss with Undo, expiry, restarts, the layout at 320 px and at 1440 px, Persian."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image
from playwright.sync_api import expect

from app.agent import ask_user
from app.ui.state import HISTORY_SHOWN
from tests.browser import DEVICES
from tests.support import (
    AGENT_TOKEN,
    DEVICE_TOKEN,
    client,
    device_post,
    next_pending,
    wait_until,
)

from .conftest import Agent, AppProcess, on_screen, open_app, shot, type_into

pytestmark = pytest.mark.browser

SINGLE = [
    {
        "id": "deploy_target",
        "header": "Target",
        "question": "Where should I deploy version 2.4.0?",
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe default"},
            {"label": "Production"},
        ],
    }
]
THREE = [
    {
        "id": "database",
        "header": "Database",
        "question": "Which database should it use?",
        "options": [{"label": "PostgreSQL (Recommended)"}, {"label": "SQLite"}],
    },
    {
        "id": "auth",
        "header": "Sign-in",
        "question": "How should people sign in?",
        "multiSelect": True,
        "options": [{"label": "Email link"}, {"label": "Google"}, {"label": "GitHub"}],
    },
    {
        "id": "hosting",
        "header": "Hosting",
        "question": "Where will it run?",
        "options": [{"label": "Fly.io"}, {"label": "AWS"}],
    },
]
LONG = [
    {
        "id": "migration",
        "header": "Migration",
        "question": "How should the old billing tables be migrated to the new schema?",
        "options": [
            {
                "label": "Copy every row into the new tables overnight (Recommended)",
                "description": "About two hours of read-only billing; nothing is lost",
            },
            {"label": "Migrate lazily, one customer at a time, on their next invoice"},
        ],
    }
]
TIMEOUT = 30_000
WAITING = "Waiting for you"


def summary(page, status: str, *lines: str):
    """A summary tile: read by screen readers as one node, "<status> <time> <lines>"."""
    pattern = rf"^{re.escape(status)}\s+[\d:-]+\s.*" + ".*".join(re.escape(x) for x in lines)
    return page.get_by_role("button", name=re.compile(pattern, re.DOTALL))


def option(page, label: str, role: str = "radio"):
    """An option row, named by its label (then its Recommended mark and description)."""
    return page.get_by_role(role, name=re.compile(rf"^{re.escape(label)}(\s|$)"))


def ask(agent: Agent, gateway, questions, session="main", **kw):
    return agent.pool.submit(
        ask_user,
        questions,
        session_key=session,
        gateway_url=gateway.url,
        token=AGENT_TOKEN,
        abort=agent.stop,
        **kw,
    )


def _record(gateway, prompt_id: str) -> dict:
    """A prompt as the gateway holds it now."""
    with client(gateway.url, DEVICE_TOKEN) as device:
        return device.get(f"/v1/prompts/{prompt_id}").json()


def pending_ids(gateway) -> set[str]:
    """What the gateway holds as pending (a device's snapshot)."""
    with client(gateway.url, DEVICE_TOKEN) as device:
        return {p["id"] for p in device.get("/v1/prompts").json()["prompts"]}


def make_history(page, gateway, count: int) -> None:
    """`count` prompts answered on another device while the app is open: summaries in its
    timeline (a device learns of prompts resolved before it connected only as they change)."""
    expect(page.get_by_text("Connection: Connected")).to_be_attached(timeout=TIMEOUT)
    for n in range(count):
        created = gateway.create(session=f"old-{n}")
        device_post(
            gateway.url,
            created["id"],
            "answer",
            {"answers": {"deploy_target": ["Production"]}, "deviceId": "laptop"},
        )
    expect(summary(page, "Answered elsewhere", "Production")).to_have_count(count, timeout=TIMEOUT)


# ---- answering ----------------------------------------------------------------------------


def test_the_page_and_its_install_manifest_say_ask_user_not_flet(stack):
    import httpx

    _gateway, app = stack
    page = httpx.get(app.url, timeout=10).text
    assert "<title>Ask User</title>" in page and "Flet" not in page.split("<script")[0]
    assert '<meta name="description" content="Answer the questions your AI agents' in page
    manifest = httpx.get(f"{app.url}/manifest.json", timeout=10).json()
    assert (manifest["name"], manifest["short_name"]) == ("Ask User", "Ask User")
    assert "Flet" not in manifest["description"]


def test_the_page_loads_nothing_but_from_its_own_server_and_its_policy_says_so(
    browser, stack, agent
):
    """#53 (6): every load asked cdn.jsdelivr.net for rive_native.js (a runtime the app never
    uses). The page's Content-Security-Policy allows its own server only; the browser refuses
    the CDN before any request leaves, and the app works as before."""
    import httpx

    gateway, app = stack
    served = httpx.get(app.url, timeout=10)
    policy = served.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self' 'wasm-unsafe-eval'" in policy
    assert "jsdelivr" not in policy and "unsafe-inline' 'sha" not in policy
    asked: list[str] = []
    refused: list[str] = []
    blocked: dict[str, str | None] = {}
    context = browser.new_context(**DEVICES["iphone-se"])
    page = context.new_page()
    page.on("request", lambda request: asked.append(request.url))
    page.on("requestfailed", lambda request: blocked.update({request.url: request.failure}))
    page.on(
        "console",
        lambda said: refused.append(said.text) if "Content Security" in said.text else None,
    )
    page.goto(app.url)
    result = ask(agent, gateway, SINGLE)
    page.wait_for_selector("flt-semantics-placeholder", state="attached", timeout=60_000)
    page.locator("flt-semantics-placeholder").dispatch_event("click")
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").click()
    assert result.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    elsewhere = [url for url in asked if not url.startswith((app.url, "data:", "blob:"))]
    # Asked for by the client, and stopped by the browser itself: nothing left the machine.
    assert {url: blocked.get(url) for url in elsewhere} == {url: "csp" for url in elsewhere}
    assert not [said for said in refused if "jsdelivr" not in said]  # only the CDN refused


def yellow_share(png: bytes) -> float:
    """How much of an image is emoji yellow (👍's hand): text and the theme have none."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(image.width * image.height) or []
    yellow = sum(n for n, (r, g, b) in colours if r > 200 and g > 140 and b < 90)
    return yellow / (image.width * image.height)


def test_emoji_and_arabic_script_are_drawn_from_the_apps_own_fonts(browser, stack, agent):
    """Flutter asks the app's server for its fallback fonts (emoji, Arabic script): they 404ed
    and "👍 Yes" / "👎 No" drew as "Yes" / "No"."""
    gateway, app = stack
    question = {
        "id": "ship",
        "header": "Ship",
        "question": "Ship it? 🚀 یا نه؟",
        "options": [{"label": "👍 Yes"}, {"label": "👎 No"}],
    }
    ask(agent, gateway, [question])
    page = open_app(browser, app.url, "iphone-se")
    row = option(page, "👍 Yes")
    expect(row).to_be_visible(timeout=TIMEOUT)
    box = wait_until(row.bounding_box, timeout=30)  # None while a new frame replaces the row
    clip = {"x": box["x"], "y": box["y"], "width": min(box["width"], 160), "height": box["height"]}
    wait_until(lambda: yellow_share(page.screenshot(clip=clip)) > 0.01, timeout=30)
    shot(page, "00-emoji-and-arabic")
    import httpx

    for asked in (  # what the client asked for here (Chromium's network log)
        "notocoloremoji/v32/Yq6P-KqIXTD0t4D9z1ESnKM3-HpFabsE4tq3luCC7p-aXxcn.9.woff2",
        "notosansarabic/v28/nwpxtLGrOAZMl5nJ_wfgRg3DrWFZWsnVBJ_sS6tlqHHFlhQ5l3sQWIHPqzCfyGyvvnCBFQLaig.woff2",
    ):
        font = httpx.get(f"{app.url}/assets/fonts/{asked}", timeout=10)
        assert font.status_code == 200 and font.content[:4] == b"wOF2", asked
    # Flutter's own fonts under the same folder are still Flet's to serve.
    assert httpx.get(f"{app.url}/assets/fonts/MaterialIcons-Regular.otf").status_code == 200


def test_single_select_answered_by_tapping(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()
    # The agent's pick is marked (shown as a badge after the label, read with it).
    expect(option(page, "Staging")).to_have_accessible_name(re.compile(r"^Staging\s+Recommended"))
    shot(page, "01-single-pending")
    # One question, one choice: the tap answers, with a few seconds to take it back.
    option(page, "Production").click()
    expect(page.get_by_text(re.compile(r"^“Production” — sent in \d s$"))).to_be_visible(
        timeout=TIMEOUT
    )
    shot(page, "01b-one-tap-with-undo")
    page.get_by_role("button", name="Undo").click()
    expect(option(page, "Production")).to_be_checked(timeout=TIMEOUT)  # back, choice kept
    assert not result.done()
    option(page, "Production").click()
    assert result.result(timeout=30) == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    # The summary says what was asked, not only the answer.
    line = "Target: Production — Where should I deploy version 2.4.0?"
    expect(summary(page, "Answered", line)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("radio")).to_have_count(0)  # the card collapsed
    shot(page, "02-single-answered-summary")


def test_recommended_option_answers_with_the_label_the_agent_sent(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url, "iphone-se")
    expect(option(page, "Staging")).to_be_visible(timeout=TIMEOUT)
    option(page, "Staging").tap()  # one tap answers (after its Undo time)
    answers = result.result(timeout=30)["answers"]["answers"]
    assert answers == {"deploy_target": ["Staging (Recommended)"]}


def test_three_questions_with_multi_select_and_other(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, THREE)
    page = open_app(browser, app.url)
    expect(option(page, "SQLite")).to_be_visible(timeout=TIMEOUT)
    option(page, "SQLite").click()
    option(page, "Google", "checkbox").click()
    option(page, "GitHub", "checkbox").click()
    option(page, "GitHub", "checkbox").click()  # a second tap takes it back
    option(page, "GitHub", "checkbox").click()
    other = page.get_by_role("textbox", name="Other").nth(2)  # the third question's Other
    type_into(page, other, "Our own rack")
    expect(page.get_by_role("button", name="Submit")).to_be_enabled(timeout=TIMEOUT)
    shot(page, "03-three-questions-filled")
    page.get_by_role("button", name="Submit").click()
    assert result.result(timeout=30)["answers"]["answers"] == {
        "database": ["SQLite"],
        "auth": ["Google", "GitHub"],
        "hosting": ["Our own rack"],
    }
    expect(
        summary(
            page,
            "Answered",
            "Database: SQLite — Which database should it use?",
            "Sign-in: Google, GitHub — How should people sign in?",
            "Hosting: Our own rack — Where will it run?",
        )
    ).to_be_visible(timeout=TIMEOUT)
    shot(page, "04-three-questions-summary")


def test_dismiss_offers_undo_before_it_reaches_the_agent(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    prompt_id = next_pending(gateway.url)["id"]
    expect(page.get_by_role("button", name="Dismiss")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_role("button", name="Undo")).to_be_visible(timeout=TIMEOUT)
    shot(page, "05-dismissed-with-undo")
    assert prompt_id in pending_ids(gateway)  # nothing was sent yet
    page.get_by_role("button", name="Undo").click()
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)  # the card is back
    assert not result.done()
    page.get_by_role("button", name="Dismiss").click()
    assert result.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}
    expect(summary(page, "Dismissed", "Target: No answer — Where should I deploy")).to_be_visible(
        timeout=TIMEOUT
    )
    expect(page.get_by_role("button", name="Undo")).to_have_count(0)
    shot(page, "06-dismissed")


def test_expiry_while_the_card_is_open(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, THREE, timeout_seconds=60)
    page = open_app(browser, app.url)
    expect(option(page, "SQLite")).to_be_visible(timeout=TIMEOUT)
    prompt = next_pending(gateway.url)
    option(page, "SQLite").click()  # half-way through, time runs out
    # Choosing with a minute left moved the deadline to two minutes from then (#44)...
    wait_until(lambda: _record(gateway, prompt["id"])["originalExpiresAt"], timeout=30)
    gateway.clock.advance(121)  # ...and that runs out too
    assert result.result(timeout=30) == {"status": "no_answer", "reason": "expired"}
    expect(summary(page, "Expired", "Database: No answer — Which database")).to_be_visible(
        timeout=TIMEOUT
    )
    expect(page.get_by_role("button", name="Submit")).to_have_count(0)
    shot(page, "07-expired")


def test_answered_on_another_device(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    prompt = next_pending(gateway.url)
    device_post(
        gateway.url,
        prompt["id"],
        "answer",
        {"answers": {"deploy_target": ["Staging (Recommended)"]}, "deviceId": "phone"},
    )
    assert result.result(timeout=30)["status"] == "answered"
    expect(summary(page, "Answered elsewhere", "Staging (Recommended)")).to_be_visible(
        timeout=TIMEOUT
    )
    shot(page, "08-answered-elsewhere")


def test_summary_survives_an_app_restart(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").click()  # one tap answers
    assert result.result(timeout=30)["status"] == "answered"
    expect(summary(page, "Answered", "Production")).to_be_visible(timeout=TIMEOUT)
    page.context.close()
    app.stop()
    again = AppProcess(app.data_dir, gateway.url).start()
    try:
        page = open_app(browser, again.url)
        expect(summary(page, "Answered", "Target: Production — Where")).to_be_visible(
            timeout=TIMEOUT
        )
        shot(page, "09-summary-after-restart")
    finally:
        again.stop()


# ---- what is on screen --------------------------------------------------------------------


def test_opens_on_the_top_of_what_waits_and_a_new_question_comes_into_view(browser, stack, agent):
    """Five items (three summaries, two waiting) on an iPhone SE: the top of a waiting card —
    status, countdown, header, question — is on screen with no touch, and the chrome takes
    at most a fifth of the screen."""
    gateway, app = stack
    first_look = open_app(browser, app.url)
    make_history(first_look, gateway, 3)
    ask(agent, gateway, THREE, session="older")
    next_pending(gateway.url)
    ask(agent, gateway, SINGLE, session="newer")
    expect(first_look.get_by_text(WAITING)).to_have_count(2, timeout=TIMEOUT)
    first_look.context.close()
    page = open_app(browser, app.url, "iphone-se")  # opening the app with five items
    status = page.get_by_text(WAITING).first
    expect(status).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(WAITING)).to_have_count(2, timeout=TIMEOUT)
    question = page.get_by_text("Where should I deploy version 2.4.0?")  # the newest on top
    for part in (status, page.get_by_text(re.compile(r"\d+:\d\d left")).first, question):
        assert on_screen(page, part)
    assert on_screen(page, page.get_by_text("Target", exact=True))
    assert status.bounding_box()["y"] <= 667 / 5, "the chrome takes more than a fifth"
    shot(page, "10-iphone-se-opens-on-top")
    page.mouse.move(180, 500)
    for _ in range(6):  # the person scrolls down to the history
        page.mouse.wheel(0, 800)
    expect(page.get_by_text("Where should I deploy version 2.4.0?")).not_to_be_in_viewport(
        timeout=TIMEOUT
    )
    ask(agent, gateway, LONG, session="newest")
    arrived = page.get_by_text(LONG[0]["question"])
    expect(arrived).to_be_in_viewport(timeout=TIMEOUT)
    expect(page.get_by_text(WAITING).first).to_be_in_viewport(timeout=TIMEOUT)
    shot(page, "11-iphone-se-new-question-on-top")


def test_long_labels_wrap_on_a_320_px_phone(browser, stack, agent):
    gateway, app = stack
    ask(agent, gateway, LONG)
    page = open_app(browser, app.url, "phone-320")
    first = option(page, "Copy every row into the new tables overnight")
    expect(first).to_be_visible(timeout=TIMEOUT)
    second = option(page, "Migrate lazily, one customer at a time, on their next invoice")
    # The app bar's connection icon is drawn (and named), not an error box.
    expect(page.get_by_text("Connection: Connected")).to_be_attached(timeout=TIMEOUT)
    shot(page, "12-phone-320-long-labels")
    for row in (first, second):
        box = row.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 320
        assert box["height"] >= 60, "a long label on one line is clipped"
    expect(first).to_have_accessible_name(re.compile(r"overnight\s+Recommended\s"))
    for role in ("button", "textbox", "radio"):
        for element in page.get_by_role(role).all():
            box = element.bounding_box()
            assert box is None or box["x"] + box["width"] <= 320.5, (role, box)


MOCKUP = (
    "+--------+-------------------------------------------+\n"
    "| Menu   | Settings: notifications, privacy, billing |\n"
    "+--------+-------------------------------------------+"
)
PREVIEWED = [
    {
        "id": "layout",
        "header": "Layout",
        "question": "Which layout for the settings page?",
        "options": [
            {"label": "Sidebar", "preview": MOCKUP},
            {"label": "Tabs", "preview": "[General] [Privacy] [Billing]"},
        ],
    }
]


def test_a_preview_is_folded_under_its_option_and_opens_on_a_320_px_phone(browser, stack, agent):
    """#51: Claude's AskUserQuestion options may carry a preview (a mockup, code): the card
    shows it folded under the option; a tap opens it in a monospace frame that scrolls
    sideways inside the phone's width, and the option is still chosen as any other."""
    gateway, app = stack
    asked = ask(agent, gateway, PREVIEWED, question_tool="AskUserQuestion")
    page = open_app(browser, app.url, "phone-320")
    expect(option(page, "Sidebar")).to_be_visible(timeout=TIMEOUT)
    shows = page.get_by_role("button", name=re.compile("Show preview"))
    expect(shows).to_have_count(2, timeout=TIMEOUT)
    shows.first.click()
    expect(page.get_by_role("button", name=re.compile("Hide preview"))).to_be_visible(
        timeout=TIMEOUT
    )
    shot(page, "40-phone-320-preview")
    for role in ("button", "radio"):
        for element in page.get_by_role(role).all():
            box = element.bounding_box()
            assert box is None or box["x"] + box["width"] <= 320.5, (role, box)
    option(page, "Sidebar").click()  # one question, one tap: sent (after its Undo)
    assert asked.result(timeout=60)["answers"]["answers"] == {"layout": ["Sidebar"]}


def test_wide_screen_is_a_centred_column_with_buttons_by_the_content(browser, stack, agent):
    gateway, app = stack
    ask(agent, gateway, THREE)
    page = open_app(browser, app.url, "wide")
    expect(option(page, "SQLite")).to_be_visible(timeout=TIMEOUT)
    shot(page, "13-desktop-1440")
    row = option(page, "SQLite").bounding_box()
    assert row["width"] <= 840
    centre = row["x"] + row["width"] / 2
    assert abs(centre - 720) < 20, "the column is not centred"
    submit = page.get_by_role("button", name="Submit").bounding_box()
    assert submit["x"] + submit["width"] <= 720 + 420 + 1
    # One type scale: a radio's label and a checkbox's label are the same height.
    radio_h = option(page, "SQLite").bounding_box()["height"]
    check_h = option(page, "Google", "checkbox").bounding_box()["height"]
    assert abs(radio_h - check_h) <= 1


def controls(page, inside) -> list[tuple[str, str, dict]]:
    """Every button, radio, checkbox and text field whose box `inside` takes: role, the name a
    screen reader reads (its label, else its text) and its box."""
    found = []
    for role in ("button", "radio", "checkbox", "textbox"):
        for element in page.get_by_role(role).all():
            box = element.bounding_box()
            if box is not None and inside(box):
                name = (element.get_attribute("aria-label") or element.inner_text()).strip()
                found.append((role, name, box))
    return found


def test_android_every_tap_target_is_48(browser, stack, agent):
    gateway, app = stack
    ask(agent, gateway, THREE, session="main")
    next_pending(gateway.url)
    ask(agent, gateway, SINGLE, session="deploy")
    page = open_app(browser, app.url, "pixel-7")
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    expect(option(page, "SQLite")).to_be_attached(timeout=TIMEOUT)
    shot(page, "14-pixel-7")
    height = page.viewport_size["height"]
    bar = page.get_by_role("button", name="Settings").bounding_box()
    top = bar["y"] + bar["height"]

    def inside(box: dict) -> bool:
        # Boxes touching the timeline's edges are rows cut by them, not small controls.
        bottom = box["y"] + box["height"]
        return bottom <= top or (box["y"] > top + 1 and bottom < height - 1)

    small = [
        (role, name, box)
        for role, name, box in controls(page, inside)
        if box["width"] < 48 or box["height"] < 48
    ]
    assert small == []


def test_desktop_every_control_is_named_and_at_least_44(browser, stack, agent):
    """On a desktop Flutter draws compact controls: the session filter was an unnamed 40×40."""
    gateway, app = stack
    ask(agent, gateway, THREE, session="main")
    next_pending(gateway.url)
    ask(agent, gateway, SINGLE, session="deploy")
    page = open_app(browser, app.url, "wide")
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Filter by session")).to_be_visible(timeout=TIMEOUT)
    shot(page, "14b-desktop-two-sessions")
    width, height = page.viewport_size["width"], page.viewport_size["height"]

    def inside(box: dict) -> bool:
        # Wholly on screen; boxes touching the window's bottom are rows cut by it.
        return (
            box["x"] >= 0
            and box["y"] >= 0
            and box["x"] + box["width"] <= width + 0.5
            and box["y"] + box["height"] < height - 1
        )

    wrong = [
        (role, name, box)
        for role, name, box in controls(page, inside)
        if not name or box["width"] < 44 or box["height"] < 44
    ]
    assert wrong == [], wrong


# ---- keys ---------------------------------------------------------------------------------


def test_keys_reach_only_the_card_the_person_chose_from(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    prompt_id = next_pending(gateway.url)["id"]
    page.keyboard.press("Escape")  # a bare Esc on an untouched page
    page.keyboard.press("2")
    # Settings: typing a name with a digit, then Enter, must not answer anything.
    page.get_by_role("button", name="Settings").click()
    name = page.get_by_role("textbox", name="Device name")
    type_into(page, name, "MacBook 2")
    # One tap off, so a tap chooses and the keys answer (the setting is saved with the name).
    page.get_by_role("checkbox", name=re.compile(r"^Answer a single question with one tap")).click()
    name.click()
    page.keyboard.press("Enter")  # saves the settings and closes the dialog
    expect(page.get_by_role("textbox", name="Device name")).to_have_count(0, timeout=TIMEOUT)
    # Events are handled in order: the Esc and the digits came before the dialog closed.
    expect(page.get_by_role("button", name="Undo")).to_have_count(0)
    expect(option(page, "Production")).not_to_be_checked()
    expect(option(page, "Staging")).not_to_be_checked()
    assert prompt_id in pending_ids(gateway) and not result.done()
    shot(page, "15-keys-ignored-outside-a-card")
    option(page, "Staging").click()  # the person chooses from this card
    page.keyboard.press("2")
    expect(option(page, "Production")).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("Enter")
    assert result.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    second = ask(agent, gateway, SINGLE, session="other")
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").click()
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Undo")).to_be_visible(timeout=TIMEOUT)
    assert second.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}


# ---- settings, history, sessions ----------------------------------------------------------


def test_clear_history_on_purpose_and_connect_an_agent_in_settings(browser, stack, agent):
    gateway, app = stack
    page = open_app(browser, app.url)
    make_history(page, gateway, 1)
    page.get_by_role("button", name="Settings").click()  # named for screen readers
    expect(page.get_by_role("textbox", name="Gateway URL", exact=True)).to_be_visible(
        timeout=TIMEOUT
    )
    expect(page.get_by_text("Connect an agent")).to_be_visible()
    expect(page.get_by_text(gateway.url, exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Copy: Gateway URL for agents")).to_be_visible()
    shot(page, "16-settings-connect-an-agent")
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Clear history").click()
    page.get_by_role("button", name="Clear", exact=True).click()
    expect(page.get_by_text("No questions yet", exact=False)).to_be_visible(timeout=TIMEOUT)
    expect(summary(page, "Answered elsewhere", "Production")).to_have_count(0)
    shot(page, "17-history-cleared")


def test_settings_refuses_a_url_that_cannot_be_one_and_keeps_save_in_sight(browser, stack):
    _gateway, app = stack
    page = open_app(browser, app.url, "iphone-se")
    expect(page.get_by_text("Connection: Connected")).to_be_attached(timeout=TIMEOUT)
    page.get_by_role("button", name="Settings").tap()
    field = page.get_by_role("textbox", name="Gateway URL", exact=True)
    expect(field).to_be_visible(timeout=TIMEOUT)
    save = page.get_by_role("button", name="Save")
    assert on_screen(page, save) and on_screen(page, page.get_by_role("button", name="Cancel"))
    type_into(page, field, "htp:/127.0.0.1:18999")
    save.tap()
    refused = page.get_by_text(re.compile(r"must start with http:// or https://"))
    expect(refused).to_be_visible(timeout=TIMEOUT)
    shot(page, "16b-settings-refuses-a-bad-url")
    assert on_screen(page, save)
    # Mended (an address nobody serves): saved, and the line says which gateway is offline.
    type_into(page, field, "http://127.0.0.1:9")
    save.tap()
    offline = page.get_by_text(re.compile(r"^Offline: http://127\.0\.0\.1:9 does not answer"))
    expect(offline).to_be_visible(timeout=TIMEOUT)
    shot(page, "16c-offline-names-the-gateway")


def test_clear_history_with_three_tabs_open_closes_its_dialog_every_time(browser, stack, agent):
    """Tabs of one web app are one device: history cleared in one reaches the others, and the
    dialog of the tab that cleared closes (it stayed open, with a dead Cancel, 2 times in 4)."""
    gateway, app = stack
    # Three windows (a background tab in headless Chromium does not draw): sessions of the
    # same app process, so one device, as tabs are.
    tabs = [open_app(browser, app.url) for _ in range(3)]
    for attempt in range(4):
        make_history(tabs[0], gateway, 1)
        for tab in tabs:
            expect(summary(tab, "Answered elsewhere", "Production")).to_have_count(
                1, timeout=TIMEOUT
            )
        tab = tabs[attempt % 3]  # the first window failed at once
        tab.get_by_role("button", name="Clear history").click()
        confirm = tab.get_by_role("button", name="Clear", exact=True)
        expect(confirm).to_be_visible(timeout=TIMEOUT)
        tab.wait_for_timeout(400)  # the dialog's opening animation moves its buttons
        confirm.click()
        expect(confirm).to_have_count(0, timeout=TIMEOUT)
        for other in tabs:
            expect(other.get_by_text("No questions yet", exact=False)).to_be_visible(
                timeout=TIMEOUT
            )
    # A dialog left open in one tab while another clears still closes with its Cancel.
    make_history(tabs[0], gateway, 1)
    tabs[1].get_by_role("button", name="Clear history").click()
    expect(tabs[1].get_by_role("button", name="Cancel")).to_be_visible(timeout=TIMEOUT)
    tabs[2].get_by_role("button", name="Clear history").click()
    tabs[2].get_by_role("button", name="Clear", exact=True).click()
    expect(tabs[2].get_by_text("No questions yet", exact=False)).to_be_visible(timeout=TIMEOUT)
    tabs[1].get_by_role("button", name="Cancel").click()
    expect(tabs[1].get_by_role("button", name="Cancel")).to_have_count(0, timeout=TIMEOUT)


def test_a_long_history_draws_a_screenful_and_show_older_draws_the_rest(browser, stack):
    """#43: a dozen summaries are drawn (a question arriving above them costs the page what it
    costs above none); the rest are a tap away, at the end of the timeline."""
    gateway, app = stack
    page = open_app(browser, app.url, "iphone-se")  # the app keeps what it hears from now on
    expect(page.get_by_text(re.compile("^No questions yet"))).to_be_visible(timeout=TIMEOUT)
    for _ in range(HISTORY_SHOWN + 2):
        created = gateway.create(session="main")
        assert device_post(gateway.url, created["id"], "dismiss", {"deviceId": "other"}).is_success
    # The list keeps only what is near the screen in the accessibility tree (CI counted 10
    # of the 12 drawn on this phone): what is drawn is read from the button at the end.
    expect(page.get_by_role("button", name=re.compile(r"^Dismissed")).first).to_be_visible(
        timeout=TIMEOUT
    )
    older = page.get_by_role("button", name="Show older (2)")  # 14 dismissed, 12 drawn
    scroll_until_seen(page, older)
    shot(page, "20-show-older-phone")
    older.click()
    expect(page.get_by_role("button", name=re.compile(r"^Show older"))).to_have_count(
        0, timeout=TIMEOUT
    )


def scroll_until_seen(page, locator, tries: int = 30) -> None:
    """Scroll the timeline down, a wheel turn at a time, until `locator` is on the screen (a
    list keeps only what is near the screen in the tree, and Flutter scrolls on its own)."""
    size = page.viewport_size
    page.mouse.move(size["width"] / 2, size["height"] / 2)
    for _ in range(tries):
        try:
            expect(locator).to_be_attached(timeout=1_000)
            if on_screen(page, locator):
                page.mouse.wheel(0, 300)  # and what lies under it, up to the list's end
                expect(locator).to_be_attached()
                return
        except AssertionError:
            pass
        page.mouse.wheel(0, 300)
    expect(locator).to_be_attached()
    assert on_screen(page, locator), "scrolled to the end without seeing it"


def test_session_filter_shows_one_session(browser, stack, agent):
    gateway, app = stack
    ask(agent, gateway, SINGLE, session="deploy")
    next_pending(gateway.url)
    ask(agent, gateway, THREE, session="main")
    page = open_app(browser, app.url, "iphone-se")
    expect(option(page, "SQLite")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(WAITING)).to_have_count(2, timeout=TIMEOUT)
    page.get_by_role("button", name="Filter by session").tap()
    page.get_by_role("menuitemcheckbox", name=re.compile(r"^deploy \(1\)")).tap()
    expect(option(page, "SQLite")).to_have_count(0, timeout=TIMEOUT)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Session: deploy")).to_be_visible()
    shot(page, "18-session-filter")
    page.get_by_role("button", name="All sessions").tap()
    expect(option(page, "SQLite")).to_be_attached(timeout=TIMEOUT)


# ---- Persian ------------------------------------------------------------------------------


def red_share(png: bytes) -> float:
    """How much of an image is the theme's error red (the urgent countdown)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(image.width * image.height) or []
    red = sum(n for n, (r, g, b) in colours if r > 140 and g < 90 and b < 90)
    return red / (image.width * image.height)


def test_persian_ui_digits_mirroring_urgency_and_a_restart(browser, stack, agent):
    gateway, app = stack
    ask(agent, gateway, THREE, session="second")  # two sessions: the filter is shown
    page = open_app(browser, app.url)
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("button", name="Language").click()  # named for screen readers
    page.get_by_role("button", name="فارسی").click()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("پرسش از کاربر")).to_be_visible(timeout=TIMEOUT)  # the title
    result = ask(agent, gateway, SINGLE, timeout_seconds=60)  # English, in a Persian app
    expect(page.get_by_role("button", name="رد کردن")).to_have_count(2, timeout=TIMEOUT)
    # Persian digits in the app's own numbers (the questions' too); the last minute is urgent.
    expect(page.get_by_text("۲. How should people sign in?")).to_be_attached(timeout=TIMEOUT)
    urgent = page.get_by_text(re.compile(r"^[۰-۹]:[۰-۹]{2} مانده$")).first
    expect(urgent).to_be_visible(timeout=TIMEOUT)
    shot(page, "19-persian-ui-english-question")
    box = urgent.bounding_box()
    clip = {"x": box["x"] - 24, "y": box["y"], "width": box["width"] + 24, "height": box["height"]}
    assert red_share(page.screenshot(clip=clip)) > 0.02
    # The chrome is mirrored (title right, actions and the session filter left); the
    # English question stays left to right (viewport 900 wide).
    title = page.get_by_text("پرسش از کاربر").bounding_box()
    assert title["x"] > 450
    assert page.get_by_role("button", name="صافی گفتگو").bounding_box()["x"] < 450
    assert option(page, "Production").bounding_box()["x"] < 200
    page.context.close()
    app.stop()
    again = AppProcess(app.data_dir, gateway.url).start()
    try:
        page = open_app(browser, again.url)
        expect(page.get_by_role("button", name="تنظیمات")).to_be_visible(timeout=TIMEOUT)
        page.get_by_role("button", name="رد کردن").first.click()
        expect(page.get_by_role("button", name="برگرداندن")).to_be_visible(timeout=TIMEOUT)
        assert result.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}
    finally:
        again.stop()


def test_each_card_and_summary_names_who_is_asking(stack, browser, agent):
    """#40: two agents wait at once; each card, and the summary it becomes, says which one
    asks ("Claude Code · shop-api"), at the smallest phone's width."""
    gateway, app = stack
    page = open_app(browser, app.url, "phone-320")
    first = ask(agent, gateway, SINGLE, session="claude-code:~/code/shop-api",
                agent_id="claude-code/3f2a9c1e")  # fmt: skip
    ask(agent, gateway, LONG, session="main", agent_id="codex/1a2b3c4d")
    expect(page.get_by_text("Claude Code · shop-api")).to_be_attached(timeout=TIMEOUT)
    expect(page.get_by_text("Codex · main")).to_be_attached(timeout=TIMEOUT)
    shot(page, "who-asks-phone-320")
    prompt = next(p for p in _pending(gateway) if p["sessionKey"].startswith("claude-code:"))
    device_post(gateway.url, prompt["id"], "answer",
                {"answers": {"deploy_target": ["Production"]}, "deviceId": "laptop"})  # fmt: skip
    assert first.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    expect(
        summary(page, "Answered elsewhere", "Claude Code · shop-api", "Production")
    ).to_be_attached(timeout=TIMEOUT)
    shot(page, "who-asks-summary-phone-320")


def _pending(gateway) -> list[dict]:
    with client(gateway.url, DEVICE_TOKEN) as device:
        return device.get("/v1/prompts").json()["prompts"]


@pytest.mark.parametrize("device", ["pixel-7", "phone-320"])
def test_settings_checkbox_labels_wrap_on_a_phone(browser, web_stack, device):
    """#44 (2): at 412 px "Answer a single question with one ta…" and "In this browser, one
    question at a tim…" were cut at the dialog's edge; each label is whole now, on as many
    lines as it needs (the screenshots), its checkbox on the screen, and a tap on it toggles."""
    _gateway, app = web_stack
    page = open_app(browser, app.url, device)
    expect(page.get_by_text("Connection: Connected")).to_be_attached(timeout=TIMEOUT)
    page.get_by_role("button", name="Settings").tap()
    expect(page.get_by_role("textbox", name="Gateway URL", exact=True)).to_be_visible(
        timeout=TIMEOUT
    )
    for label, role in (
        ("Answer a single question with one tap (with Undo)", "checkbox"),
        ("By the window: cards on a phone, one at a time when wide", "radio"),
        ("Every question stacked in its card", "radio"),
        ("One question at a time, in a panel at the bottom", "radio"),
    ):
        row = page.get_by_role("button", name=label)  # the whole label, tappable
        row.scroll_into_view_if_needed()
        expect(row).to_be_visible(timeout=TIMEOUT)
        box = row.get_by_role(role) if role == "radio" else page.get_by_role(role, name=label)
        expect(box).to_be_visible(timeout=TIMEOUT)
        assert on_screen(page, box) and on_screen(page, row), label
    label = "Answer a single question with one tap (with Undo)"
    box = page.get_by_role("checkbox", name=label)
    checked = box.is_checked()
    page.get_by_role("button", name=label).tap()
    expect(box).to_be_checked(checked=not checked)  # a tap on the label toggles it too
    # In a browser: how another browser becomes a device of its own (#44, 5).
    one_device = page.get_by_text(re.compile(r"^Every tab and browser that opens this page"))
    one_device.scroll_into_view_if_needed()
    expect(one_device).to_be_visible(timeout=TIMEOUT)
    shot(page, f"16d-settings-labels-wrap-{device}")


def test_keys_act_on_a_card_brought_back_by_undo(browser, stack, agent):
    """#44 (3): after Ctrl+Z the restored card ignored 1-4, Esc and Enter until clicked; and
    after a one-tap answer chosen with Space, Enter opened Settings instead of sending it."""
    gateway, app = stack
    page = open_app(browser, app.url)
    single = ask(agent, gateway, SINGLE)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").click()  # one tap: answered, with Undo
    undo_line = page.get_by_text(re.compile(r"^“Production” — sent in \d s$"))
    expect(undo_line).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("Control+z")
    expect(option(page, "Production")).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("1")  # the restored card takes keys without a click
    expect(option(page, "Staging")).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("Escape")
    expect(page.get_by_text(re.compile(r"^Dismissed — sent in \d s$"))).to_be_visible(
        timeout=TIMEOUT
    )
    page.keyboard.press("Control+z")
    expect(option(page, "Staging")).to_be_checked(timeout=TIMEOUT)
    option(page, "Production").focus()
    page.keyboard.press("Space")  # one tap from the keyboard
    expect(undo_line).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("Enter")  # sends it now
    assert single.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    expect(page.get_by_role("textbox", name="Gateway URL", exact=True)).to_have_count(0)
    shot(page, "18-keys-after-undo")


def test_choosing_near_the_deadline_gives_the_person_more_time(browser, stack, agent):
    """#44: the person starts choosing at 25 s of a 30 s prompt; the app tells the gateway,
    the deadline moves, and at 40 s the agent is still waiting, then gets the answer."""
    gateway, app = stack
    page = open_app(browser, app.url, "iphone-se")
    three = ask(agent, gateway, THREE, timeout_seconds=30)
    expect(option(page, "SQLite")).to_be_visible(timeout=TIMEOUT)
    prompt = next_pending(gateway.url)
    gateway.clock.advance(25)
    option(page, "SQLite").tap()

    def moved() -> dict | None:
        with client(gateway.url, DEVICE_TOKEN) as device:
            record = device.get(f"/v1/prompts/{prompt['id']}").json()
        return record if record["originalExpiresAt"] else None

    record = wait_until(moved, timeout=30)
    assert record["originalExpiresAt"] == prompt["expiresAt"]
    gateway.clock.advance(15)  # 40 s
    assert prompt["id"] in pending_ids(gateway) and not three.done()
    option(page, "Google", "checkbox").tap()
    option(page, "AWS").tap()
    page.get_by_role("button", name="Submit").tap()
    answers = three.result(timeout=30)["answers"]["answers"]
    assert answers == {"database": ["SQLite"], "auth": ["Google"], "hosting": ["AWS"]}


def test_an_expired_question_is_answered_anyway_and_its_agent_picks_it_up(browser, stack):
    """#44: a 30 s prompt expires on the phone; its summary offers "Answer anyway"; the card
    comes back and its answer is sent late; the summary says the agent has not picked it up,
    then that it has, once the agent collected it."""
    gateway, app = stack
    page = open_app(browser, app.url, "iphone-se")
    asked = gateway.create(timeoutSeconds=30)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    gateway.clock.advance(31)
    anyway = page.get_by_role("button", name="Answer anyway")
    expect(anyway).to_be_visible(timeout=TIMEOUT)
    shot(page, "21-expired-answer-anyway")
    anyway.tap()
    expect(page.get_by_text(re.compile("^Its time ran out"))).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").tap()
    shot(page, "21b-late-card")
    page.get_by_role("button", name="Send").tap()

    def late() -> dict | None:
        record = gateway.device.get(f"/v1/prompts/{asked['id']}").json()
        return record["lateAnswer"]

    assert wait_until(late, timeout=30)["answers"] == {"deploy_target": ["Production"]}
    waiting = page.get_by_role("button", name=re.compile("Answered late · waiting for the agent"))
    expect(waiting).to_be_visible(timeout=TIMEOUT)
    shot(page, "22-answered-late-waiting")
    [item] = gateway.agent.get("/v1/late-answers").json()["lateAnswers"]
    assert item["promptId"] == asked["id"]
    assert gateway.agent.post(f"/v1/late-answers/{asked['id']}/ack").status_code == 200
    delivered = page.get_by_role("button", name=re.compile("Answered late · the agent has it"))
    expect(delivered).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Answer anyway")).to_have_count(0)
    shot(page, "23-answered-late-delivered")

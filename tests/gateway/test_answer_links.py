"""Answer links, black-box: `python -m app gateway --public-url …` with ASK_USER_NOTIFY at two
local receivers (one for Apprise's json://, one standing in for the ntfy server that the
gateway publishes to), then the link and the notification's buttons used as a browser and
ntfy would."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.gateway.test_notify import Receiver
from tests.support import AGENT_TOKEN, DEVICE_TOKEN, GatewayProcess, prompt_body, wait_until

LINK = re.compile(r"http://127\.0\.0\.1:\d+/a/[A-Za-z0-9_-]+")
SEVERAL = [
    prompt_body()["questions"][0],
    {
        "id": "features",
        "header": "Features",
        "question": "Which ones ship first?",
        "multiSelect": True,
        "options": [{"label": "Search"}, {"label": "Export"}],
    },
]


@pytest.fixture
def linked(tmp_path):
    receiver, ntfy = Receiver(), Receiver()  # the second as an ntfy server
    ntfy_url = ntfy.url_as("ntfy://tk_secret@", "/asks")
    gateway = GatewayProcess(tmp_path / "data", extra_env={})
    gateway.extra_args = ["--public-url", gateway.url]
    gateway.extra_env = {"ASK_USER_NOTIFY": f"{receiver.url} {ntfy_url}"}
    gateway.start()
    yield gateway, receiver, ntfy
    gateway.kill()
    receiver.close()
    ntfy.close()


def _ask(gateway, questions=None) -> dict:
    body = prompt_body("links")
    if questions is not None:
        body["questions"] = questions
    response = httpx.post(
        f"{gateway.url}/v1/prompts", json=body, headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
    )
    assert response.status_code == 201, response.text
    return response.json()


def _record(gateway, prompt_id: str) -> dict:
    headers = {"Authorization": f"Bearer {DEVICE_TOKEN}"}
    return httpx.get(f"{gateway.url}/v1/prompts/{prompt_id}", headers=headers).json()


def _result(gateway, prompt_id: str) -> dict:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    url = f"{gateway.url}/v1/prompts/{prompt_id}/result"
    return httpx.get(url, params={"wait": 0}, headers=headers).json()


def _link_from_notification(receiver: Receiver) -> str:
    wait_until(lambda: receiver.received, timeout=20)
    [link] = LINK.findall(receiver.received[-1]["message"])
    return link


def test_the_notification_carries_the_link_and_a_get_never_decides(linked):
    gateway, receiver, _ = linked
    prompt = _ask(gateway)
    link = _link_from_notification(receiver)
    assert "askuser://prompt/" in receiver.received[-1]["message"]
    assert len(link.rsplit("/", 1)[1]) >= 22  # ≥ 128 random bits, URL-safe base64
    for _ in range(3):  # link previews, mail scanners, a person looking twice
        page = httpx.get(link)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "Where should this deploy?" in page.text and 'name="q.deploy_target"' in page.text
        assert "script-src 'nonce-" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer"
    confirm = httpx.get(f"{link}?choose=2")
    assert "Production" in confirm.text and "?choose=2" in confirm.text
    assert _record(gateway, prompt["id"])["status"] == "pending"
    stored = (gateway.data_dir / "gateway.sqlite3").read_bytes()
    assert link.rsplit("/", 1)[1].encode() not in stored  # kept only hashed


def test_an_ntfy_button_answers_with_one_tap_and_a_second_changes_nothing(linked):
    gateway, _, ntfy = linked
    prompt = _ask(gateway)
    wait_until(lambda: ntfy.requests, timeout=20)
    path, headers, message = ntfy.requests[-1]
    assert path == "/" and message["topic"] == "asks"
    assert headers["Authorization"] == "Bearer tk_secret"
    assert [a["label"] for a in message["actions"]] == ["Staging (Recommended)", "Production"]
    assert message["click"].startswith(f"{gateway.url}/a/")
    production = message["actions"][1]
    assert production["action"] == "http" and production["method"] == "POST"
    tapped = httpx.post(production["url"])  # as ntfy sends an http action: no body
    assert tapped.status_code == 200, tapped.text
    assert _result(gateway, prompt["id"]) == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert _record(gateway, prompt["id"])["resolvedBy"] == {"kind": "link"}
    assert httpx.post(production["url"]).status_code == 200  # the same tap again: safe
    staging = httpx.post(message["actions"][0]["url"])
    assert staging.status_code == 409 and "Production" in staging.text
    assert _result(gateway, prompt["id"])["answers"]["answers"] == {"deploy_target": ["Production"]}


def test_the_form_names_what_is_missing_then_answers_with_the_persons_words(linked):
    gateway, _, ntfy = linked
    prompt = _ask(gateway, SEVERAL)
    wait_until(lambda: ntfy.requests, timeout=20)
    [view] = ntfy.requests[-1][2]["actions"]
    assert view["action"] == "view"  # two questions: the page, not one tap
    link = view["url"]
    form = {"attempt": "a1", "action": "answer", "q.deploy_target": "Production"}
    missing = httpx.post(link, data=form)
    assert missing.status_code == 422 and "Features" in missing.text
    assert 'value="Production" checked' in missing.text  # what was chosen is kept
    assert _record(gateway, prompt["id"])["status"] == "pending"
    form.update({"q.features": ["Search"], "other.features": "Sharing, later"})
    sent = httpx.post(link, data=form)
    assert sent.status_code == 200 and "Sent" in sent.text
    again = httpx.post(link, data=form)  # the browser sends the form again: safe
    assert again.status_code == 200
    assert _result(gateway, prompt["id"])["answers"]["answers"] == {
        "deploy_target": ["Production"],
        "features": ["Search", "Sharing, later"],
    }
    later = httpx.get(link)
    assert "Answered from a link" in later.text and "Sharing, later" in later.text
    assert 'name="q.features"' not in later.text  # no form once it is decided


def test_dismiss_from_the_page(linked):
    gateway, receiver, _ = linked
    prompt = _ask(gateway)
    link = _link_from_notification(receiver)
    response = httpx.post(link, data={"attempt": "d1", "action": "dismiss"})
    assert response.status_code == 200 and "Dismissed" in response.text
    assert _result(gateway, prompt["id"]) == {"status": "no_answer", "reason": "dismissed"}


def test_forged_unknown_and_finished_links_change_nothing(linked):
    gateway, receiver, _ = linked
    prompt = _ask(gateway)
    link = _link_from_notification(receiver)
    forged = link[:-3] + ("aaa" if not link.endswith("aaa") else "bbb")
    unknown = httpx.post(f"{forged}?choose=1")
    assert unknown.status_code == 404 and "unknown" in unknown.text
    assert unknown.headers["content-type"].startswith("text/html")
    for _ in range(12):
        last = httpx.get(f"{gateway.url}/a/not-a-real-link")
    assert last.status_code == 429 and "Too many wrong links" in last.text
    assert httpx.get(link).status_code == 200  # the right link still works from here
    httpx.post(
        f"{gateway.url}/v1/prompts/{prompt['id']}/answer",
        json={"answers": {"deploy_target": ["Staging (Recommended)"]}, "deviceId": "phone"},
        headers={"Authorization": f"Bearer {DEVICE_TOKEN}"},
    )
    finished = httpx.post(link, data={"attempt": "x", "action": "dismiss"})
    assert finished.status_code == 409 and "Answered elsewhere" in finished.text
    assert _record(gateway, prompt["id"])["status"] == "answered"
    assert "Staging" in httpx.get(link).text


def test_no_link_token_reaches_the_log_at_any_level(tmp_path):
    """Whoever reads the log must not be able to answer (#39): every use of the link is logged
    with its token cut, and Apprise's own debug lines (its payloads) stay out, even at debug."""
    receiver = Receiver()
    gateway = GatewayProcess(tmp_path / "data", log_level="debug")
    gateway.extra_args = ["--public-url", gateway.url]
    gateway.extra_env = {"ASK_USER_NOTIFY": receiver.url}
    gateway.start()
    try:
        prompt = _ask(gateway)
        link = _link_from_notification(receiver)
        token = link.rsplit("/", 1)[1]
        assert httpx.get(link).status_code == 200
        assert httpx.head(link).status_code == 200
        form = {"attempt": "a1", "action": "answer", "q.deploy_target": "Production"}
        assert httpx.post(link, data=form).status_code == 200
        assert _record(gateway, prompt["id"])["status"] == "answered"
        wait_until(lambda: gateway.log().count("/a/<token>") >= 3, timeout=20)
        assert token not in gateway.log()
    finally:
        gateway.kill()
        receiver.close()


def test_the_page_names_who_is_asking(tmp_path):
    """#40: the link's page says which agent asks, as the app and the notification do."""
    receiver = Receiver()
    gateway = GatewayProcess(tmp_path / "data")
    gateway.extra_args = ["--public-url", gateway.url]
    gateway.extra_env = {"ASK_USER_NOTIFY": receiver.url}
    gateway.start()
    try:
        body = prompt_body("claude-code:~/code/shop-api", agentId="claude-code/3f2a9c1e")
        headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
        assert httpx.post(f"{gateway.url}/v1/prompts", json=body, headers=headers).is_success
        link = _link_from_notification(receiver)
        assert receiver.received[-1]["title"] == "Claude Code · shop-api: Target"
        assert '<p class="asker" dir="auto">Claude Code · shop-api</p>' in httpx.get(link).text
    finally:
        gateway.kill()
        receiver.close()


def test_the_link_of_a_stopped_run_answers_anyway(linked):
    """#44: once the agent's run stopped, the link's page offers its form for a late answer
    (Send, no Dismiss); the answer is kept as `lateAnswer`, and the page then says it waits for
    the agent."""
    gateway, receiver, _ = linked
    body = prompt_body("links", runId="run_9")
    response = httpx.post(
        f"{gateway.url}/v1/prompts", json=body, headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
    )
    prompt = response.json()
    link = _link_from_notification(receiver)
    stopped = httpx.post(
        f"{gateway.url}/v1/runs/run_9/cancel", json={},
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
    )  # fmt: skip
    assert stopped.status_code == 200
    page = httpx.get(link)
    assert "your answer still reaches the agent" in page.text
    assert 'name="q.deploy_target"' in page.text and 'value="dismiss"' not in page.text
    form = {"attempt": "late1", "action": "answer", "q.deploy_target": "Production"}
    sent = httpx.post(link, data=form)
    assert sent.status_code == 200 and "Sent" in sent.text, sent.text
    assert httpx.post(link, data=form).status_code == 200  # sent again: safe
    record = _record(gateway, prompt["id"])
    assert record["status"] == "cancelled"
    assert record["lateAnswer"]["answers"] == {"deploy_target": ["Production"]}
    assert record["lateAnswer"]["resolvedBy"] == {"kind": "link"}
    later = httpx.get(link)
    assert "waiting for the agent" in later.text and "Production" in later.text
    assert 'name="q.deploy_target"' not in later.text


def test_a_links_choose_never_allows_for_good(linked):
    """#54 (4): `?choose=N` for a permission's "allow always" is no one-tap choice: the page
    shows the whole card, and a POST of it answers nothing."""
    gateway, receiver, ntfy = linked
    permission = {
        **prompt_body("links"),
        "questions": [
            {
                "id": "decision",
                "header": "Permission",
                "question": "Claude Code asks to run this command.",
                "options": [{"label": "Allow once"}, {"label": "Allow always"}, {"label": "Deny"}],
            }
        ],
        "kind": "permission",
        "stop": {"program": "Claude Code", "command": "npm test", "always": "Allow always"},
    }
    made = httpx.post(
        f"{gateway.url}/v1/prompts",
        json=permission,
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
    )
    assert made.status_code == 201, made.text
    link = _link_from_notification(receiver)
    wait_until(lambda: ntfy.requests, timeout=20)
    assert [a["label"] for a in ntfy.requests[-1][2]["actions"]] == ["Allow once", "Deny"]
    page = httpx.get(f"{link}?choose=2")
    assert "?choose=2" not in page.text and 'name="q.decision"' in page.text  # the whole card
    httpx.post(f"{link}?choose=2")
    assert _record(gateway, made.json()["id"])["status"] == "pending"
    once = httpx.get(f"{link}?choose=1")
    assert "?choose=1" in once.text  # allow once: one tap, confirmed, as any choice

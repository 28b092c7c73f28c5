"""The hot routes (served from ASGI in front of FastAPI) answer exactly as the framework's own
declared routes do: the same script of requests, good and bad, against a gateway served
normally and one served by FastAPI alone gives the same statuses and bodies."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from app.gateway import EmbeddedGateway, GatewayConfig, ManualClock
from tests.support import AGENT_TOKEN, DEVICE_TOKEN, TOKENS, prompt_body

JSON = {"Content-Type": "application/json"}
PROMPT_IDS = re.compile(r"pr_[0-9A-Za-z]+")
# The one difference, on purpose: the hot routes check the token before they read the body, so
# a caller without a token learns nothing about bodies (401, where FastAPI's route says 422).
NO_TOKEN_BAD_BODY = ("POST", "/v1/prompts", None, {"content": b"{not json", "headers": JSON})


def _script() -> list[tuple[str, str, str | None, dict[str, Any]]]:
    """(method, path, token, httpx keyword arguments); `{p0}`, `{p1}` are the prompts made."""
    three = prompt_body("s2")
    three["questions"].append(
        {
            "id": "langs",
            "header": "Languages",
            "question": "Which ones?",
            "multiSelect": True,
            "options": [{"label": "Python"}, {"label": "Go"}],
        }
    )
    return [
        ("GET", "/v1/events?after=0&wait=0", DEVICE_TOKEN, {}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": prompt_body(requestId="r1")}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": prompt_body(requestId="r1")}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": prompt_body()}),  # pending_exists
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": three}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"content": b"{not json", "headers": JSON}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"content": b"", "headers": JSON}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"content": b"[1, 2]", "headers": JSON}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"content": b'{"a": 1}'}),
        (
            "POST",
            "/v1/prompts",
            AGENT_TOKEN,
            {"content": b'{"a": 1}', "headers": {"Content-Type": "text/plain"}},
        ),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": {**prompt_body(), "session_key": "x"}}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": {**prompt_body(), "sessionKind": "sub"}}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": {"questions": []}}),
        ("POST", "/v1/prompts", DEVICE_TOKEN, {"json": prompt_body("s3")}),
        NO_TOKEN_BAD_BODY,
        ("POST", "/v1/prompts", "nobody", {"json": prompt_body("s3")}),
        ("GET", "/v1/prompts/{p0}/result?wait=0", AGENT_TOKEN, {}),
        ("GET", "/v1/prompts/{p0}/result?wait=61", AGENT_TOKEN, {}),
        ("GET", "/v1/prompts/{p0}/result?wait=soon", AGENT_TOKEN, {}),
        ("GET", "/v1/prompts/{p0}/result", DEVICE_TOKEN, {}),
        ("GET", "/v1/prompts/pr_none/result?wait=0", AGENT_TOKEN, {}),
        ("GET", "/v1/events?after=0&wait=0", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?after=1&wait=0&limit=1", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?after=abc&wait=0", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?after=999999&wait=0", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?wait=0&limit=501", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?wait=0&colour=blue", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?wait=0", AGENT_TOKEN, {}),
        ("POST", "/v1/prompts/{p0}/answer", DEVICE_TOKEN, {"json": {"answers": {"x": ["A"]}}}),
        ("POST", "/v1/prompts/{p0}/answer", DEVICE_TOKEN, {"json": {"answer": {}}}),
        ("POST", "/v1/prompts/{p0}/answer", DEVICE_TOKEN, {"content": b"", "headers": JSON}),
        (
            "POST",
            "/v1/prompts/{p0}/answer",
            DEVICE_TOKEN,
            {"json": {"answers": {"deploy_target": ["Production"]}, "idempotencyKey": "k1"}},
        ),
        (
            "POST",
            "/v1/prompts/{p0}/answer",
            DEVICE_TOKEN,
            {"json": {"answers": {"deploy_target": ["Production"]}, "idempotencyKey": "k1"}},
        ),
        ("POST", "/v1/prompts/{p0}/answer", DEVICE_TOKEN, {"json": {"answers": {}}}),
        ("POST", "/v1/prompts/{p0}/answer", AGENT_TOKEN, {"json": {"answers": {}}}),
        ("POST", "/v1/prompts/pr_none/answer", DEVICE_TOKEN, {"json": {"answers": {}}}),
        ("GET", "/v1/prompts/{p0}/result?wait=0", AGENT_TOKEN, {}),
        ("POST", "/v1/prompts/{p1}/reply", DEVICE_TOKEN, {"json": {"text": "9"}}),
        ("POST", "/v1/prompts/{p1}/reply", DEVICE_TOKEN, {"json": {"text": "1\n1, 2"}}),
        ("POST", "/v1/prompts", AGENT_TOKEN, {"json": prompt_body("s4", runId="run-1")}),
        ("POST", "/v1/prompts/{p2}/dismiss", DEVICE_TOKEN, {}),
        ("POST", "/v1/prompts/{p1}/dismiss", DEVICE_TOKEN, {"json": {"deviceId": "phone"}}),
        ("POST", "/v1/prompts/{p1}/dismiss", DEVICE_TOKEN, {}),
        ("POST", "/v1/prompts/{p1}/dismiss", DEVICE_TOKEN, {"json": {"reason": "x"}}),
        ("GET", "/v1/prompts/{p1}/result?wait=0", AGENT_TOKEN, {}),
        ("PUT", "/v1/prompts/{p1}/answer", DEVICE_TOKEN, {}),
        ("GET", "/v1/prompts/{p1}/answer", DEVICE_TOKEN, {}),
        ("DELETE", "/v1/events", DEVICE_TOKEN, {}),
        ("GET", "/v1/events?after=0&wait=0", DEVICE_TOKEN, {}),
    ]


def _run(url: str) -> list[tuple[int, str, str]]:
    """Each request's status, content type and body, with prompt ids numbered in order."""
    seen: list[str] = []
    out = []
    with httpx.Client(base_url=url, timeout=10) as client:
        for method, path, token, kwargs in _script():
            headers = dict(kwargs.pop("headers", {}))
            if token:
                headers["Authorization"] = f"Bearer {token}"
            path = path.format(**{f"p{i}": pid for i, pid in enumerate(seen)})
            response = client.request(method, path, headers=headers, **kwargs)
            for pid in PROMPT_IDS.findall(response.text):
                if pid not in seen and pid != "pr_none":
                    seen.append(pid)

            def number(match: re.Match) -> str:
                found = match.group(0)
                return f"<p{seen.index(found)}>" if found in seen else found

            body = PROMPT_IDS.sub(number, response.text)
            out.append((response.status_code, response.headers.get("content-type", ""), body))
    return out


def _gateway(tmp_path, name: str, start_ms: int, serve_with=None) -> EmbeddedGateway:
    config = GatewayConfig(data_dir=tmp_path / name, tokens=TOKENS, host="127.0.0.1", port=0)
    extra = {"serve_with": serve_with} if serve_with else {}
    return EmbeddedGateway(config, clock=ManualClock(start_ms), **extra).start()


@pytest.fixture
def both(tmp_path):
    start_ms = 1_800_000_000_000
    served = _gateway(tmp_path, "served", start_ms)
    framework = _gateway(tmp_path, "framework", start_ms, serve_with=lambda app: app)
    yield served, framework
    served.stop()
    framework.stop()


def test_hot_routes_answer_as_the_framework_routes_do(both):
    served, framework = both
    hot, plain = _run(served.url), _run(framework.url)
    script = _script()
    assert len(hot) == len(script)
    for step, got, expected in zip(script, hot, plain, strict=True):
        if step == NO_TOKEN_BAD_BODY:
            assert (got[0], expected[0]) == (401, 422)
            continue
        assert got == expected, f"{step[0]} {step[1]}"
    # The script did reach every kind of answer, not just errors.
    statuses = {status for status, _, _ in hot}
    assert {200, 201, 401, 403, 404, 405, 409, 410, 422} <= statuses

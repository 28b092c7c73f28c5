"""MCP calls that wait for the person, over stdio (`ask-user mcp`) and Streamable HTTP (the
gateway's `/mcp`), with the official clients in real processes: progress while waiting, a
client that gives up or vanishes cancels its prompt, a re-issued call attaches."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support import (
    ADMIN_TOKEN,
    AGENT_TOKEN,
    DEVICE_TOKEN,
    client,
    device_post,
    npm_package,
    wait_until,
)
from tests.support import (
    MCP_INITIALIZE as INITIALIZE,
)

QUESTIONS = {
    "questions": [
        {
            "id": "color",
            "header": "Color",
            "question": "Which theme?",
            "options": [{"label": "Dark (Recommended)"}, {"label": "Light"}],
        }
    ]
}
TRANSPORTS = ["stdio", "http"]


def _env(gateway) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    env.update(ASK_USER_GATEWAY_URL=gateway.url, ASK_USER_AGENT_TOKEN=AGENT_TOKEN)
    return env


@contextlib.asynccontextmanager
async def mcp_session(
    gateway, transport: str, session_key: str | None, cwd: Path | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized client session: the stdio server as a process (in `cwd`), or the
    gateway's /mcp; `session_key=None` is the default configuration (no key, no header)."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "app", "mcp", *(["--session-key", session_key] if session_key else [])],
            env=_env(gateway),
            cwd=cwd,
        )
        opened = stdio_client(params)
    else:
        headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
        if session_key:
            headers["Ask-User-Session"] = session_key
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
        opened = streamable_http_client(f"{gateway.url}/mcp", http_client=http)
    async with opened as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _prompts(gateway, session_key: str | None = None) -> list[dict]:
    with client(gateway.url, DEVICE_TOKEN) as device:
        prompts = device.get("/v1/prompts", params={"status": "all"}).json()["prompts"]
    return [p for p in prompts if session_key is None or p["sessionKey"] == session_key]


def _pending(gateway, session_key: str) -> dict | None:
    return next((p for p in _prompts(gateway, session_key) if p["status"] == "pending"), None)


async def _wait_pending(gateway, session_key: str) -> dict:
    return await asyncio.to_thread(wait_until, lambda: _pending(gateway, session_key), 20)


def _answered(result) -> dict:
    assert result.is_error is not True, result.content[0].text
    return json.loads(result.content[0].text)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_two_agents_configured_alike_ask_at_once_each_in_its_own_slot(gateway, transport, tmp_path):
    """PROTOCOL.md v1.4 (#40): the default configuration gives every agent its own pending
    slot, in the project's sessionKey, so the second agent no longer gets pending_exists."""
    project = tmp_path / "shop-api"
    project.mkdir()

    async def scenario() -> tuple[list[dict], list[dict]]:
        async with (
            mcp_session(gateway, transport, None, cwd=project) as first,
            mcp_session(gateway, transport, None, cwd=project) as second,
        ):
            calls = [
                asyncio.create_task(agent.call_tool("ask_user", QUESTIONS))
                for agent in (first, second)
            ]

            def both_pending() -> list[dict] | None:
                pending = [p for p in _prompts(gateway) if p["status"] == "pending"]
                return pending if len(pending) == 2 else None

            prompts = await asyncio.to_thread(wait_until, both_pending, 20)
            for prompt, label in zip(prompts, ["Light", "Dark (Recommended)"], strict=True):
                answer = {"answers": {"color": [label]}}
                await asyncio.to_thread(device_post, gateway.url, prompt["id"], "answer", answer)
            return prompts, [_answered(await call) for call in calls]

    prompts, results = asyncio.run(scenario())
    assert sorted(r["answers"]["answers"]["color"][0] for r in results) == [
        "Dark (Recommended)",
        "Light",
    ]  # each agent got the answer to its own prompt
    keys = {p["sessionKey"] for p in prompts}
    assert keys == ({f"mcp:{project}"} if transport == "stdio" else {"main"}), keys
    agents = [p["agentId"] for p in prompts]
    assert len(set(agents)) == 2 and all(a.startswith("mcp/") for a in agents), agents


def test_a_call_answered_after_45_s_hears_progress_at_least_every_15_s(gateway):
    """Both transports at once; the person answers after 45 s (clients time out at 60 s)."""

    async def one(transport: str) -> tuple[dict, list[tuple[float, float, str | None]]]:
        session_key = f"{transport}-chat"
        heard: list[tuple[float, float, str | None]] = []
        async with mcp_session(gateway, transport, session_key) as session:
            started = time.monotonic()

            async def on_progress(progress: float, total: float | None, message: str | None):
                heard.append((time.monotonic() - started, progress, message))

            call = asyncio.create_task(
                session.call_tool("ask_user", QUESTIONS, progress_callback=on_progress)
            )
            prompt = await _wait_pending(gateway, session_key)
            await asyncio.sleep(45 - (time.monotonic() - started))  # the person takes 45 s
            await asyncio.to_thread(
                device_post, gateway.url, prompt["id"], "answer", {"answers": {"color": ["Light"]}}
            )
            return _answered(await call), heard

    async def both():
        return await asyncio.gather(*(one(t) for t in TRANSPORTS))

    for result, heard in asyncio.run(both()):
        assert result == {"status": "answered", "answers": {"answers": {"color": ["Light"]}}}
        times = [t for t, _, _ in heard]
        assert len(heard) >= 4, heard  # at 0, 10, 20, 30, 40 s
        assert times[0] < 5, heard
        gaps = [b - a for a, b in zip([0.0, *times], [*times, 45.0], strict=True)]
        assert max(gaps) <= 15, heard
        assert [p for _, p, _ in heard] == sorted(p for _, p, _ in heard)  # it only grows
        assert "left" in heard[-1][2] and "14:" in heard[-1][2], heard


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_client_that_gives_up_after_5_s_and_closes_cancels_the_prompt(gateway, transport):
    session_key = f"{transport}-gives-up"

    async def scenario() -> None:
        async with mcp_session(gateway, transport, session_key) as session:
            with pytest.raises(Exception, match="timed out"):
                await session.call_tool("ask_user", QUESTIONS, read_timeout_seconds=5)

    asyncio.run(scenario())
    [prompt] = wait_until(
        lambda: [p for p in _prompts(gateway, session_key) if p["status"] != "pending"], 2
    )
    assert prompt["status"] == "cancelled"
    assert prompt["resolvedBy"] == {"kind": "agent", "reason": "run-abort"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_reissued_call_attaches_to_its_pending_prompt(gateway, transport):
    """Two calls with the same arguments make one prompt and both get its answer; the first
    to stop does not take the prompt from the other; other arguments meanwhile are refused."""
    session_key = f"{transport}-reissue"

    async def scenario():
        async with mcp_session(gateway, transport, session_key) as session:
            first = asyncio.create_task(session.call_tool("ask_user", QUESTIONS))
            prompt = await _wait_pending(gateway, session_key)
            again = asyncio.create_task(session.call_tool("ask_user", QUESTIONS))
            third = asyncio.create_task(session.call_tool("ask_user", QUESTIONS))
            await asyncio.sleep(1)  # both re-issues are in before the first gives up
            first.cancel()
            other = {**QUESTIONS, "timeoutSeconds": 60}
            refused = await session.call_tool("ask_user", other)
            assert (await asyncio.to_thread(_pending, gateway, session_key))["id"] == prompt["id"]
            await asyncio.to_thread(
                device_post,
                gateway.url,
                prompt["id"],
                "answer",
                {"answers": {"color": ["dark (recommended)"]}},
            )
            return prompt, await again, await third, refused

    prompt, again, third, refused = asyncio.run(scenario())
    expected = {"status": "answered", "answers": {"answers": {"color": ["Dark (Recommended)"]}}}
    assert _answered(again) == expected and _answered(third) == expected
    assert refused.is_error is True and "pending_exists" in refused.content[0].text
    assert [p["id"] for p in _prompts(gateway, session_key)] == [prompt["id"]]


_VANISHING_CLIENT = """
import asyncio, json, sys, httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main():
    url, token, questions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    http = httpx2.AsyncClient(
        headers={"Authorization": "Bearer " + token, "Ask-User-Session": "vanishes"}
    )
    async with streamable_http_client(url, http_client=http) as (r, w), \\
            ClientSession(r, w) as session:
        await session.initialize()
        await session.call_tool("ask_user", questions)

asyncio.run(main())
"""


def test_an_http_client_that_vanishes_mid_call_cancels_its_prompt(gateway):
    """No cancel and no DELETE (kill -9): when its stream is gone and no call comes back for
    the prompt within the grace, the prompt is cancelled."""
    from app.asking.mcp_tool import RECONNECT_GRACE_SECONDS

    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _VANISHING_CLIENT,
            f"{gateway.url}/mcp",
            AGENT_TOKEN,
            json.dumps(QUESTIONS),
        ]
    )
    try:
        asyncio.run(_wait_pending(gateway, "vanishes"))
    finally:
        process.kill()
        process.wait(10)
    [prompt] = wait_until(
        lambda: [p for p in _prompts(gateway, "vanishes") if p["status"] != "pending"],
        RECONNECT_GRACE_SECONDS + 10,
    )
    assert prompt["status"] == "cancelled"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_stopping_the_stdio_server_cancels_its_prompt_before_it_exits(gateway, signum):
    """The way clients stop a server: a signal while a call waits."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "mcp", "--session-key", "stopped"],
        env=_env(gateway),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ask_user", "arguments": QUESTIONS},
        },
    ]
    assert process.stdin is not None
    for message in messages:
        process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    prompt = asyncio.run(_wait_pending(gateway, "stopped"))
    process.send_signal(signum)
    process.wait(20)
    process.stdin.close()
    assert process.returncode is not None
    with client(gateway.url, DEVICE_TOKEN) as device:
        record = device.get(f"/v1/prompts/{prompt['id']}").json()
    assert record["status"] == "cancelled"  # already when the process is gone


@pytest.mark.parametrize(
    "token, status, code",
    [
        (None, 401, "unauthorized"),
        (DEVICE_TOKEN, 403, "forbidden"),
        (ADMIN_TOKEN, 403, "forbidden"),
    ],
    ids=["no-token", "device-token", "admin-token"],
)
def test_remote_mcp_takes_only_an_agent_token(gateway, token, status, code):
    initialize = INITIALIZE
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = httpx.post(f"{gateway.url}/mcp", json=initialize, headers=headers, timeout=10)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    ok = httpx.post(
        f"{gateway.url}/mcp",
        json=initialize,
        headers={**headers, "Authorization": f"Bearer {AGENT_TOKEN}"},
        timeout=10,
    )
    assert ok.status_code == 200 and "serverInfo" in ok.text


def _node_client(sdk: Path, transport: str, gateway, session_key: str) -> subprocess.Popen:
    script = Path(__file__).with_name("mcp_ts_client.cjs")
    if transport == "stdio":
        target = [
            sys.executable,
            json.dumps(["-m", "app", "mcp", "--session-key", session_key]),
            json.dumps(_env(gateway)),
        ]
    else:
        headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Ask-User-Session": session_key}
        target = [f"{gateway.url}/mcp", json.dumps(headers)]
    return subprocess.Popen(
        [shutil.which("node") or "node", str(script), str(sdk), "20000", transport, *target],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_typescript_sdk_with_a_20_s_timeout_reset_by_progress_survives_a_60_s_wait(gateway):
    """The client behind Claude Desktop and Cursor: `timeout: 20000, resetTimeoutOnProgress`."""
    sdk = npm_package("@modelcontextprotocol/sdk")
    lines: dict[str, list[dict]] = {t: [] for t in TRANSPORTS}
    processes = {t: _node_client(sdk, t, gateway, f"ts-{t}") for t in TRANSPORTS}

    def read(transport: str) -> None:
        stdout = processes[transport].stdout
        assert stdout is not None
        for line in stdout:
            lines[transport].append(json.loads(line))

    readers = [threading.Thread(target=read, args=(t,), daemon=True) for t in TRANSPORTS]
    for reader in readers:
        reader.start()
    try:
        prompts = {t: asyncio.run(_wait_pending(gateway, f"ts-{t}")) for t in TRANSPORTS}
        started = time.monotonic()
        wait_until(lambda: time.monotonic() - started >= 60, timeout=70, interval=0.5)
        for transport in TRANSPORTS:
            assert not any("result" in x or "error" in x for x in lines[transport]), lines
            device_post(
                gateway.url,
                prompts[transport]["id"],
                "answer",
                {"answers": {"color": ["Light"]}},
            )
        for process in processes.values():
            process.wait(30)
            assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
        for reader in readers:
            reader.join(10)
    for transport in TRANSPORTS:
        final = lines[transport][-1]
        assert "result" in final, lines[transport]
        assert json.loads(final["result"]["content"][0]["text"]) == {
            "status": "answered",
            "answers": {"answers": {"color": ["Light"]}},
        }
        assert final["t"] > 60  # waited far past the 20 s timeout, reset by progress
        assert sum("progress" in x for x in lines[transport]) >= 6


def test_the_progress_says_when_the_person_is_answering_and_follows_the_new_deadline(gateway):
    """#44: the person starts answering with 20 s left; the gateway moves the deadline to two
    minutes from then, the agent's wait hears it at once, and the progress message says so
    ("you are answering — 1:5x left") until the answer comes."""

    async def run() -> tuple[dict, list[str]]:
        session_key = "answering"
        said: list[str] = []
        async with mcp_session(gateway, "stdio", session_key) as session:

            async def on_progress(progress: float, total: float | None, message: str | None):
                said.append(message or "")

            call = asyncio.create_task(
                session.call_tool("ask_user", QUESTIONS, progress_callback=on_progress)
            )
            prompt = await _wait_pending(gateway, session_key)
            gateway.clock.advance(880)  # 20 s left of 900
            engaged = await asyncio.to_thread(device_post, gateway.url, prompt["id"], "engaged", {})
            assert engaged.status_code == 200, engaged.text
            while not any(m.startswith("you are answering — 1:") for m in said):
                await asyncio.sleep(0.2)  # the next report, within PROGRESS_SECONDS
            await asyncio.to_thread(
                device_post, gateway.url, prompt["id"], "answer", {"answers": {"color": ["Light"]}}
            )
            return _answered(await call), said

    result, said = asyncio.run(asyncio.wait_for(run(), 60))
    assert result == {"status": "answered", "answers": {"answers": {"color": ["Light"]}}}
    assert said[0].startswith("waiting for you on your phone"), said

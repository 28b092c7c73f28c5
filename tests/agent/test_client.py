"""ask_user() against a real gateway, with a device answering over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.abc
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.agent import AskUserError, ask_user, ask_user_async
from app.agent.client import HttpAsker, settings
from tests.device.proxy import CuttableProxy
from tests.support import (
    AGENT_TOKEN,
    DEVICE_TOKEN,
    GatewayProcess,
    client,
    device_post,
    next_pending,
)

QUESTIONS = [
    {
        "id": "deploy_target",
        "header": "Target",
        "question": "Where should this deploy?",
        "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}],
    }
]


@pytest.fixture
def pool():
    with ThreadPoolExecutor(2) as executor:
        yield executor


def _ask(gateway, **kw):
    return ask_user(QUESTIONS, session_key="main", gateway_url=gateway.url, token=AGENT_TOKEN, **kw)


def test_answered(gateway, pool):
    asked = pool.submit(_ask, gateway, run_id="run_1", agent_id="bot")
    prompt = next_pending(gateway.url)
    assert prompt["runId"] == "run_1" and prompt["agentId"] == "bot"
    assert (
        device_post(
            gateway.url, prompt["id"], "answer", {"answers": {"deploy_target": ["production"]}}
        ).status_code
        == 200
    )
    assert asked.result(timeout=20) == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


@pytest.mark.parametrize("how", ["expired", "dismissed", "cancelled"])
def test_no_answer(gateway, pool, how):
    asked = pool.submit(_ask, gateway, timeout_seconds=30, run_id="run_9")
    prompt = next_pending(gateway.url)
    if how == "expired":
        gateway.clock.advance(30)
    elif how == "dismissed":
        device_post(gateway.url, prompt["id"], "dismiss")
    else:
        with client(gateway.url, AGENT_TOKEN) as agent:
            assert agent.post("/v1/runs/run_9/cancel").json() == {"cancelled": [prompt["id"]]}
    assert asked.result(timeout=20) == {"status": "no_answer", "reason": how}


def test_cancelling_the_wait_cancels_the_prompt(gateway):
    async def scenario():
        task = asyncio.create_task(
            ask_user_async(
                QUESTIONS, session_key="main", gateway_url=gateway.url, token=AGENT_TOKEN
            )
        )
        prompt = await asyncio.to_thread(next_pending, gateway.url)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return prompt

    prompt = asyncio.run(scenario())
    with client(gateway.url, DEVICE_TOKEN) as device:
        record = device.get(f"/v1/prompts/{prompt['id']}").json()
    assert record["status"] == "cancelled"
    assert record["resolvedBy"] == {"kind": "agent", "reason": "run-abort"}


def test_cancelled_while_creating_still_cancels_the_prompt(gateway):
    async def scenario():
        # The gateway's responses reach the agent a second late: the prompt exists while the
        # agent is still waiting for the create to return.
        proxy = await CuttableProxy("127.0.0.1", gateway.server.port, response_delay=1.0).start()
        task = asyncio.create_task(
            ask_user_async(QUESTIONS, session_key="main", gateway_url=proxy.url, token=AGENT_TOKEN)
        )
        prompt = await asyncio.to_thread(next_pending, gateway.url)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await proxy.stop()
        return prompt

    prompt = asyncio.run(scenario())
    with client(gateway.url, DEVICE_TOKEN) as device:
        record = device.get(f"/v1/prompts/{prompt['id']}").json()
    assert record["status"] == "cancelled"  # not left pending for a run that stopped


def test_abort_event_cancels_the_prompt_and_returns_no_answer(gateway, pool):
    abort = threading.Event()
    asked = pool.submit(_ask, gateway, abort=abort)
    prompt = next_pending(gateway.url)
    abort.set()
    assert asked.result(timeout=20) == {"status": "no_answer", "reason": "cancelled"}
    with client(gateway.url, DEVICE_TOKEN) as device:
        assert device.get(f"/v1/prompts/{prompt['id']}").json()["status"] == "cancelled"


def test_rides_out_a_gateway_restart(tmp_path, pool):
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        asked = pool.submit(_ask, gateway)
        prompt = next_pending(gateway.url)
        gateway.kill()  # kill -9 in the middle of the agent's wait
        gateway.start()
        assert device_post(
            gateway.url,
            prompt["id"],
            "answer",
            {"answers": {"deploy_target": ["Staging (Recommended)"]}},
        ).is_success
        assert asked.result(timeout=30)["answers"]["answers"] == {
            "deploy_target": ["Staging (Recommended)"]
        }
    finally:
        gateway.kill()


def test_local_validation_error_makes_no_request():
    connections: list[object] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        bad = [dict(QUESTIONS[0], options=[{"label": "Only"}], id="Bad Id")]
        with pytest.raises(AskUserError) as info:
            ask_user(bad, session_key="main", gateway_url=url, token=AGENT_TOKEN)
        with contextlib.suppress(TimeoutError):
            connections.append(listener.accept())
    assert connections == []
    assert info.value.code == "invalid_prompt"
    paths = {f.path for f in info.value.fields}
    assert paths == {"questions[0].options", "questions[0].id"}
    assert "questions[0].options: 2 to 4 options allowed, got 1" in str(info.value)


def test_gateway_refusal_is_an_error(gateway, pool):
    asked = pool.submit(_ask, gateway)
    next_pending(gateway.url)
    with pytest.raises(AskUserError) as info:
        _ask(gateway)  # the same session already has a pending prompt
    assert info.value.code == "pending_exists"
    asked.cancel()
    gateway.clock.advance(900)
    assert asked.result(timeout=20)["status"] == "no_answer"


def test_unreachable_gateway_is_a_clear_error(monkeypatch):
    monkeypatch.setattr("app.agent.client.CREATE_RETRY_SECONDS", 0.5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(AskUserError) as info:
        ask_user(
            QUESTIONS, session_key="main", gateway_url=f"http://127.0.0.1:{port}", token=AGENT_TOKEN
        )
    assert info.value.code == "gateway_unreachable"


def test_wrong_token_is_a_clear_error(gateway):
    with pytest.raises(AskUserError) as info:
        ask_user(QUESTIONS, session_key="main", gateway_url=gateway.url, token=DEVICE_TOKEN)
    assert info.value.code == "forbidden"


def test_called_from_inside_an_event_loop(gateway, pool):
    asked = pool.submit(lambda: asyncio.run(_in_loop(gateway)))
    prompt = next_pending(gateway.url)
    device_post(gateway.url, prompt["id"], "dismiss")
    assert asked.result(timeout=20) == {"status": "no_answer", "reason": "dismissed"}


async def _in_loop(gateway):
    return _ask(gateway)  # a blocking call made while a loop runs in this thread


def test_an_agent_finds_the_local_gateway_by_its_data_directory(gateway, tmp_path, monkeypatch):
    """No URL and no token given: what the gateway wrote in ASK_USER_GATEWAY_DATA (its
    address in gateway.json, its agent token in tokens.json) is used."""
    from app.agent.client import settings
    from app.gateway.config import load_tokens, write_local_info

    data_dir = tmp_path / "elsewhere"
    tokens = load_tokens(data_dir)
    write_local_info(data_dir, gateway.url)
    for name in ("ASK_USER_GATEWAY_URL", "ASK_USER_AGENT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASK_USER_GATEWAY_DATA", str(data_dir))
    found = settings()
    assert (found.gateway_url, found.token) == (gateway.url, tokens.agent[0])


_BODY = {"questions": QUESTIONS}


class _ImportAttempts(importlib.abc.MetaPathFinder):
    """Records every module an import statement had to look for (one already imported is
    found in sys.modules, not here)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path=None, target=None):
        self.names.append(name)
        return None  # the usual finders go on looking


def test_the_agents_http_client_looks_for_no_module_on_each_request(gateway):
    """httpcore imports `sniffio` inside every request; without it installed (anyio >= 4.11
    no longer brings it) each request searched sys.path for it, failing four times: 3.5 ms of
    the agent's CPU per request, ten times the gateway's (#27). `sniffio` is a dependency."""

    async def requests() -> None:
        async with HttpAsker(settings(gateway.url, AGENT_TOKEN)) as asker:
            created = await asker.create({**_BODY, "sessionKey": "imports-warm"}, None)
            await asker.result(created["id"], 0)  # every code path once, imported
            attempts = _ImportAttempts()
            sys.meta_path.insert(0, attempts)
            try:
                for _ in range(5):
                    await asker.result(created["id"], 0)
            finally:
                sys.meta_path.remove(attempts)
        assert attempts.names == []

    asyncio.run(requests())


class _DropsTheFirstConnection(CuttableProxy):
    """Closes its first connection without a response (as a gateway closing a keep-alive
    connection just as a request goes out would), then passes the rest through."""

    async def _handle(self, reader, writer):
        if self.connections == 0:
            self.connections += 1
            writer.close()
            return
        await super()._handle(reader, writer)


def test_a_stopped_runs_cancel_tries_again_when_the_connection_fails(gateway):
    """A cancel that never arrives leaves the question on the phone with nobody waiting: one
    whose connection fails is sent again (the gateway answers a second cancel 409)."""
    with client(gateway.url, AGENT_TOKEN) as agent:
        prompt = agent.post("/v1/prompts", json={**_BODY, "sessionKey": "cancel-retry"}).json()

    async def cancel() -> int:
        proxy = await _DropsTheFirstConnection("127.0.0.1", gateway.server.port).start()
        try:
            async with HttpAsker(settings(proxy.url, AGENT_TOKEN)) as asker:
                await asker.cancel(prompt["id"])
        finally:
            await proxy.stop()
        return proxy.connections

    assert asyncio.run(cancel()) == 2  # the dropped one, then the one that went through
    with client(gateway.url, DEVICE_TOKEN) as device:
        record = device.get(f"/v1/prompts/{prompt['id']}").json()
    assert record["status"] == "cancelled"
    assert record["resolvedBy"]["reason"] == "run-abort"

"""MCP 2026-07-28 clients over `/mcp` (#52, PROTOCOL v1.5): no initialize and no session, the
client's name in each request's `_meta`. The official `mcp` client in that mode, against a real
gateway on 127.0.0.1: two agents of one program asking at once each get a slot (no
`pending_exists`), the card names the program, and a re-issued identical call attaches to its
prompt; `ask-user mcp` over stdio works in that mode too."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx2
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from app.protocol.asker import asker_label
from tests.support import AGENT_TOKEN, wait_until

from .test_cli_and_mcp import _env

MODE = "2026-07-28"


def _arguments(question: str) -> dict[str, Any]:
    return {
        "questions": [
            {"id": "db", "header": "Database", "question": question,
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]}
        ],
        "timeoutSeconds": 120,
    }  # fmt: skip


async def _call(url: str, name: str, arguments: dict[str, Any]) -> str:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {AGENT_TOKEN}"}, timeout=90)
    transport = streamable_http_client(f"{url}/mcp", http_client=http)
    info = Implementation(name=name, version="1.0")
    async with Client(transport, mode=MODE, client_info=info) as client:
        result = await client.call_tool("ask_user", arguments)
    return result.content[0].text


def _pending(gateway, count: int) -> list[dict]:
    def listed() -> list[dict] | None:
        prompts = gateway.device.get("/v1/prompts").json()["prompts"]
        return prompts if len(prompts) == count else None

    return wait_until(listed, 30, 0.1)


def test_two_stateless_agents_of_one_program_each_ask_and_get_their_own_answer(gateway):
    async def run() -> list[str]:
        calls = [
            asyncio.create_task(_call(gateway.url, "codex-mcp-client", _arguments(question)))
            for question in ("Which database for orders?", "Which database for billing?")
        ]
        prompts = await asyncio.to_thread(_pending, gateway, 2)
        assert len({p["agentId"] for p in prompts}) == 2
        for prompt in prompts:
            assert asker_label(prompt["sessionKey"], prompt["agentId"]).startswith("Codex")
            choice = "Postgres" if "orders" in prompt["questions"][0]["question"] else "SQLite"
            answer = {"answers": {"db": [choice]}}
            posted = gateway.device.post(f"/v1/prompts/{prompt['id']}/answer", json=answer)
            assert posted.status_code == 200
        return await asyncio.gather(*calls)

    orders, billing = asyncio.run(run())
    assert '"Postgres"' in orders and '"SQLite"' in billing


def test_a_reissued_stateless_call_attaches_to_its_prompt(gateway):
    arguments = _arguments("Which database for orders?")

    async def run() -> list[str]:
        first = asyncio.create_task(_call(gateway.url, "copilot-cli", arguments))
        [prompt] = await asyncio.to_thread(_pending, gateway, 1)
        again = asyncio.create_task(_call(gateway.url, "copilot-cli", arguments))
        tool = gateway.server.app.state.remote_mcp.tool
        await asyncio.to_thread(wait_until, lambda: tool.waiting_calls == 2, 30, 0.05)
        assert len(await asyncio.to_thread(_pending, gateway, 1)) == 1  # still one card
        assert asker_label(prompt["sessionKey"], prompt["agentId"]).startswith("Copilot")
        posted = gateway.device.post(
            f"/v1/prompts/{prompt['id']}/answer", json={"answers": {"db": ["SQLite"]}}
        )
        assert posted.status_code == 200
        return await asyncio.gather(first, again)

    results = asyncio.run(run())
    assert all('"SQLite"' in text for text in results)


def test_ask_user_mcp_over_stdio_answers_a_stateless_client(gateway):
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "app", "mcp"], env=_env(gateway)
    )

    async def run() -> str:
        async with Client(server, mode=MODE) as client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["ask_user"]
            call = asyncio.create_task(client.call_tool("ask_user", _arguments("Which DB?")))
            [prompt] = await asyncio.to_thread(_pending, gateway, 1)
            gateway.device.post(
                f"/v1/prompts/{prompt['id']}/answer", json={"answers": {"db": ["Postgres"]}}
            )
            return (await call).content[0].text

    assert '"Postgres"' in asyncio.run(run())

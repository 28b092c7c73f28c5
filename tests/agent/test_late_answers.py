"""Late answers reach the work (#44): the person answered a question after it expired; the
agent's next `ask_user` in that project carries it (`lateAnswers`), once; Python has
`late_answers()`. A real gateway on 127.0.0.1 with a clock the test moves; the MCP server over
stdio in its own process, as Claude Code runs it."""

from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from app.agent import ask_user, late_answers
from tests.support import AGENT_TOKEN, device_post, next_pending, wait_until

from .test_cli_and_mcp import _env

QUESTION = {
    "id": "db",
    "header": "Database",
    "question": "Which database for the orders service?",
    "options": [{"label": "Postgres"}, {"label": "SQLite"}],
}


def _expire_then_answer_late(gateway, prompt_id: str) -> None:
    gateway.clock.advance(31)
    wait_until(
        lambda: gateway.device.get(f"/v1/prompts/{prompt_id}").json()["status"] == "expired",
        timeout=20,
    )
    late = device_post(gateway.url, prompt_id, "late-answer", {"answers": {"db": ["Postgres"]}})
    assert late.status_code == 200, late.text


def test_the_next_mcp_call_of_the_project_carries_the_late_answer_once(gateway):
    async def call(session, question):
        return asyncio.create_task(
            session.call_tool("ask_user", {"questions": [question], "timeoutSeconds": 30})
        )

    async def scenario():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "app", "mcp", "--session-key", "shop-api"],
            env=_env(gateway),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await call(session, QUESTION)
            asked = await asyncio.to_thread(next_pending, gateway.url)
            await asyncio.to_thread(_expire_then_answer_late, gateway, asked["id"])
            results = [await first]
            for _ in range(2):
                then = await call(session, {**QUESTION, "id": "cache", "header": "Cache"})
                prompt = await asyncio.to_thread(next_pending, gateway.url)
                await asyncio.to_thread(
                    device_post, gateway.url, prompt["id"], "answer",
                    {"answers": {"cache": ["SQLite"]}},
                )  # fmt: skip
                results.append(await then)
            return asked, [json.loads(r.content[0].text) for r in results]

    asked, (expired, second, third) = asyncio.run(scenario())
    assert expired == {"status": "no_answer", "reason": "expired"}
    assert second["status"] == "answered"
    assert second["answers"] == {"answers": {"cache": ["SQLite"]}}
    [late] = second["lateAnswers"]
    assert late["promptId"] == asked["id"] and late["answers"] == {"db": ["Postgres"]}
    assert late["questions"][0]["question"] == "Which database for the orders service?"
    assert "lateAnswers" not in third  # delivered once
    record = gateway.device.get(f"/v1/prompts/{asked['id']}").json()
    assert record["lateAnswer"]["deliveredAt"] is not None


def test_python_collects_late_answers_and_ask_user_carries_them(gateway):
    settings = {"gateway_url": gateway.url, "token": AGENT_TOKEN}
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(ask_user, [QUESTION], session_key="py", timeout_seconds=30, **settings)
        asked = next_pending(gateway.url)
        _expire_then_answer_late(gateway, asked["id"])
        assert first.result(timeout=30) == {"status": "no_answer", "reason": "expired"}
    assert late_answers("other-session", **settings) == []
    [late] = late_answers("py", **settings)
    assert late["promptId"] == asked["id"] and late["answers"] == {"db": ["Postgres"]}
    assert late_answers("py", **settings) == []  # acknowledged: not again

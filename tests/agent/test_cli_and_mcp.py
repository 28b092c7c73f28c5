"""The shell command and the MCP server, as separate processes against a real gateway."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, client, device_post, next_pending, wait_until


def _env(gateway) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    env.update(ASK_USER_GATEWAY_URL=gateway.url, ASK_USER_AGENT_TOKEN=AGENT_TOKEN)
    return env


def _ask(gateway, *args, stdin=None, preexec_fn=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "app", "ask", *args],
        env=_env(gateway),
        preexec_fn=preexec_fn,
        text=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_quick_question_answered_exit_0(gateway):
    process = _ask(
        gateway,
        "--question",
        "Which database?",
        "--header",
        "DB",
        "--id",
        "db",
        "--option",
        "Postgres (Recommended)",
        "--option",
        "SQLite",
    )
    prompt = next_pending(gateway.url)
    assert prompt["questions"][0]["header"] == "DB"
    device_post(gateway.url, prompt["id"], "answer", {"answers": {"db": ["sqlite"]}})
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert json.loads(out) == {"status": "answered", "answers": {"answers": {"db": ["SQLite"]}}}


def test_file_on_stdin_dismissed_exit_2(gateway, tmp_path):
    prompt_json = json.dumps(
        {
            "questions": [
                {
                    "id": "features",
                    "header": "Features",
                    "question": "Which?",
                    "multiSelect": True,
                    "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}],
                }
            ],
            "timeoutSeconds": 120,
        }
    )
    process = _ask(gateway, stdin=True)
    process.stdin.write(prompt_json)
    process.stdin.close()
    prompt = next_pending(gateway.url)
    assert prompt["questions"][0]["multiSelect"] is True
    device_post(gateway.url, prompt["id"], "dismiss")
    out = process.stdout.read()
    assert process.wait(30) == 2
    assert json.loads(out) == {"status": "no_answer", "reason": "dismissed"}


def test_file_flag_and_invalid_prompt_exit_1(gateway, tmp_path):
    path = tmp_path / "prompt.json"
    path.write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "x",
                        "header": "X",
                        "question": "Q?",
                        "options": [{"label": "Other"}, {"label": "B"}],
                    }
                ]
            }
        )
    )
    process = _ask(gateway, "--file", str(path))
    out, err = process.communicate(timeout=30)
    assert process.returncode == 1 and out == ""
    assert "questions[0].options[0].label" in err and "automatically" in err


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        ("", "stdin is empty: give the prompt as JSON"),
        ("  \n", "stdin is empty: give the prompt as JSON"),
        ("{questions:", "the prompt is not JSON (Expecting property name"),
    ],
)
def test_an_empty_or_broken_prompt_says_what_to_give(gateway, stdin, says):
    process = _ask(gateway, stdin=stdin)
    _, err = process.communicate(stdin, timeout=30)
    assert process.returncode == 1
    assert err.startswith(f"error: {says}"), err
    assert "Expecting value: line 1" not in err or "not JSON" in err


def test_a_problem_with_one_field_is_said_once(gateway):
    body = {
        "questions": [{"id": "q", "header": "H", "question": "Q?", "options": [{"label": "a"}]}]
    }
    process = _ask(gateway, stdin="")
    _, err = process.communicate(json.dumps(body), timeout=30)
    assert process.returncode == 1
    assert err.count("2 to 4 options allowed") == 1, err


def test_an_unreachable_gateway_is_said_at_once_not_after_the_retries(gateway):
    from tests.support import free_port

    body = {
        "questions": [
            {
                "id": "q",
                "header": "H",
                "question": "Q?",
                "options": [{"label": "a"}, {"label": "b"}],
            }
        ]
    }
    nobody = f"http://127.0.0.1:{free_port()}"
    process = _ask(gateway, "--gateway-url", nobody, stdin="")
    process.stdin.write(json.dumps(body))
    process.stdin.close()
    first = process.stderr.readline()
    try:
        assert process.poll() is None  # still trying: the person was told while it retries
        assert f"cannot reach the gateway at {nobody}" in first and "trying again" in first
    finally:
        process.kill()
        process.wait(10)


def test_with_no_gateway_ever_started_here_it_says_how_to_get_a_token(tmp_path):
    """A first try before any gateway ran on this machine: no token anywhere. The command says
    where a token comes from, in the command line's own terms, and where a gateway keeps it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    env["ASK_USER_GATEWAY_DATA"] = str(tmp_path / "nothing-here")
    done = subprocess.run(
        [sys.executable, "-m", "app", "ask", "--question", "Q?", "--option", "a", "--option", "b"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stderr
    assert said.startswith("error: no agent token: set ASK_USER_AGENT_TOKEN"), said
    assert "--token" in said and "python -m app gateway" in said
    assert str(tmp_path / "nothing-here" / "tokens.json") in said


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does to a background job


@pytest.mark.parametrize(
    "signum, exit_code, preexec_fn",
    [
        (signal.SIGINT, 130, None),
        (signal.SIGINT, 130, _ignore_sigint),
        (signal.SIGTERM, 143, None),
        (signal.SIGHUP, 129, None),
    ],
    ids=["ctrl-c", "ctrl-c-in-a-background-job", "sigterm", "sighup"],
)
def test_stopping_the_command_cancels_the_prompt(gateway, signum, exit_code, preexec_fn):
    process = _ask(
        gateway, "--question", "Go?", "--option", "Yes", "--option", "No", preexec_fn=preexec_fn
    )
    prompt = next_pending(gateway.url)
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    assert process.returncode == exit_code, err
    assert "cancelled" in err
    with client(gateway.url, DEVICE_TOKEN) as device:
        record = device.get(f"/v1/prompts/{prompt['id']}").json()
    assert record["status"] == "cancelled"
    assert record["resolvedBy"]["reason"] == "run-abort"


def test_mcp_client_calls_ask_user_and_gets_the_devices_answer(gateway):
    async def scenario():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "app", "mcp", "--session-key", "mcp-chat"],
            env=_env(gateway),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == ["ask_user"]
            assert tools[0].input_schema["additionalProperties"] is False
            call = asyncio.create_task(
                session.call_tool(
                    "ask_user",
                    {
                        "questions": [
                            {
                                "id": "color",
                                "header": "Color",
                                "question": "Which theme?",
                                "options": [{"label": "Dark (Recommended)"}, {"label": "Light"}],
                            }
                        ],
                    },
                )
            )
            prompt = await asyncio.to_thread(next_pending, gateway.url)
            assert prompt["sessionKey"] == "mcp-chat"
            await asyncio.to_thread(
                device_post, gateway.url, prompt["id"], "answer", {"answers": {"color": ["Light"]}}
            )
            result = await call
            invalid = await session.call_tool("ask_user", {"questions": []})
            return result, invalid

    result, invalid = asyncio.run(scenario())
    assert result.is_error is not True
    assert json.loads(result.content[0].text) == {
        "status": "answered",
        "answers": {"answers": {"color": ["Light"]}},
    }
    assert invalid.is_error is True
    assert "1 to 3 questions allowed" in invalid.content[0].text


def _line_within(stream, seconds: float) -> bytes:
    """The next line of a pipe, or a failure once `seconds` pass without one (not a hang)."""
    import select

    ready, _, _ = select.select([stream], [], [], seconds)
    assert ready, f"no line within {seconds} s"
    return stream.readline()


def _mcp_lines(gateway, messages: list[dict], answers: int) -> list[dict]:
    """What `ask-user mcp` writes back to `messages`, its first `answers` lines."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(gateway),
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    process.stdin.flush()
    lines = [json.loads(process.stdout.readline()) for _ in range(answers)]
    process.stdin.close()
    process.wait(20)
    return lines


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "x"])
def test_initialize_answered_before_the_sdk_loads_is_the_sdks_own_answer(gateway, version):
    """#40: the early answer (handshake.py) says what the SDK says, whatever the client asks
    for; the SDK's answer is the one it gives when `initialize` is not the first message."""
    from tests.support import MCP_INITIALIZE

    initialize = {
        **MCP_INITIALIZE,
        "params": {**MCP_INITIALIZE["params"], "protocolVersion": version},
    }
    [early] = _mcp_lines(gateway, [initialize], 1)
    ping = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    _, by_the_sdk = _mcp_lines(gateway, [ping, initialize], 2)
    assert early == by_the_sdk
    # The session goes on from the early answer: the SDK's second answer is not sent.
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    _, tools = _mcp_lines(gateway, [initialize, initialized, listing], 2)
    assert tools["id"] == 2 and tools["result"]["tools"][0]["name"] == "ask_user"


def test_tools_list_answered_before_the_sdk_loads_is_the_sdks_own_answer(gateway, tmp_path):
    """Claude Code in -p takes its tool list once, early: a server still importing the SDK was
    left out of a whole run on a loaded machine. The `tools/list` after `initialize` is answered
    before the SDK loads, with the bytes the SDK would send; the SDK's own answer is not sent
    twice, and the session goes on."""
    from tests.support import MCP_INITIALIZE

    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    again = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    ping = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    # Both answered while the SDK is still loading: an `mcp` package that never finishes
    # importing stands in for a slow machine.
    slow = tmp_path / "slow"
    (slow / "mcp").mkdir(parents=True)
    (slow / "mcp" / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    env = _env(gateway)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(slow), env.get("PYTHONPATH")]))
    process = subprocess.Popen(  # unbuffered: a line read takes nothing of the next
        [sys.executable, "-m", "app", "mcp"], bufsize=0,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(
            b"".join(json.dumps(m).encode() + b"\n" for m in (MCP_INITIALIZE, initialized, listing))
        )
        process.stdin.flush()
        answered = [json.loads(_line_within(process.stdout, 60)) for _ in range(2)]
        assert [m["id"] for m in answered] == [MCP_INITIALIZE["id"], 2]
    finally:
        process.kill()
        process.wait(20)
    early = _mcp_lines(gateway, [MCP_INITIALIZE, initialized, listing, again], 3)
    assert [m["id"] for m in early] == [MCP_INITIALIZE["id"], 2, 3]  # each once, in order
    by_the_sdk = _mcp_lines(gateway, [ping, MCP_INITIALIZE, initialized, listing], 3)
    assert early[1] == by_the_sdk[2] == answered[1]
    assert early[2]["result"] == by_the_sdk[2]["result"]


def test_two_shells_in_two_folders_both_ask_and_the_cards_name_the_folder(gateway, tmp_path):
    """#53: `ask-user ask` asks in its folder's slot, as `ask-user mcp` does; the second shell
    no longer exits "this session already has a pending prompt"."""
    from app.protocol.asker import asker_label

    folders = [tmp_path / "shop", tmp_path / "blog"]
    runs = []
    for folder in folders:
        folder.mkdir()
        runs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app",
                    "ask",
                    "--question",
                    f"Deploy {folder.name}?",
                    "--option",
                    "Yes",
                    "--option",
                    "No",
                ],
                env=_env(gateway),
                cwd=folder,
                text=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    try:
        prompts = wait_until(
            lambda: (
                (p := gateway.device.get("/v1/prompts").json()["prompts"]) and len(p) == 2 and p
            ),
            30,
            0.1,
        )
        labels = sorted(asker_label(p["sessionKey"], p["agentId"]) for p in prompts)
        assert labels == ["ask-user · blog", "ask-user · shop"]
        for prompt in prompts:
            device_post(gateway.url, prompt["id"], "answer", {"answers": {"answer": ["Yes"]}})
        for run in runs:
            out, err = run.communicate(timeout=30)
            assert run.returncode == 0, err
            assert '"answer": ["Yes"]' in out
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()

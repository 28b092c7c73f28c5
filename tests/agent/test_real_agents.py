"""The real Claude Code and Codex (from npm, pinned), each configured only by `ask-user setup
<client>` in a temporary HOME and driven by a scripted model on 127.0.0.1 (#40): several
agents ask at once and each gets its own answer; a program killed mid-wait takes its question
off the phone. The programs' native binaries run as they are (no Node.js needed for them)."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agent.scripted_models import QUESTIONS, ScriptedModels
from tests.support import AGENT_TOKEN, DEVICE_TOKEN, client, device_post, npm_package, wait_until

LABELS = [option["label"] for option in QUESTIONS["questions"][0]["options"]]


def _binary(package: str, *inside: str) -> Path:
    """A program's native binary, from the platform package npm installed beside `package`."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        pytest.fail(f"these tests know the Linux x86_64 build only, not {platform.machine()}")
    path = npm_package(package).parent.joinpath(*inside)
    assert path.exists(), f"{path} is missing: the platform package did not install"
    return path


def claude() -> Path:
    return _binary("@anthropic-ai/claude-code", "claude-code-linux-x64", "claude")


def codex() -> Path:
    vendor = ("vendor", "x86_64-unknown-linux-musl", "bin", "codex")
    return _binary("@openai/codex", "codex-linux-x64", *vendor)


@pytest.fixture
def models() -> Iterator[ScriptedModels]:
    running = ScriptedModels()
    yield running
    running.close()


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "shop-api"
    folder.mkdir()
    return folder


# Variables that point a program (or ours) at settings elsewhere than the temporary HOME.
AGENT_VARIABLES = ("ASK_USER_", "CLAUDE", "ANTHROPIC", "CODEX", "OPENAI", "GEMINI", "GOOGLE",
                   "COPILOT", "XDG_")  # fmt: skip


def _home(tmp_path: Path, gateway, client_name: str) -> dict[str, str]:
    """A temporary HOME set up by `ask-user setup <client>` alone; the environment the
    programs run in, with nothing of ours, nor any agent program's own settings, in it but
    HOME."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(AGENT_VARIABLES)}
    env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "app", "setup", client_name, "--gateway-url", gateway.url,
         "--token", AGENT_TOKEN],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return env


def _claude(env: dict[str, str], models: ScriptedModels, project: Path) -> subprocess.Popen:
    env = {
        **env,
        "ANTHROPIC_BASE_URL": models.url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no telemetry, updates or reports
        "DISABLE_AUTOUPDATER": "1",
    }
    return subprocess.Popen(
        [str(claude()), "-p", "Ask me which theme to use"],
        env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def _codex(env: dict[str, str], models: ScriptedModels, project: Path) -> subprocess.Popen:
    provider = (
        f'{{name="scripted", base_url="{models.url}/v1", wire_api="responses", '
        'env_key="SCRIPTED_API_KEY"}'
    )
    # The model provider and what keeps Codex on 127.0.0.1 are the test's, on the command
    # line: the file is what `setup codex` wrote.
    return subprocess.Popen(
        [str(codex()), "exec", "--skip-git-repo-check",
         "-c", 'model_provider="scripted"', "-c", f"model_providers.scripted={provider}",
         "-c", 'model="scripted-model"', "-c", "analytics.enabled=false",
         "--disable", "plugins", "--disable", "remote_plugin",
         "Ask me which theme to use"],
        env={**env, "SCRIPTED_API_KEY": "sk-scripted"}, cwd=project, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _prompts(gateway, status: str = "pending") -> list[dict]:
    with client(gateway.url, DEVICE_TOKEN) as device:
        listed = device.get("/v1/prompts", params={"status": "all"}).json()["prompts"]
    return [p for p in listed if p["status"] == status]


def _pending_from(
    gateway,
    runs: list[subprocess.Popen],
    count: int,
    again: Callable[[], subprocess.Popen] | None = None,
) -> list[dict]:
    """The `count` prompts the runs asked, once all are pending; a run that ends before
    asking fails the test with what it said. With `again`: a run that the scripted model
    answered "ok" because the program's first turn went out before its MCP server was up
    (`claude -p` on a loaded machine: the tool was not offered yet) is started again, once."""
    restarted: set[int] = set()

    def asked() -> list[dict] | None:
        for index, run in enumerate(runs):
            if run.poll() is not None:
                out, err = run.communicate()
                if again is not None and out.strip() == "ok" and index not in restarted:
                    restarted.add(index)
                    runs[index] = again()
                    continue
                raise AssertionError(
                    f"exited {run.returncode} before asking:\n{out}\n{err[-3000:]}"
                )
        pending = _prompts(gateway)
        return pending if len(pending) == count else None

    try:
        return wait_until(asked, 180, 0.2)
    except AssertionError as exc:
        if "before asking" in str(exc):
            raise
        _kill_all(runs)
        said = "\n---\n".join(f"{run.stdout.read()}\n{run.stderr.read()[-3000:]}" for run in runs)
        asked_now = len(_prompts(gateway))
        raise AssertionError(f"{asked_now} of {count} asked; the runs said:\n{said}") from exc


def _finished(process: subprocess.Popen, timeout: float = 120) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"exit {process.returncode}\n{out}\n{err[-3000:]}"
    return out


def _kill_all(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_two_claude_code_runs_asking_at_once_each_get_their_own_answer(
    gateway, models, project, tmp_path
):
    env = _home(tmp_path, gateway, "claude-code")
    runs = [_claude(env, models, project) for _ in range(2)]
    try:
        prompts = _pending_from(gateway, runs, 2, again=lambda: _claude(env, models, project))
        for prompt, label in zip(prompts, LABELS, strict=True):
            device_post(gateway.url, prompt["id"], "answer", {"answers": {"color": [label]}})
        outputs = [_finished(run) for run in runs]
    finally:
        _kill_all(runs)
    heard = sorted(label for out in outputs for label in LABELS if f'["{label}"]' in out)
    assert heard == sorted(LABELS), outputs  # each run got one answer, and not the same one
    assert {p["sessionKey"] for p in prompts} == {f"claude-code:{project}"}
    assert len({p["agentId"] for p in prompts}) == 2, prompts
    assert all(p["agentId"].startswith("claude-code/") for p in prompts)


def test_codex_exec_gets_the_answer_given_after_20_s_in_each_of_5_runs(
    gateway, models, project, tmp_path
):
    """Five `codex exec` at once (the tool must be there on the first turn: `required`), each
    answered 20 s after its question reaches the phone."""
    env = _home(tmp_path, gateway, "codex")
    runs = [_codex(env, models, project) for _ in range(5)]
    answered: set[str] = set()

    def person() -> None:
        seen: dict[str, float] = {}
        while len(answered) < len(runs):
            now = time.monotonic()
            for prompt in _prompts(gateway):
                seen.setdefault(prompt["id"], now)
                if now - seen[prompt["id"]] >= 20 and prompt["id"] not in answered:
                    device_post(gateway.url, prompt["id"], "answer",
                                {"answers": {"color": ["Light"]}})  # fmt: skip
                    answered.add(prompt["id"])
            time.sleep(0.2)

    answering = threading.Thread(target=person, daemon=True)
    answering.start()
    try:
        outputs = [_finished(run, timeout=180) for run in runs]
    finally:
        _kill_all(runs)
    assert len(answered) == 5
    for out in outputs:
        assert "ANSWERED:" in out and '"color":["Light"]' in out, out
    first_turns = [body for path, body in models.requests if not _has_tool_output(body)]
    assert len(first_turns) == 5 and all("ask_user" in str(b.get("tools")) for b in first_turns)


def _has_tool_output(body: dict) -> bool:
    return any(item.get("type") == "function_call_output" for item in body.get("input") or [])


@pytest.mark.parametrize("program", ["claude-code", "codex"])
def test_killing_the_program_mid_wait_takes_the_question_off_the_phone(
    gateway, models, project, tmp_path, program
):
    env = _home(tmp_path, gateway, program)
    start = _claude if program == "claude-code" else _codex
    runs = [start(env, models, project)]
    try:
        [prompt] = _pending_from(gateway, runs, 1, again=lambda: start(env, models, project))
        [run] = runs
        run.kill()  # SIGKILL: the program has no say; its `ask-user mcp` sees stdin close
        run.communicate()
        cancelled = wait_until(lambda: _prompts(gateway, "cancelled"), 20, 0.1)
        assert [p["id"] for p in cancelled] == [prompt["id"]]
    finally:
        _kill_all(runs)

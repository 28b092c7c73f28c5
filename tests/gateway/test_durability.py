"""Nothing accepted is lost: kill -9 and restarts, deadlines across downtime, token files, logs."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor

import httpx

from app.gateway import load_tokens
from app.gateway.settings import GatewaySettings
from tests.support import AGENT_TOKEN, DEVICE_TOKEN, GatewayProcess, client, prompt_body


def test_kill_9_while_pending_then_restart_and_answer(tmp_path):
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        agent = client(gateway.url, AGENT_TOKEN)
        created = agent.post("/v1/prompts", json=prompt_body(requestId="r1")).json()
        gateway.kill()
        try:
            agent.get(f"/v1/prompts/{created['id']}/result", params={"wait": 0})
            raise AssertionError("the gateway should be down")
        except httpx.TransportError:
            pass
        gateway.start()  # same port, same data directory
        device = client(gateway.url, DEVICE_TOKEN)
        back = device.get(f"/v1/prompts/{created['id']}").json()
        assert back["status"] == "pending"
        assert back["expiresAt"] == created["expiresAt"]
        assert (
            agent.post("/v1/prompts", json=prompt_body(requestId="r1")).json()["id"]
            == (created["id"])
        )  # the idempotency key survived too
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                agent.get, f"/v1/prompts/{created['id']}/result", params={"wait": 30}
            )
            answered = device.post(
                f"/v1/prompts/{created['id']}/answer",
                json={"answers": {"deploy_target": ["Production"]}},
            )
            assert answered.status_code == 200
            assert waiting.result(timeout=20).json() == {
                "status": "answered",
                "answers": {"answers": {"deploy_target": ["Production"]}},
            }
        gateway.kill()
        gateway.start()
        again = client(gateway.url, DEVICE_TOKEN).get(f"/v1/prompts/{created['id']}").json()
        assert again["status"] == "answered"  # an accepted answer survives kill -9
    finally:
        gateway.kill()


def test_restart_after_the_deadline_expires_with_an_event(gateway):
    record = gateway.create(timeoutSeconds=60)
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    gateway.clock.advance(120)  # the gateway is "down" (stopped below) past the deadline
    clock = gateway.clock
    gateway.server.stop()
    from tests.support import start_gateway

    restarted = start_gateway(gateway.data_dir, clock)
    try:
        events = restarted.device.get("/v1/events", params={"after": cursor, "wait": 0}).json()
        assert [(e["type"], e["prompt"]["status"]) for e in events["events"]] == [
            ("prompt.resolved", "expired")
        ]
        result = restarted.agent.get(f"/v1/prompts/{record['id']}/result", params={"wait": 0})
        assert result.json() == {"status": "no_answer", "reason": "expired"}
    finally:
        restarted.stop()


def test_pending_deadline_is_rearmed_after_restart(gateway):
    record = gateway.create(timeoutSeconds=60)
    restarted = gateway.restart()
    try:
        assert restarted.device.get(f"/v1/prompts/{record['id']}").json()["status"] == "pending"
        cursor = restarted.device.get("/v1/prompts").json()["cursor"]
        restarted.clock.advance(60)
        events = restarted.device.get("/v1/events", params={"after": cursor, "wait": 10}).json()
        assert events["events"][0]["prompt"]["status"] == "expired"
    finally:
        restarted.stop()


def test_tokens_are_made_once_and_kept_private(tmp_path):
    first = load_tokens(tmp_path)
    assert first.file == tmp_path / "tokens.json"
    assert stat.S_IMODE(os.stat(first.file).st_mode) == 0o600
    assert len(first.agent) == len(first.device) == len(first.admin) == 1
    assert load_tokens(tmp_path) == first
    a1, a2, d1 = "a" * 16, "agent-2-" * 3, "device-token-0001"
    from_env = load_tokens(
        tmp_path, GatewaySettings(agent_tokens=f"{a1}, {a2}", device_tokens=d1).named_tokens()
    )
    assert (from_env.agent, from_env.device, from_env.file) == ((a1, a2), (d1,), None)


def test_one_log_line_per_request_and_never_a_token(tmp_path):
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        agent = client(gateway.url, AGENT_TOKEN)
        created = agent.post("/v1/prompts", json=prompt_body())
        assert created.status_code == 201
        client(gateway.url, DEVICE_TOKEN).get("/v1/prompts")
        client(gateway.url, "wrong-secret").get("/v1/prompts")
    finally:
        gateway.terminate()
    log = gateway.log()
    assert "INFO ask_user.gateway: POST /v1/prompts 201" in log
    assert "INFO ask_user.gateway: GET /v1/prompts 200" in log
    assert "INFO ask_user.gateway: GET /v1/prompts 401" in log
    for secret in (AGENT_TOKEN, DEVICE_TOKEN, "wrong-secret"):
        assert secret not in log


def test_gateway_makes_tokens_on_first_start_and_says_where(tmp_path):
    import subprocess
    import sys

    from tests.support import free_port, wait_until

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    log = tmp_path / "out.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.gateway",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / "d"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_until(lambda: "Tokens (agent, device, admin) are in" in log.read_text(), timeout=20)
        tokens = load_tokens(tmp_path / "d")
        assert str(tokens.file) in log.read_text()
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _up(url), timeout=20)
        response = client(url, tokens.agent[0]).post("/v1/prompts", json=prompt_body())
        assert response.status_code == 201
    finally:
        process.terminate()
        process.wait(10)
    assert tokens.agent[0] not in log.read_text()


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/v1/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_one_gateway_process_per_data_directory_and_kill_9_lets_go(tmp_path):
    """A second gateway on the same SQLite file would neither show devices what agents asked
    the first nor wake the agents waiting there: it stops at once, naming the folder and the
    process that has it, and the first keeps serving. After `kill -9` of the first, the
    kernel has let go of the file, and the next one starts and has what was accepted."""
    import subprocess
    import sys

    from tests.support import free_port

    data_dir = tmp_path / "data"
    first = GatewayProcess(data_dir).start()
    try:
        agent = client(first.url, AGENT_TOKEN)
        created = agent.post("/v1/prompts", json=prompt_body()).json()
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "app",
                "gateway",
                "--data-dir",
                str(data_dir),
                "--port",
                str(free_port()),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")},
        )
        assert second.returncode == 2, second.stdout + second.stderr
        assert second.stderr.startswith(
            f"error: another gateway (process {first.process.pid}) is using {data_dir}:"
        ), second.stderr
        assert "--data-dir" in second.stderr
        assert (
            client(first.url, DEVICE_TOKEN).get(f"/v1/prompts/{created['id']}").status_code == 200
        )
        first.kill()
        first.start()  # a new process, the same folder
        back = client(first.url, DEVICE_TOKEN).get(f"/v1/prompts/{created['id']}").json()
        assert back["status"] == "pending"
    finally:
        first.kill()

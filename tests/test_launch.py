"""The launcher's port probe: a restart keeps the embedded gateway's port."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from app.launch import port_free


def _time_wait_port() -> int:
    """A port whose last connection the server closed first: it sits in TIME_WAIT, as after an
    app that served agents and devices was restarted."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()  # the server side closes first: its end goes to TIME_WAIT
    client.recv(1)
    client.close()
    server.close()
    return port


def _environment(app_data: Path, gateway_data: Path) -> dict[str, str]:
    """This environment without any ASK_USER_ setting, and the app's and gateway's folders."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    env.update(ASK_USER_APP_DATA=str(app_data), ASK_USER_GATEWAY_DATA=str(gateway_data))
    return env


def _stop(app: subprocess.Popen) -> None:
    """As Ctrl-C would, and killed when that is not enough."""
    app.terminate()
    try:
        app.wait(20)
    except subprocess.TimeoutExpired:
        app.kill()


def test_a_port_in_time_wait_is_free_for_the_next_run():
    port = _time_wait_port()
    with socket.socket() as plain:  # what the old probe did: it called this port busy
        try:
            plain.bind(("127.0.0.1", port))
            plain_probe_free = True
        except OSError:
            plain_probe_free = False
    assert not plain_probe_free, "the setup did not leave the port in TIME_WAIT"
    assert port_free("127.0.0.1", port)


def test_a_port_someone_listens_on_is_taken():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert not port_free("127.0.0.1", listener.getsockname()[1])


def test_stopping_the_demo_cancels_its_agents_prompts(tmp_path):
    """SIGTERM ends `python -m app demo` like Ctrl-C: its agents' prompts are cancelled, so
    the next demo does not find them pending (it printed tracebacks before)."""
    import json
    import signal
    import sys

    from app.demo import DEMO_PROMPTS
    from tests.support import GatewayProcess, client, free_port, wait_until

    gateway_dir = tmp_path / "gateway"
    env = _environment(tmp_path / "app", gateway_dir)
    gateway_port = free_port()
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "demo",
            "--web",
            "--port",
            str(free_port()),
            "--gateway-port",
            str(gateway_port),
        ],
        env=env,
        stdout=(tmp_path / "demo.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: (gateway_dir / "tokens.json").exists(), timeout=60)
        token = json.loads((gateway_dir / "tokens.json").read_text())["device"][0]
        url = f"http://127.0.0.1:{gateway_port}"

        def pending() -> int:
            try:
                with client(url, token, timeout=5) as device:
                    return len(device.get("/v1/prompts").json()["prompts"])
            except Exception:
                return 0

        count = len(DEMO_PROMPTS)
        wait_until(lambda: pending() == count, timeout=60)
        # Asked in order (#53, 3): the oldest (the stepper's) and the newest (the top card)
        # are English; prompt ids sort in the order the gateway took them.
        with client(url, token, timeout=5) as device:
            prompts = sorted(device.get("/v1/prompts").json()["prompts"], key=lambda p: p["id"])
        sessions = [p["sessionKey"] for p in prompts]
        assert sessions == list(DEMO_PROMPTS)
        assert "persian-docs" not in (sessions[0], sessions[-1])
        demo.send_signal(signal.SIGTERM)
        # It ends on its own (not killed by the signal): through our handler (143) or, once
        # Flet's server has taken SIGTERM, its orderly shutdown (0); either way the agents'
        # runs are stopped first.
        assert demo.wait(30) in (0, 128 + signal.SIGTERM), (tmp_path / "demo.log").read_text()
    finally:
        if demo.poll() is None:
            demo.kill()
    gateway = GatewayProcess(gateway_dir, env_tokens=False).start()
    try:
        with client(gateway.url, token) as device:
            prompts = device.get("/v1/prompts", params={"status": "all"}).json()["prompts"]
        assert len(prompts) == count
        said = (tmp_path / "demo.log").read_text()  # a cancel that failed says why there
        assert {(p["status"], (p["resolvedBy"] or {}).get("reason")) for p in prompts} == {
            ("cancelled", "run-abort")
        }, said
    finally:
        gateway.terminate()


def test_pair_finds_the_embedded_gateway_where_it_listens_and_prints_the_browsers_link(tmp_path):
    """The usual gateway port taken, the app's gateway is elsewhere: `pair` on this machine
    finds it (it said no gateway answers at :8765) and prints the web app's /pair link too."""
    import json
    import re
    import sys

    import httpx

    from app.protocol import PairLink, parse_link
    from tests.support import free_port, wait_until

    gateway_dir = tmp_path / "gateway"
    env = _environment(tmp_path / "app", gateway_dir)
    taken = socket.create_server(("127.0.0.1", 0))  # someone else is on the gateway's port
    web_port = free_port()
    app = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "--web",
            "--port",
            str(web_port),
            "--gateway-port",
            str(taken.getsockname()[1]),
        ],
        env=env,
        stdout=(tmp_path / "app.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        info = gateway_dir / "gateway.json"
        wait_until(lambda: info.exists() and "webAppUrl" in info.read_text(), timeout=60)
        local_url = json.loads(info.read_text())["localUrl"]
        assert not local_url.endswith(f":{taken.getsockname()[1]}")
        done = subprocess.run(
            [sys.executable, "-m", "app", "pair"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        browser = re.search(r"^Browser:\s+(\S+)$", done.stdout, re.M).group(1)
        assert browser.startswith(f"http://127.0.0.1:{web_port}/pair?")
        link = parse_link(browser)
        assert isinstance(link, PairLink) and link.gateway_url == local_url
        paired = httpx.post(f"{local_url}/v1/devices", json={"code": link.code}, timeout=10)
        assert paired.status_code == 201, paired.text
    finally:
        _stop(app)
        taken.close()


def test_the_app_uses_the_gateway_already_running_on_its_data_and_never_starts_a_second(
    tmp_path,
):
    """`python -m app gateway` runs on the data directory the app's embedded gateway would use:
    the app uses that gateway (a second one on the same SQLite file would not hear the
    first's prompts) and says so; when the one holding the data does not answer, the app
    stops with a message instead."""
    import sys

    import httpx

    from app.gateway.store.sqlite import PromptStore
    from app.protocol.local_gateway import read_local_gateway
    from tests.support import GatewayProcess, free_port, wait_until

    gateway_dir = tmp_path / "gateway"
    env = _environment(tmp_path / "app", gateway_dir)
    gateway = GatewayProcess(gateway_dir, env_tokens=False).start()
    web_port, gateway_port = free_port(), free_port()
    log = tmp_path / "app.log"
    command = [sys.executable, "-m", "app", "--web", "--port", str(web_port)]
    app = subprocess.Popen(
        [*command, "--gateway-port", str(gateway_port)],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:

        def serving() -> bool:
            assert app.poll() is None, log.read_text()
            try:
                return httpx.get(f"http://127.0.0.1:{web_port}/", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(serving, timeout=60)
        said = log.read_text()
        assert f"Gateway on {gateway.url}\n" in said, said
        assert f"(process {gateway.process.pid}): this app uses it, at {gateway.url}" in said
        assert "Embedded gateway" not in said
        assert port_free("127.0.0.1", gateway_port)  # no second gateway
        assert read_local_gateway(gateway_dir).local_url == gateway.url  # `pair` still finds it
    finally:
        _stop(app)
        gateway.terminate()

    held = PromptStore(gateway_dir / "gateway.sqlite3")  # held, and nothing answers at its address
    try:
        refused = subprocess.run(
            [*command, "--gateway-port", str(free_port())],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        held.close_now()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        f"error: the embedded gateway cannot start: another gateway (process {os.getpid()}) "
        f"is using {gateway_dir}:" in refused.stderr
    ), refused.stderr


def test_pairing_the_app_with_its_own_gateway_keeps_that_gateway_across_restarts(tmp_path):
    """#44 (1): `python -m app`, then `python -m app pair`, its Browser link, Pair: the next
    `python -m app` starts the embedded gateway again (it started none, and the app said it
    was offline), and the device keeps the token its pairing gave it."""
    import json
    import re
    import sys

    import httpx

    from app.device import LocalStore, Settings
    from app.device.environment import STORE_FILE
    from app.protocol import PairLink, parse_link
    from tests.support import free_port, wait_until

    gateway_dir, app_dir = tmp_path / "gateway", tmp_path / "app"
    env = _environment(app_dir, gateway_dir)
    info = gateway_dir / "gateway.json"
    command = [sys.executable, "-m", "app", "--web", "--gateway-port", str(free_port())]

    def started(log: Path) -> subprocess.Popen:
        info.unlink(missing_ok=True)
        app = subprocess.Popen(
            [*command, "--port", str(free_port())],
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        wait_until(lambda: "Point an agent at it" in log.read_text(), timeout=60)
        return app

    first = started(tmp_path / "first.log")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "app", "pair"], env=env, capture_output=True, text=True
        )
        link = parse_link(re.search(r"^Browser:\s+(\S+)$", done.stdout, re.M).group(1))
        assert isinstance(link, PairLink), done.stdout
        paired = httpx.post(
            f"{link.gateway_url}/v1/devices", json={"code": link.code, "name": "Browser"}
        )
        assert paired.status_code == 201, paired.text
    finally:
        _stop(first)
    token = paired.json()["token"]
    store = LocalStore(app_dir / STORE_FILE)  # what the app's Pair keeps (DeviceCore.pair)
    Settings(link.gateway_url, token, "Browser").save(store)
    store.close()

    second = started(tmp_path / "second.log")
    try:
        said = (tmp_path / "second.log").read_text()
        url = json.loads(info.read_text())["localUrl"]
        assert f"Embedded gateway on {url}" in said, said
        store = LocalStore(app_dir / STORE_FILE)
        kept = Settings.load(store)
        store.close()
        assert (kept.gateway_url, kept.token, kept.device_name) == (url, token, "Browser")
        answer = httpx.get(f"{url}/v1/prompts", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
    finally:
        _stop(second)


def test_a_taken_web_port_gives_the_app_another_and_says_so(tmp_path):
    """#44 (4): with the web port taken by another program the app printed that program's
    address as its own, then a raw `Errno 98`, and exited 3; now it takes a free port, says so,
    and serves there (and `pair` finds it there)."""
    import json
    import re
    import sys

    import httpx

    from tests.support import free_port, wait_until

    gateway_dir = tmp_path / "gateway"
    env = _environment(tmp_path / "app", gateway_dir)
    taken = socket.create_server(("127.0.0.1", 0))
    taken_port = taken.getsockname()[1]
    log = tmp_path / "app.log"
    app = subprocess.Popen(
        [sys.executable, "-m", "app", "--web", "--port", str(taken_port), "--gateway-port",
         str(free_port())],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_until(lambda: "Ask User is at" in log.read_text(), timeout=60)
        said = log.read_text()
        assert f"Port {taken_port} was taken by another program" in said, said
        port = int(re.search(r"Ask User is at http://127\.0\.0\.1:(\d+)", said).group(1))
        assert port != taken_port

        def serving() -> bool:
            assert app.poll() is None, log.read_text()
            try:
                return httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(serving, timeout=60)
        web_app = json.loads((gateway_dir / "gateway.json").read_text())["webAppUrl"]
        assert web_app == f"http://127.0.0.1:{port}"
    finally:
        _stop(app)
        taken.close()


def test_the_web_transport_no_longer_renders_every_update_for_a_log_that_is_off(monkeypatch):
    """#43: Flet 1.0.5 formats each outgoing message into a debug line whether or not the
    line is written; after `quiet_transport_log` a message says only its action."""
    import flet as ft
    from flet.messaging.protocol import Message, MessageAction

    from app.launch import quiet_transport_log

    monkeypatch.setattr(Message, "__repr__", Message.__repr__)  # Flet's own, back afterwards
    update = Message(MessageAction.PATCH_CONTROL, [ft.Column([ft.Text(str(n)) for n in range(50)])])
    assert len(repr(update)) > 5_000  # Flet's own: every control of the update
    quiet_transport_log()
    assert f"{update}" == f"Message({MessageAction.PATCH_CONTROL!r})"


def test_every_gateway_setting_reaches_the_gateway_the_cli_and_the_app_both_start(tmp_path):
    """#55: one mapping from the gateway's settings to its configuration, for `python -m app
    gateway` and the app's embedded gateway alike. Each setting that configures the gateway,
    set away from its default, changes what both start (before, the app kept four of them)."""
    from app.gateway.config import config_from, load_tokens
    from app.gateway.settings import GatewaySettings

    tokens = load_tokens(tmp_path)
    changed = {
        "host": "0.0.0.0",
        "port": 9911,
        "public_url": "https://ask.example.test",
        "database_url": "postgresql://ask@db.example.test/ask",
        "database_pool_size": 3,
        "database_connection_wait_ms": 1234,
        "database_lock_timeout_ms": 2345,
        "database_statement_timeout_ms": 3456,
        "engaged_grace": 0,
        "prompt_retention_days": 2.5,
        "event_retention_hours": 7.5,
        "notify": "json://127.0.0.1:9/hook",
    }
    # Read by the process, not the gateway's configuration: where its files are, its tokens,
    # its log.
    elsewhere = {"data_dir", "agent_tokens", "device_tokens", "admin_tokens", "log_level"}
    assert set(changed) | elsewhere == set(GatewaySettings.model_fields)
    default = config_from(GatewaySettings(), tmp_path, tokens)
    for field, value in changed.items():
        configured = config_from(GatewaySettings(**{field: value}), tmp_path, tokens)
        assert configured != default, f"{field} does not reach the gateway"


def test_the_apps_embedded_gateway_honours_the_gateways_own_settings(tmp_path):
    """ASK_USER_ENGAGED_GRACE=0 (docs/app.md: turns the extension off) and ASK_USER_PUBLIC_URL
    did nothing in the app's embedded gateway (#55); now each does what it does in `python -m
    app gateway`."""
    import json
    import sys

    import httpx

    from tests.support import free_port, wait_until

    gateway_dir = tmp_path / "gateway"
    env = _environment(tmp_path / "app", gateway_dir)
    env.update(ASK_USER_ENGAGED_GRACE="0", ASK_USER_PUBLIC_URL="https://ask.example.test")
    app = subprocess.Popen(
        [sys.executable, "-m", "app", "--web", "--port", str(free_port()),
         "--gateway-port", str(free_port())],
        env=env, stdout=(tmp_path / "app.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        info = gateway_dir / "gateway.json"
        wait_until(lambda: info.exists() and "webAppUrl" in info.read_text(), timeout=60)
        url = json.loads(info.read_text())["localUrl"]
        tokens = json.loads((gateway_dir / "tokens.json").read_text())
        agent, device, admin = (
            {"Authorization": f"Bearer {tokens[role][0]}"} for role in ("agent", "device", "admin")
        )
        question = {"id": "go", "header": "Go", "question": "Ship it?",
                    "options": [{"label": "Yes"}, {"label": "No"}]}  # fmt: skip
        created = httpx.post(
            f"{url}/v1/prompts",
            json={"sessionKey": "main", "questions": [question], "timeoutSeconds": 30},
            headers=agent,
        ).json()
        engaged = httpx.post(f"{url}/v1/prompts/{created['id']}/engaged", json={}, headers=device)
        assert engaged.status_code == 200, engaged.text
        assert engaged.json()["expiresAt"] == created["expiresAt"]  # grace 0: nothing moves
        pairing = httpx.post(f"{url}/v1/pairings", json={}, headers=admin).json()
        assert "ask.example.test" in pairing["link"]
    finally:
        _stop(app)

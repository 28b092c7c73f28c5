"""`python -m app pair` and `python -m app devices` against `python -m app gateway`, as run."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys

import httpx

from app.protocol import PairLink, parse_link
from tests.support import ADMIN_TOKEN, GatewayProcess, prompt_body


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=60,
    )


def _link(output: str) -> PairLink:
    found = re.search(r"^Link:\s+(\S+)$", output, re.M)
    assert found, output
    link = parse_link(found.group(1))
    assert isinstance(link, PairLink)
    code = re.search(r"^Code:\s+(\S+)$", output, re.M).group(1)
    assert link.code == code
    assert "█" in output and "Valid once, for 10 minutes" in output
    browser = re.search(r"^Browser:\s+(\S+)", output, re.M)
    assert browser, output  # the same pairing for the web app: its /pair page route
    assert "/pair?" in browser.group(1) and parse_link(browser.group(1)) == link
    return link


def test_pair_from_elsewhere_then_list_and_revoke(tmp_path):
    gateway = GatewayProcess(tmp_path / "data").start()
    admin = {"ASK_USER_ADMIN_TOKEN": ADMIN_TOKEN}
    try:
        done = _run("pair", "--gateway-url", gateway.url, "--name", "Pixel 8", env=admin)
        assert done.returncode == 0, done.stderr
        link = _link(done.stdout)
        assert link.gateway_url == gateway.url
        paired = httpx.post(f"{link.gateway_url}/v1/devices", json={"code": link.code})
        assert paired.status_code == 201, paired.text
        device = paired.json()
        assert device["name"] == "Pixel 8"  # the name given to `pair`
        phone = {"Authorization": f"Bearer {device['token']}"}
        assert httpx.get(f"{gateway.url}/v1/prompts", headers=phone).status_code == 200

        listed = _run("devices", "--gateway-url", gateway.url, env=admin)
        assert listed.returncode == 0, listed.stderr
        assert device["deviceId"] in listed.stdout and "Pixel 8" in listed.stdout

        revoked = _run(
            "devices", "revoke", device["deviceId"], "--gateway-url", gateway.url, env=admin
        )
        assert revoked.returncode == 0, revoked.stderr
        assert httpx.get(f"{gateway.url}/v1/prompts", headers=phone).status_code == 401
        assert (
            "No paired devices" in _run("devices", "--gateway-url", gateway.url, env=admin).stdout
        )

        wrong = _run("pair", "--gateway-url", gateway.url, env={"ASK_USER_ADMIN_TOKEN": "x" * 20})
        assert wrong.returncode == 1 and "unknown token" in wrong.stderr
        assert "Traceback" not in wrong.stderr
    finally:
        gateway.terminate()


def test_pair_on_the_gateways_machine_finds_it_and_its_token(tmp_path):
    data = tmp_path / "data"
    gateway = GatewayProcess(data, env_tokens=False, extra_args=["--host", "0.0.0.0"]).start()
    try:
        log = gateway.log()
        assert "Pair a phone: python -m app pair" in log
        assert "0.0.0.0" not in log.split("Pair a phone")[1].splitlines()[0]
        done = _run("pair", "--data-dir", str(data))
        assert done.returncode == 0, done.stderr
        link = _link(done.stdout)
        assert link.gateway_url.endswith(f":{gateway.port}")
        assert "127.0.0.1" not in link.gateway_url  # a phone cannot reach loopback
        paired = httpx.post(f"{gateway.url}/v1/devices", json={"code": link.code})
        assert paired.status_code == 201
        for name in ("gateway.sqlite3", "tokens.json", "gateway.json"):
            assert stat.S_IMODE(os.stat(data / name).st_mode) == 0o600, name
    finally:
        gateway.terminate()


def test_a_public_url_goes_in_the_link(tmp_path):
    gateway = GatewayProcess(
        tmp_path / "data", extra_args=["--public-url", "https://askuser.example.ts.net/"]
    ).start()
    try:
        done = _run("pair", "--gateway-url", gateway.url, env={"ASK_USER_ADMIN_TOKEN": ADMIN_TOKEN})
        assert _link(done.stdout).gateway_url == "https://askuser.example.ts.net"
    finally:
        gateway.terminate()


def test_pair_says_when_no_gateway_answers(tmp_path):
    done = _run(
        "pair", "--gateway-url", "http://127.0.0.1:9", env={"ASK_USER_ADMIN_TOKEN": ADMIN_TOKEN}
    )
    assert done.returncode == 1
    assert "no gateway answers at http://127.0.0.1:9" in done.stderr


def test_a_team_from_the_command_line_people_tokens_and_phones(tmp_path):
    """On the gateway's machine (its data directory names the gateway and the admin token)."""
    data = tmp_path / "data"
    gateway = GatewayProcess(data, env_tokens=False).start()
    here = ("--data-dir", str(data))
    try:
        added = _run("people", "add", "Ann Lee", *here)
        assert added.returncode == 0, added.stderr
        person_id = re.search(r"\((ps_\S+)\)", added.stdout).group(1)
        assert f"agent-token {person_id}" in added.stdout
        listed = _run("people", *here)
        assert "ps_default" in listed.stdout and "Ann Lee" in listed.stdout

        minted = _run("agent-token", "ann lee", *here)  # by name, as a person would type it
        assert minted.returncode == 0, minted.stderr
        agent = {"Authorization": f"Bearer {minted.stdout.strip()}"}
        assert "ASK_USER_AGENT_TOKEN" in minted.stderr

        paired_link = _link(_run("pair", "--person", person_id, *here).stdout)
        phone_token = httpx.post(
            f"{gateway.url}/v1/devices", json={"code": paired_link.code}
        ).json()["token"]
        phone = {"Authorization": f"Bearer {phone_token}"}
        asked = httpx.post(f"{gateway.url}/v1/prompts", headers=agent, json=prompt_body())
        assert asked.status_code == 201, asked.text
        seen = httpx.get(f"{gateway.url}/v1/prompts", headers=phone).json()["prompts"]
        assert [p["id"] for p in seen] == [asked.json()["id"]]
        devices = _run("devices", *here).stdout
        assert person_id in devices

        unknown = _run("agent-token", "Bob", *here)
        assert unknown.returncode == 1
        assert "no person with the id or name 'Bob'" in unknown.stderr
        assert "Ann Lee" in unknown.stderr and "Traceback" not in unknown.stderr
        taken = _run("people", "add", "ANN LEE", *here)
        assert taken.returncode == 1 and "already exists (name_taken)" in taken.stderr

        removed = _run("people", "remove", "Ann Lee", *here)
        assert removed.returncode == 0, removed.stderr
        assert httpx.get(f"{gateway.url}/v1/prompts", headers=phone).status_code == 401
        after = httpx.get(f"{gateway.url}/v1/prompts/{asked.json()['id']}/result", headers=agent)
        assert after.status_code == 401
        assert "Ann Lee" not in _run("people", *here).stdout
    finally:
        gateway.terminate()

"""The real Flet web app and the system Chromium, for the browser tests (tests/e2e) and the
screen benchmark (tests/bench): `python -m app --web` in its own process, and the screens a
person answers on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx

from app.device import LocalStore
from app.device.environment import STORE_FILE
from app.device.preferences import AUTO, CARDS, Preferences, WebLayout
from tests.support import DEVICE_TOKEN, free_port, wait_until

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise RuntimeError("browser tests need Debian's chromium: apt-get install -y chromium")


class AppProcess:
    """`python -m app --web` on a free port, with its own data directory.

    `layout="cards"` (the default here) sets the browser to stack questions in cards, as the
    phone and desktop apps always do: most browser tests stand in for those apps. `"stepper"`
    sets the docked stepper at any width; `"auto"` leaves a new browser's own default (cards
    in a phone-sized window, the stepper in a wide one)."""

    def __init__(
        self,
        data_dir: Path,
        gateway_url: str | None,
        layout: WebLayout = CARDS,
        tree: Path | None = None,
        token: str = DEVICE_TOKEN,
    ) -> None:
        self.data_dir = data_dir
        self.tree = tree  # another checkout's app (a benchmark's baseline); None: this one
        self.gateway_url = gateway_url  # None: the app starts unconfigured (to be paired)
        self.layout = layout
        self.token = token  # a paired device's own, or the gateway's configured device token
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log = data_dir / f"app-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AppProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
        env.update(ASK_USER_APP_DATA=str(self.data_dir), FLET_LOG_LEVEL="warning")
        if self.gateway_url is not None:
            env.update(ASK_USER_GATEWAY_URL=self.gateway_url, ASK_USER_DEVICE_TOKEN=self.token)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.layout != AUTO:  # as chosen in Settings
            store = LocalStore(self.data_dir / STORE_FILE)
            replace(Preferences.load(store), web_layout=self.layout).save(store)
            store.close()
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app",
                    "--web",
                    "--port",
                    str(self.port),
                    *([] if self.gateway_url else ["--no-gateway"]),
                ],
                env=env,
                cwd=self.tree,  # `-m app` finds the package in the working directory first
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_until(self._up, timeout=60, interval=0.2)
        return self

    def _up(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()
        try:
            return httpx.get(self.url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


ANDROID_UA = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36"
)
IPHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
# The screens a person answers on: the smallest phone, an iPhone SE, a Pixel 7, desktops.
DEVICES = {
    "phone-320": dict(
        viewport={"width": 320, "height": 568},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        user_agent=IPHONE_UA,
    ),
    "iphone-se": dict(
        viewport={"width": 375, "height": 667},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        user_agent=IPHONE_UA,
    ),
    "pixel-7": dict(
        viewport={"width": 412, "height": 915},
        device_scale_factor=2.625,
        is_mobile=True,
        has_touch=True,
        user_agent=ANDROID_UA,
    ),
    "desktop": dict(viewport={"width": 900, "height": 1400}),
    "wide": dict(viewport={"width": 1440, "height": 900}),
}

"""`python -m app` and `python -m app demo`: run the app, with an embedded gateway when no
gateway is configured. The one place that wires the sides together (with __main__)."""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import os
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: `python -m app --help` stays quick
    from app.device import DeviceEnvironment, LocalStore, Settings

EMBEDDED_MARK = "embedded_gateway"  # the device token the app gave itself for it
EMBEDDED_URL = "embedded_gateway_url"  # where it last listened
DEFAULT_WEB_PORT = 8550


def point_an_agent() -> str:
    """What to run next, runnable as printed: agents on this machine find this gateway by its
    data folder, so the one command writes all they need (#40)."""
    from app.agent.setup import CLIENTS, ask_user_command

    command = shlex.join([*ask_user_command(), "setup", CLIENTS[0]])
    return f"Point an agent at it: {command}   (or: {', '.join(CLIENTS[1:])})"


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--web", action="store_true", help="serve the app for a browser instead of opening a window"
    )
    parser.add_argument("--host", default="127.0.0.1", help="web mode: address (%(default)s)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_WEB_PORT, help="web mode: port (%(default)s)"
    )
    parser.add_argument(
        "--gateway-port",
        type=int,
        default=8765,
        help="the embedded gateway's port when one is started (%(default)s)",
    )
    parser.add_argument(
        "--no-gateway",
        action="store_true",
        help="start no embedded gateway: pair with one in Settings (or by a pairing link)",
    )
    return parser


def _has_display(environment: DeviceEnvironment) -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(environment.display or environment.wayland_display)


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on `port` now. Probed as uvicorn binds (SO_REUSEADDR),
    so the previous run's connections in TIME_WAIT do not count as busy."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str) -> int:
    """A port nothing listens on now, chosen by the system."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclasses.dataclass(frozen=True)
class AppGateway:
    """The gateway this app and the agents on this machine use, and what to tell the person."""

    url: str
    token_file: Path | None
    agent_token: str
    headline: str  # the first line printed: whose gateway it is and where
    notice: str | None = None  # shown in the app too: something the person should know
    notice_pid: int | None = None  # the other gateway process the notice names


def uses_embedded_gateway(
    store: LocalStore, saved: Settings, environment: DeviceEnvironment
) -> bool:
    """Whether this device still uses the gateway the app embeds: with the token the app gave
    it, or paired with it by a code (a browser pairing with the app's own gateway, #44), which
    leaves its address. Once paired with another gateway, that one is kept."""
    mark = store.get_meta(EMBEDDED_MARK)
    if mark == "1" or (mark and mark == saved.token):  # "1": before device tokens were minted
        return True
    if not saved.gateway_url or mark in (None, "0"):  # never embedded, or named by the env
        return False
    # Before the address was kept, the gateway's own note of it (gateway.json) says the same.
    known = (store.get_meta(EMBEDDED_URL), _local_gateway_url(environment))
    return saved.gateway_url in known


def _local_gateway_url(environment: DeviceEnvironment) -> str | None:
    """Where the gateway of this machine's data folder last said it listens."""
    from app.protocol.local_gateway import gateway_data_dir, read_local_gateway

    return read_local_gateway(gateway_data_dir(environment.gateway_data)).local_url


def start_embedded_gateway(
    store: LocalStore, port: int, web_app_url: str | None = None, keep_paired: bool = False
) -> AppGateway:
    """Start the gateway inside this process and point the device at it; or, when a gateway
    already runs on the same data directory (`python -m app gateway`, another window of this
    app), use that one: two gateways on one SQLite file would not hear each other.
    `web_app_url`: where this app is served in a browser, for `pair` to print a browser's link;
    `keep_paired`: this device paired with that gateway, so it keeps the token it was given."""
    from pydantic import ValidationError

    from app.gateway import EmbeddedGateway, load_tokens
    from app.gateway.config import (
        DB_FILE,
        ConfigError,
        config_from,
        data_dir_of,
        write_local_info,
    )
    from app.gateway.settings import GatewaySettings, describe
    from app.gateway.store.ownership import FileInUse, ensure_free

    # The gateway's own settings, every one as `python -m app gateway` reads them (#55); the
    # app chooses only the port (`--gateway-port`, or any free one when that is taken).
    try:
        settings = GatewaySettings()
    except ValidationError as exc:
        raise ConfigError(describe(exc)) from exc
    data_dir = data_dir_of(settings)
    tokens = load_tokens(data_dir, settings.named_tokens())
    try:
        if not settings.database_url:  # PostgreSQL is shared by design: no file to own
            ensure_free(data_dir / DB_FILE)
    except FileInUse as exc:
        running = _running_gateway(data_dir, tokens.device[0])
        if running is None:
            raise ConfigError(str(exc)) from exc
        _point_device_at(store, running, tokens.device[0], keep_paired)
        return AppGateway(
            running,
            tokens.file,
            tokens.agent[0],
            f"Gateway on {running}",
            f"A gateway already runs for {data_dir} (process {exc.pid or '?'}): this app uses "
            f"it, at {running}, rather than start a second one on the same data.",
            exc.pid,
        )
    notice = None
    wanted = port
    if not port_free(settings.host, port):
        port = 0
    gateway = EmbeddedGateway(config_from(settings, data_dir, tokens, port)).start()
    # Agents, `ask-user mcp` and `pair` find it here, where it really listens.
    write_local_info(data_dir, gateway.url, web_app_url)
    _point_device_at(store, gateway.url, tokens.device[0], keep_paired)
    if port == 0:
        notice = (
            f"Port {wanted} was taken by another program, so this gateway is on "
            f"{gateway.url}: agents and other devices must use this address."
        )
    return AppGateway(
        gateway.url, tokens.file, tokens.agent[0], f"Embedded gateway on {gateway.url}", notice
    )


def _point_device_at(store: LocalStore, url: str, token: str, keep_paired: bool = False) -> None:
    """This device uses the gateway at `url`, and comes back to it while it still does. A
    device paired with it keeps the token its pairing gave it (the same data, whatever the
    port); otherwise it uses the gateway's own device token."""
    from app.device import Settings

    saved = Settings.load(store)
    if keep_paired and saved.token not in ("", token) and _accepted(url, saved.token):
        token = saved.token
    name = saved.device_name or socket.gethostname()
    Settings(gateway_url=url, token=token, device_name=name).save(store)
    store.set_meta(EMBEDDED_MARK, token)
    store.set_meta(EMBEDDED_URL, url)


def _accepted(url: str, device_token: str) -> bool:
    """Whether the gateway at `url` takes this device token (not revoked meanwhile)."""
    import httpx

    try:
        answer = httpx.get(
            f"{url}/v1/prompts",
            params={"limit": 1},
            headers={"Authorization": f"Bearer {device_token}"},
            timeout=5,
        )
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


def _running_gateway(data_dir: Path, device_token: str) -> str | None:
    """The address of the gateway serving `data_dir`, when it answers this device's token."""
    from app.protocol.local_gateway import read_local_gateway

    url = read_local_gateway(data_dir).local_url
    return url if url is not None and _accepted(url, device_token) else None


def run_demo(args: argparse.Namespace) -> int:
    """`python -m app demo`: the app, with a demo agent asking."""
    return run(args, demo=True)


def run(args: argparse.Namespace, demo: bool = False) -> int:
    import flet as ft

    from app.device import DeviceEnvironment, LocalStore, Settings
    from app.device.environment import STORE_FILE
    from app.ui.run import ASSETS_DIR, main, set_launch_options
    from app.ui.state import AppOptions

    environment = DeviceEnvironment.read()  # the one read of this process's environment
    web = bool(args.web) or not _has_display(environment)  # no display: served to a browser
    web_port_taken = web and not port_free(args.host, args.port)
    if web_port_taken:  # as the embedded gateway does: another port, and say so (#44)
        wanted, args.port = args.port, free_port(args.host)
    store = LocalStore(environment.data_dir() / STORE_FILE)
    agent_url, agent_token = environment.gateway_url, environment.agent_token
    named = Settings.from_environment(Settings.load(store), environment)
    if named is not None:  # a gateway named by the environment wins
        named = dataclasses.replace(named, device_name=named.device_name or socket.gethostname())
        named.save(store)
        store.set_meta(EMBEDDED_MARK, "0")
    saved = Settings.load(store)
    embedded = uses_embedded_gateway(store, saved, environment)
    options = AppOptions()
    if not args.no_gateway and (not saved.gateway_url or embedded):
        from app.gateway.config import ConfigError

        try:
            web_app_url = _web_app_url(args) if web else None
            local = start_embedded_gateway(store, args.gateway_port, web_app_url, embedded)
        except ConfigError as exc:
            store.close()
            print(f"error: the embedded gateway cannot start: {exc}", file=sys.stderr)
            return 2
        agent_url, agent_token = local.url, local.agent_token
        options = AppOptions(
            agent_url=agent_url,
            agent_token_file=str(local.token_file) if local.token_file else None,
            notice=local.notice,
            notice_pid=local.notice_pid,
        )
        print(local.headline, flush=True)
        if local.notice:
            print(local.notice, flush=True)
        print(point_an_agent(), flush=True)
    store.close()
    set_launch_options(options)
    if demo:
        if not (agent_url and agent_token):
            print(
                "demo: set ASK_USER_GATEWAY_URL and ASK_USER_AGENT_TOKEN for your gateway",
                file=sys.stderr,
            )
            return 1
        stop_demo = start_demo_agent(agent_url, agent_token)
        atexit.register(stop_demo)

        def stopped(signum: int, _frame: object) -> None:
            """SIGTERM and SIGHUP stop the demo's run, which cancels its prompts; then exit
            at once (Flet's server may not pass a SystemExit on)."""
            stop_demo()
            sys.stdout.flush()
            os._exit(128 + signum)

        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), stopped)
    if web:
        if web_port_taken:
            print(f"Port {wanted} was taken by another program, so the app is on another port.")
        print(f"Ask User is at http://{args.host}:{args.port}", flush=True)
        serve_web(main, args.host, args.port, str(ASSETS_DIR))
    else:
        ft.run(main, assets_dir=str(ASSETS_DIR))
    return 0


def serve_web(main: Callable[..., Any], host: str, port: int, assets_dir: str) -> None:
    """The app for browsers: Flet's own FastAPI app (its documented way to host), served by
    uvicorn, so the page's title, description and install manifest say Ask User, not Flet
    (`ft.run` passes no app name). Nothing is loaded from a CDN, and its Content-Security-Policy
    says so (app/page_policy.py).

    The renderer is Flutter's own choice (AUTO): skwasm (the client compiled to WebAssembly,
    drawing on a worker: Flet serves the page cross-origin isolated) in Chromium-based
    browsers, CanvasKit in Safari and Firefox. On a new question skwasm's frame took 31-67 ms
    where CanvasKit's took 71-123 on the benchmark's host (#43)."""
    import flet as ft
    import flet_web.fastapi as flet_fastapi  # type: ignore[import-untyped]  # flet-web ships no py.typed
    import uvicorn

    from app.protocol.strings import Strings

    strings = Strings()
    quiet_transport_log()
    web = flet_fastapi.app(
        main,
        assets_dir=assets_dir,
        app_name=strings("app_title"),
        app_short_name=strings("app_title"),
        app_description=strings("app_description"),
        web_renderer=ft.WebRenderer.AUTO,
        no_cdn=True,
    )
    # The fallback fonts the client asks for by Google Fonts' names (emoji, Arabic script),
    # from the app's own files (assets/webfonts/README.md): before Flet's catch-all route.
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    fonts = Path(assets_dir) / "webfonts"
    for family in ("notocoloremoji", "notosansarabic"):
        if (fonts / family).is_dir():
            served = StaticFiles(directory=fonts / family)
            web.router.routes.insert(0, Mount(f"/assets/fonts/{family}", app=served))
    from app.page_policy import PagePolicy

    # A stop (Ctrl-C, SIGTERM) closes the app's sockets after at most this long.
    policed = PagePolicy(web)  # what the page may load: only from here
    uvicorn.run(policed, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)


def quiet_transport_log() -> None:
    """Flet 1.0.5's web transport writes `transport_log.debug(f"send_message: {message}")` for
    every update it sends: the f-string renders each control of the update whether or not
    debug logging is on, 2.2 ms of the 8 a new card's update took on the benchmark's host
    (#43). A message now shows its action only, as nothing but that log line shows it."""
    from flet.messaging.protocol import Message

    Message.__repr__ = _message_repr  # type: ignore[method-assign]  # the one reason above


def _message_repr(message: object) -> str:
    return f"Message({getattr(message, 'action', '?')!r})"


def _web_app_url(args: argparse.Namespace) -> str:
    """Where a browser opens this app: the LAN address when it listens on every interface."""
    from app.gateway.addresses import reachable_url, url_for

    return reachable_url(args.host, args.port) or url_for(args.host, args.port)


DEMO_STOP_SECONDS = 20  # how long a stopped demo waits for its runs to cancel their prompts
DEMO_ORDER_WAIT_SECONDS = 20  # the most a demo prompt waits for the one before it to be asked


def start_demo_agent(gateway_url: str, token: str) -> Callable[[], None]:
    """A demo agent asking a few realistic prompts at once, each in its own session. Returns
    how to stop it: a stopped run cancels its prompts (so the next demo starts clean)."""
    from app.agent import AskUserError, ask_user
    from app.demo import DEMO_PROMPTS

    stop = threading.Event()
    # Asked one after another, in the order of DEMO_PROMPTS: the oldest (the stepper's) and
    # the newest (the top card) are English, whichever layout the person sees first.
    asked = [threading.Event() for _ in DEMO_PROMPTS]

    def ask(n: int, session: str, prompt: dict[str, Any]) -> None:
        if n:
            asked[n - 1].wait(DEMO_ORDER_WAIT_SECONDS)
        try:
            result = ask_user(
                prompt["questions"],
                session_key=session,
                gateway_url=gateway_url,
                token=token,
                timeout_seconds=prompt.get("timeoutSeconds"),
                abort=stop,
                on_asked=lambda _: asked[n].set(),
            )
        except AskUserError as exc:
            print(f"demo agent [{session}]: {exc}", flush=True)
            return
        finally:
            asked[n].set()  # the next asks, whatever became of this one
        print(f"demo agent [{session}] got: {result}", flush=True)

    threads = [
        threading.Thread(target=ask, args=(n, session, prompt), daemon=True, name=f"demo-{session}")
        for n, (session, prompt) in enumerate(DEMO_PROMPTS.items())
    ]
    for thread in threads:
        thread.start()

    def stop_all() -> None:
        stop.set()
        # One deadline for all: each run cancels its prompt at the gateway before it ends, and
        # on a loaded machine five seconds a thread was once not enough for the last of them.
        deadline = time.monotonic() + DEMO_STOP_SECONDS
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    return stop_all

"""`python -m app gateway`: read the settings once (flags over the environment over files),
resolve them into the gateway's configuration, and serve."""

from __future__ import annotations

import argparse
import logging
import sys

from pydantic import ValidationError

from .addresses import url_for
from .config import (
    DB_FILE,
    ConfigError,
    GatewayConfig,
    config_from,
    data_dir_of,
    load_tokens,
    write_local_info,
)
from .settings import GatewaySettings, describe, env_name
from .store.ownership import FileInUse, ensure_free


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Flags for `GatewaySettings`: a flag not given leaves the setting to the environment
    (its variable is named in the help) or the default."""
    parser = parser or argparse.ArgumentParser(
        prog="python -m app gateway", description="Run the Ask User gateway."
    )
    parser.argument_default = argparse.SUPPRESS  # absent: settings.py decides
    for field, meaning in _FLAGS.items():
        default = GatewaySettings.model_fields[field].default
        shown = f"; default {default}" if default not in (None, "") else ""
        parser.add_argument(
            "--" + field.replace("_", "-"),
            metavar=field.split("_")[-1].upper(),
            help=f"{meaning} (${env_name(field)}{shown})".replace("%", "%%"),
        )
    return parser


_FLAGS = {
    "host": "address to listen on",
    "port": "port",
    "data_dir": "where the SQLite store and tokens live (default: the user data directory)",
    "public_url": "the URL phones reach this gateway at, put in pairing links (default: this "
    "machine's LAN address when --host is 0.0.0.0)",
    "database_url": "postgresql://… to keep everything in PostgreSQL, shared by any number of "
    "gateway processes (default: a SQLite file in --data-dir)",
    "database_pool_size": "PostgreSQL connections this process keeps",
    "database_connection_wait_ms": "how long a request waits for a free connection; past it, "
    "that one request answers 503",
    "database_lock_timeout_ms": "how long a statement waits for a lock; past it, 503",
    "database_statement_timeout_ms": "how long a statement may run; past it, 503",
    "engaged_grace": "seconds a prompt may still have when the person starts answering it; "
    "0 moves no deadline",
    "prompt_retention_days": "days a resolved prompt is kept",
    "event_retention_hours": "hours events are kept for devices to catch up",
    "log_level": "debug, info, warning or error",
}


def _log_lightly() -> None:
    """A line per request (request_log.py): leave out what the format never shows — the
    calling frame, thread, process — as Python's logging HOWTO ("Optimization") says to. That
    took a fifth of each line's cost (#27)."""
    logging._srcfile = None  # the HOWTO's documented switch
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def run(args: argparse.Namespace) -> int:
    from .server import bind, serve

    try:
        flags = {k: v for k, v in vars(args).items() if k in GatewaySettings.model_fields}
        settings = GatewaySettings(**flags)
    except ValidationError as exc:
        print(f"error: {describe(exc)}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    _log_lightly()
    data_dir = data_dir_of(settings)
    try:
        if not settings.database_url:  # before the address it would tell `pair` is replaced
            ensure_free(data_dir / DB_FILE)
        tokens = load_tokens(data_dir, settings.named_tokens())
    except (ConfigError, FileInUse) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = config_from(settings, data_dir, tokens)
    host, port = config.host, config.port
    try:  # bound first: a port in use is said before any line that says it serves
        sock = bind(host, port)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
        return 1
    where = "PostgreSQL" if settings.database_url else data_dir
    print(f"Ask User gateway on {url_for(host, port)}  (data: {where})", flush=True)
    if tokens.file is not None:
        print(f"Tokens (agent, device, admin) are in {tokens.file}", flush=True)
    write_local_info(data_dir, url_for(_local_host(host), port))
    print(_pairing_hint(config), flush=True)
    if config.notify_urls:
        print(f"New prompts are announced to {len(config.notify_urls)} notifier(s)", flush=True)
    serve(config, log_level=settings.log_level, sock=sock)
    return 0


def _local_host(host: str) -> str:
    """How a command on this machine reaches the gateway."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def _pairing_hint(config: GatewayConfig) -> str:
    if not config.tokens.admin:
        return (
            "Pairing is off: no admin token (set ASK_USER_ADMIN_TOKENS, or leave the token "
            "variables unset to use tokens.json)."
        )
    if config.public_url is None:
        return (
            "Pair a phone: python -m app pair  (this gateway listens on this machine only; "
            "for phones on your network start it with --host 0.0.0.0)"
        )
    return f"Pair a phone: python -m app pair  (phones reach this gateway at {config.public_url})"


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))

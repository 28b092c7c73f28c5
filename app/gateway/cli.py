"""`python -m app gateway`: serve the gateway with flags, tokens from env or a 0600 file."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from app.protocol import limits

from .addresses import reachable_url, url_for
from .config import (
    DATABASE_URL_ENV,
    DB_FILE,
    DEFAULT_HOST,
    DEFAULT_PORT,
    NOTIFY_ENV,
    PUBLIC_URL_ENV,
    ConfigError,
    GatewayConfig,
    default_data_dir,
    load_tokens,
    write_local_info,
)
from .store.ownership import FileInUse, ensure_free
from .store.postgres_settings import PostgresSettings


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(
        prog="python -m app gateway", description="Run the Ask User gateway."
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (%(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (%(default)s)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the SQLite store and tokens live (default: the user data directory)",
    )
    parser.add_argument(
        "--public-url",
        default=os.environ.get(PUBLIC_URL_ENV),
        help="the URL phones reach this gateway at, put in pairing links (default: this "
        "machine's LAN address when --host is 0.0.0.0; $ASK_USER_PUBLIC_URL)",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(DATABASE_URL_ENV) or None,
        help="postgresql://… to keep everything in PostgreSQL, shared by any number of gateway "
        "processes ($ASK_USER_DATABASE_URL; default: a SQLite file in --data-dir)",
    )
    defaults = PostgresSettings()
    for flag, env, default, meaning in (
        ("--database-pool-size", "ASK_USER_DATABASE_POOL_SIZE", defaults.pool_size,
         "PostgreSQL connections this process keeps"),
        ("--database-connection-wait-ms", "ASK_USER_DATABASE_CONNECTION_WAIT_MS",
         defaults.connection_wait_ms, "how long a request waits for a free connection"),
        ("--database-lock-timeout-ms", "ASK_USER_DATABASE_LOCK_TIMEOUT_MS",
         defaults.lock_timeout_ms, "how long a statement waits for a lock"),
        ("--database-statement-timeout-ms", "ASK_USER_DATABASE_STATEMENT_TIMEOUT_MS",
         defaults.statement_timeout_ms, "how long a statement may run"),
    ):  # fmt: skip
        parser.add_argument(
            flag,
            type=_positive_int,
            default=os.environ.get(env) or default,
            help=f"{meaning}; past it, that one request answers 503 (${env}; %(default)s)",
        )
    parser.add_argument(
        "--engaged-grace",
        type=int,
        default=os.environ.get("ASK_USER_ENGAGED_GRACE") or limits.ENGAGED_GRACE_SECONDS,
        help="seconds a prompt may still have when the person starts answering it; 0 moves "
        "no deadline ($ASK_USER_ENGAGED_GRACE; %(default)s)",
    )
    parser.add_argument("--prompt-retention-days", type=float, default=30.0)
    parser.add_argument("--event-retention-hours", type=float, default=24.0)
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _log_lightly() -> None:
    """A line per request (request_log.py): leave out what the format never shows — the
    calling frame, thread, process — as Python's logging HOWTO ("Optimization") says to. That
    took a fifth of each line's cost (#27)."""
    logging._srcfile = None  # the HOWTO's documented switch
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def run(args: argparse.Namespace) -> int:
    from .server import serve

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    _log_lightly()
    data_dir = (args.data_dir or default_data_dir()).expanduser()
    try:
        if not args.database_url:  # before the address it would tell `pair` is replaced
            ensure_free(data_dir / DB_FILE)
        tokens = load_tokens(data_dir)
    except (ConfigError, FileInUse) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    public_url = (args.public_url or "").rstrip("/") or reachable_url(args.host, args.port)
    config = GatewayConfig(
        data_dir=data_dir,
        tokens=tokens,
        host=args.host,
        port=args.port,
        prompt_retention_days=args.prompt_retention_days,
        event_retention_hours=args.event_retention_hours,
        public_url=public_url,
        notify_urls=tuple(os.environ.get(NOTIFY_ENV, "").split()),
        database_url=args.database_url,
        engaged_grace_seconds=max(0, args.engaged_grace),
        postgres=PostgresSettings(
            pool_size=args.database_pool_size,
            connection_wait_ms=args.database_connection_wait_ms,
            lock_timeout_ms=args.database_lock_timeout_ms,
            statement_timeout_ms=args.database_statement_timeout_ms,
        ),
    )
    where = "PostgreSQL" if args.database_url else data_dir
    print(f"Ask User gateway on {url_for(args.host, args.port)}  (data: {where})", flush=True)
    if tokens.file is not None:
        print(f"Tokens (agent, device, admin) are in {tokens.file}", flush=True)
    write_local_info(data_dir, url_for(_local_host(args.host), args.port))
    print(_pairing_hint(config), flush=True)
    if config.notify_urls:
        print(f"New prompts are announced to {len(config.notify_urls)} notifier(s)", flush=True)
    try:
        serve(config, log_level=args.log_level)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
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

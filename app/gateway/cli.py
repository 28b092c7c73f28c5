"""`python -m app gateway`: serve the gateway with flags, tokens from env or a 0600 file."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .config import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ConfigError,
    GatewayConfig,
    default_data_dir,
    load_tokens,
)


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
    parser.add_argument("--prompt-retention-days", type=float, default=30.0)
    parser.add_argument("--event-retention-hours", type=float, default=24.0)
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from .server import serve

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    data_dir = (args.data_dir or default_data_dir()).expanduser()
    try:
        tokens = load_tokens(data_dir)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = GatewayConfig(
        data_dir=data_dir,
        tokens=tokens,
        host=args.host,
        port=args.port,
        prompt_retention_days=args.prompt_retention_days,
        event_retention_hours=args.event_retention_hours,
    )
    print(f"Ask User gateway on http://{args.host}:{args.port}  (data: {data_dir})", flush=True)
    if tokens.file is not None:
        print(f"Tokens (agent and device) are in {tokens.file}", flush=True)
    try:
        serve(config, log_level=args.log_level)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))

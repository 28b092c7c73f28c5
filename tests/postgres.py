"""A throwaway PostgreSQL for the tests: Debian's server binaries (.ci/run installs them), a
cluster in a temporary folder on a free local port, gone when the tests end. No Docker.

`ASK_USER_TEST_DATABASE_URL` points the tests at a server of your own instead (each test
makes its own database there). With neither, the PostgreSQL tests skip, saying why, except
where `ASK_USER_REQUIRE_POSTGRES` is set (CI), where they fail.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support import free_port

URL_ENV = "ASK_USER_TEST_DATABASE_URL"
REQUIRE_ENV = "ASK_USER_REQUIRE_POSTGRES"
SUPERUSER = "askuser"


def server_binaries() -> Path | None:
    """The newest installed server's bin folder (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class Cluster:
    """initdb + pg_ctl start in a temporary folder; as root, run as the `postgres` user (the
    server refuses to run as root)."""

    def __init__(self, binaries: Path) -> None:
        self.binaries = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="ask-user-pg-"))
        self.port = free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]
            self.folder.chmod(0o755)
            shutil.chown(self.folder, "postgres", "postgres")
        self.data = self.folder / "data"
        self._numbers = itertools.count(1)

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> Cluster:
        self._run(
            str(self.binaries / "initdb"),
            "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
            "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
            "-c max_connections=300 -c shared_buffers=64MB"
        )
        self._run(
            str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l",
            str(self.folder / "server.log"), "-o", options, "-w", "start",
        )  # fmt: skip
        return self

    @property
    def admin_url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                      "stop")  # fmt: skip
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def new_database(admin_url: str, name: str) -> str:
    """A fresh, empty database on the server; its URL."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin_url.rpartition("/")
    return f"{base}/{name}"

"""Shared fixtures: a real gateway on 127.0.0.1 with tokens and a clock the test controls, on
either store: a module marked `both_stores` runs each of its gateway tests on SQLite and on
PostgreSQL (a throwaway cluster, tests/postgres.py)."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import settings

from tests import postgres
from tests.support import AGENT_TOKEN, DEVICE_TOKEN, RunningGateway, start_gateway

_databases = itertools.count(1)

# No wall-clock deadline on a generated case: these machines are shared and loaded, and one
# slow first call (an import, a busy core) failed a parser's property test in a full run.
settings.register_profile("shared_machine", deadline=None)
settings.load_profile("shared_machine")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "both_stores: run each gateway test on SQLite and on PostgreSQL"
    )


def pytest_generate_tests(metafunc) -> None:
    if "gateway" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_stores"):
        metafunc.parametrize("store_kind", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def store_kind(request) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres_server():
    """The admin URL of a PostgreSQL server for this test session."""
    if url := os.environ.get(postgres.URL_ENV):
        yield url
        return
    binaries = postgres.server_binaries()
    if binaries is None:
        reason = "PostgreSQL's server is not installed (apt-get install -y postgresql)"
        if os.environ.get(postgres.REQUIRE_ENV):
            pytest.fail(reason)
        pytest.skip(reason)
    cluster = postgres.Cluster(binaries).start()
    yield cluster.admin_url
    cluster.stop()


@pytest.fixture
def database_url(postgres_server) -> str:
    """A fresh, empty database of its own for one test."""
    return postgres.new_database(postgres_server, f"t{os.getpid()}_{next(_databases)}")


@pytest.fixture
def gateway(tmp_path, store_kind, request) -> RunningGateway:
    config = {}
    if store_kind == "postgres":
        config["database_url"] = request.getfixturevalue("database_url")
    running = start_gateway(tmp_path / "gateway", **config)
    yield running
    running.stop()


__all__ = ["AGENT_TOKEN", "DEVICE_TOKEN"]

"""Shared fixtures: a real gateway on 127.0.0.1 with tokens and a clock the test controls."""

from __future__ import annotations

import pytest

from tests.support import AGENT_TOKEN, DEVICE_TOKEN, RunningGateway, start_gateway


@pytest.fixture
def gateway(tmp_path) -> RunningGateway:
    running = start_gateway(tmp_path / "gateway")
    yield running
    running.stop()


__all__ = ["AGENT_TOKEN", "DEVICE_TOKEN"]

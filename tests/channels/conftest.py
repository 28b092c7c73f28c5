"""Every agent a channel test starts has stopped asking when the test ends."""

from __future__ import annotations

import pytest

from .harness import Agent


@pytest.fixture(autouse=True)
def _stop_agents():
    yield
    while Agent.running:
        Agent.running.pop().stop()

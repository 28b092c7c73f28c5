"""Fixtures the agent programs' tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.terminal import Terminal


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """The terminal UIs a test starts (tests/agent/terminal.py), closed after it."""
    started: list[Terminal] = []
    yield started
    for terminal in started:
        terminal.close()

"""The one back-off rule the agent's calls and the device's sync loop share (#41)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.protocol.backoff import Backoff, backoff_delay


@given(st.integers(0, 60), st.floats(0.01, 5), st.floats(5, 60))
def test_each_wait_is_between_half_and_all_of_a_doubling_capped_step(attempt, start, cap):
    step = min(cap, start * 2**attempt)
    assert step / 2 <= backoff_delay(attempt, start, cap) <= step


def test_the_counter_doubles_then_resets():
    backoff = Backoff(1.0, 8.0)
    delays = [backoff.next_delay() for _ in range(6)]
    steps = [1, 2, 4, 8, 8, 8]
    assert all(s / 2 <= d <= s for d, s in zip(delays, steps, strict=True))
    backoff.reset()
    assert 0.5 <= backoff.next_delay() <= 1.0

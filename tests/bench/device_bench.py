"""The device side: open a local store of 10,000 summaries and build the first timeline page."""

from __future__ import annotations

import sqlite3
import tempfile
import time
import tracemalloc
from pathlib import Path

from app.protocol import PromptRecord

from .harness import emit


def _records(count: int) -> list[PromptRecord]:
    records = []
    for i in range(count):
        records.append(
            PromptRecord.model_validate(
                {
                    "id": f"pr_{i:08d}",
                    "sessionKey": f"session-{i % 7}",
                    "version": 2,
                    "status": "answered" if i % 3 else "dismissed",
                    "answers": {"q": ["A"]} if i % 3 else None,
                    "resolvedBy": {"kind": "device", "deviceId": "other"},
                    "questions": [
                        {
                            "id": "q",
                            "header": "Bench",
                            "question": "Which one?",
                            "options": [{"label": "A"}, {"label": "B"}],
                        }
                    ],
                    "createdAt": f"2026-{1 + i // 100_000:02d}-01T00:{(i // 60) % 60:02d}:"
                    f"{i % 60:02d}.{i % 1000:03d}Z",
                    "expiresAt": "2026-12-31T00:00:00.000Z",
                }
            )
        )
    return records


def timeline(count: int = 10_000, runs: int = 5) -> None:
    """What the app does before it draws: open the store and read the timeline the screen shows
    (every waiting card and the first page of history, with each item's status and its summary
    lines). Widgets are built by Flet's client from these, so they are not in the figure."""
    from app.device import DeviceCore, LocalStore
    from app.protocol.strings import Strings
    from app.ui.screen import HISTORY_PAGE, Screen
    from app.ui.summary import summary_lines

    page = HISTORY_PAGE
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "device.sqlite3"
        store = LocalStore(path)
        store.apply_many(_records(count))
        store.close()

        def measure(fn) -> tuple[float, float]:
            best, peak = float("inf"), 0.0
            for _ in range(runs):
                tracemalloc.start()
                started = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - started
                peak = max(peak, tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
                best = min(best, elapsed)
            return best, peak

        def ours() -> None:
            core = DeviceCore(LocalStore(path))
            screen = Screen(core)
            screen.reload()
            lines = [summary_lines(item, Strings()) for item in screen.state.history]
            assert len(lines) == min(page, count)
            screen.close()
            core.store.close()

        def baseline() -> None:
            db = sqlite3.connect(path)
            rows = db.execute(
                "SELECT record FROM prompts ORDER BY created_at DESC, id DESC LIMIT ?", (page,)
            ).fetchall()
            assert len(rows) == page
            db.close()

        ours_s, ours_peak = measure(ours)
        base_s, base_peak = measure(baseline)
        emit(
            "device_timeline",
            summaries=count,
            page=page,
            open_and_first_page_ms=round(ours_s * 1000, 2),
            peak_memory_kb=round(ours_peak / 1024, 1),
            baseline_raw_select_ms=round(base_s * 1000, 3),
            baseline_peak_memory_kb=round(base_peak / 1024, 1),
            ratio=round(ours_s / base_s, 1),
            target="store open + first page under 200 ms at 10,000 summaries",
        )

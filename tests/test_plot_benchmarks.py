"""tools/plot_benchmarks.py draws the benchmarks' JSON rows for docs/benchmarks.md (#45)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from PIL import Image

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "plot_benchmarks.py"


def _stats(p50: float) -> dict:
    return {"n": 20, "p50_ms": p50, "p95_ms": p50 * 1.3, "p99_ms": p50 * 1.5, "mean_ms": p50}


def test_each_known_row_becomes_a_picture_and_nothing_known_is_said(tmp_path):
    starts = {"python": 30, "ask-user mcp": 250, "import mcp": 760}
    rows = [
        {"benchmark": "mcp_start", "stats": {n: _stats(v) for n, v in starts.items()}},
        *({"benchmark": "delivery_latency", "idle_polls": idle,
           "baseline_health": _stats(0.3), "prompt_to_device": _stats(0.4 + idle / 1e4),
           "answer_to_agent": _stats(0.35)} for idle in (1, 100, 1000)),
    ]  # fmt: skip
    run = tmp_path / "run.jsonl"
    run.write_text("not json: a line the benchmark printed\n" + "\n".join(map(json.dumps, rows)))
    out = tmp_path / "images"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(run), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("mcp-start.png", "delivery-latency.png"):
        with Image.open(out / name) as image:
            assert image.width > 400 and image.height > 200
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"benchmark": "unknown"}\n')
    nothing = subprocess.run(
        [sys.executable, str(SCRIPT), str(empty), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert nothing.returncode == 1 and "nothing to draw" in nothing.stderr

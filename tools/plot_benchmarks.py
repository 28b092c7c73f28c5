"""Pictures of the benchmarks, for docs/benchmarks.md: `python -m tests.bench … > run.jsonl`,
then `python tools/plot_benchmarks.py run.jsonl` writes one PNG per kind of row it knows into
docs/images/bench/ (matplotlib, from the docs extra). Figures are this run's, ratios against the
baseline measured in the same run, as the benchmarks print them."""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "docs" / "images" / "bench"


def _rows(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in paths:
        for line in path.read_text().splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                rows[row["benchmark"]].append(row)
    return rows


def mcp_start(rows: list[dict[str, Any]], out: Path) -> Path:
    """`ask-user mcp` answering initialize, beside its two baselines (p50 and p95)."""
    import matplotlib.pyplot as plt

    stats = rows[-1]["stats"]
    names = ["python", "ask-user mcp", "import mcp"]
    fig, ax = plt.subplots(figsize=(6, 3))
    p50 = [stats[n]["p50_ms"] for n in names]
    p95 = [stats[n]["p95_ms"] for n in names]
    ax.barh(names, p95, color="#c8c8e8", label="p95")
    ax.barh(names, p50, color="#4a4a9a", label="p50")
    ax.set_xlabel("ms from spawn (lower is better)")
    ax.set_title("ask-user mcp: spawn to the initialize answer")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out / "mcp-start.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def delivery_latency(rows: list[dict[str, Any]], out: Path) -> Path:
    """Prompt → device and answer → agent, p50 and p99, against the health round trip, by the
    number of idle long-polls the gateway holds."""
    import matplotlib.pyplot as plt

    idle = [r["idle_polls"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for ax, q in zip(axes, ("p50_ms", "p99_ms"), strict=True):
        for key, label in (
            ("baseline_health", "health round trip"),
            ("prompt_to_device", "prompt → device"),
            ("answer_to_agent", "answer → agent"),
        ):
            ax.plot(idle, [r[key][q] for r in rows], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("idle long-polls held")
        ax.set_title(q.replace("_ms", ""))
    axes[0].set_ylabel("ms")
    axes[0].legend(fontsize=8)
    fig.suptitle("Delivery latency, one gateway process")
    fig.tight_layout()
    path = out / "delivery-latency.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


PLOTS = {"mcp_start": mcp_start, "delivery_latency": delivery_latency}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="+", type=Path, help="JSON lines from python -m tests.bench")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = _rows(args.runs)
    made = [plot(rows[name], args.out) for name, plot in PLOTS.items() if rows.get(name)]
    for path in made:
        print(path)
    if not made:
        print(f"nothing to draw: no rows of {', '.join(PLOTS)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

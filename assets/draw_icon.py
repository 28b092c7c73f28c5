"""Draw the app icon (1024×1024) and splash image as PNGs, in pure Python, reproducibly.

A speech bubble holding three answer rows, the first one chosen: a question waiting for you.
Run `python assets/draw_icon.py`; the outputs are committed beside this script.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
INDIGO = (63, 81, 181)
WHITE = (255, 255, 255)
SOFT = (197, 202, 233)

Shape = Callable[[float, float], float]  # signed distance: < 0 inside


def rounded_rect(x0: float, y0: float, x1: float, y1: float, r: float) -> Shape:
    cx, cy, hx, hy = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2 - r, (y1 - y0) / 2 - r

    def sdf(x: float, y: float) -> float:
        dx, dy = abs(x - cx) - hx, abs(y - cy) - hy
        return math.hypot(max(dx, 0), max(dy, 0)) + min(max(dx, dy), 0) - r

    return sdf


def circle(cx: float, cy: float, r: float) -> Shape:
    return lambda x, y: math.hypot(x - cx, y - cy) - r


def ring(cx: float, cy: float, r: float, width: float) -> Shape:
    return lambda x, y: abs(math.hypot(x - cx, y - cy) - r) - width / 2


def triangle(a: tuple, b: tuple, c: tuple) -> Shape:
    def edge(p, q, x, y):
        return (q[0] - p[0]) * (y - p[1]) - (q[1] - p[1]) * (x - p[0])

    def sdf(x: float, y: float) -> float:
        signs = (edge(a, b, x, y), edge(b, c, x, y), edge(c, a, x, y))
        inside = all(s <= 0 for s in signs) or all(s >= 0 for s in signs)
        return -1.0 if inside else 1.0

    return sdf


def render(size: int, layers: list[tuple[Shape, tuple]], background: tuple | None) -> bytes:
    scale = size / 1024
    rows = []
    for py in range(size):
        row = bytearray([0])  # filter: none
        y = (py + 0.5) / scale
        for px in range(size):
            x = (px + 0.5) / scale
            r, g, b, a = (*background, 255) if background else (0, 0, 0, 0)
            for shape, color in layers:
                cover = min(1.0, max(0.0, 0.5 - shape(x, y) * scale))
                if cover:
                    r = round(r + (color[0] - r) * cover)
                    g = round(g + (color[1] - g) * cover)
                    b = round(b + (color[2] - b) * cover)
                    a = max(a, round(255 * cover))
            row += bytes((r, g, b, a))
        rows.append(bytes(row))
    return _png(size, size, b"".join(rows))


def _png(width: int, height: int, raw: bytes) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def bubble_layers() -> list[tuple[Shape, tuple]]:
    layers: list[tuple[Shape, tuple]] = [
        (rounded_rect(192, 212, 832, 732, 110), WHITE),
        (triangle((300, 700), (430, 700), (270, 840)), WHITE),
    ]
    for row, y in enumerate((342, 472, 602)):
        if row == 0:
            layers += [(ring(318, y, 40, 18), INDIGO), (circle(318, y, 20), INDIGO)]
        else:
            layers.append((ring(318, y, 40, 18), SOFT))
        layers.append(
            (rounded_rect(398, y - 22, 712 - row * 70, y + 22, 22), INDIGO if row == 0 else SOFT)
        )
    return layers


def main() -> None:
    icon = [(rounded_rect(0, 0, 1024, 1024, 0), INDIGO), *bubble_layers()]
    (HERE / "icon.png").write_bytes(render(1024, icon, None))
    (HERE / "splash.png").write_bytes(render(512, bubble_layers(), None))


if __name__ == "__main__":
    main()

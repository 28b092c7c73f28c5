"""Make assets/webfonts/notocoloremoji: Noto Color Emoji in the numbered subsets Flutter's web
engine asks for, in a format its CanvasKit draws.

Google Fonts' split (the file numbers and their unicode ranges) comes from the npm package
`@fontsource/noto-color-emoji` (its index.css), but its files carry SVG glyphs, which
CanvasKit does not draw (emoji came out blank). The glyphs come from Debian's
`fonts-noto-color-emoji` (NotoColorEmoji.ttf, colour bitmaps: CBDT), cut to each range.

    python3 -m venv /tmp/fonts && /tmp/fonts/bin/pip install fonttools brotli
    sudo apt-get install fonts-noto-color-emoji
    npm pack @fontsource/noto-color-emoji@5.3.2 && tar xzf fontsource-noto-color-emoji-5.3.2.tgz
    /tmp/fonts/bin/python tools/make_webfonts.py package/index.css
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

SOURCE = Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")
OUT = Path(__file__).resolve().parents[1] / "assets/webfonts/notocoloremoji/v32"
NAME = "Yq6P-KqIXTD0t4D9z1ESnKM3-HpFabsE4tq3luCC7p-aXxcn.{n}.woff2"  # Google's file names


def ranges(css: str) -> dict[int, list[int]]:
    """Each numbered subset's code points, from fontsource's CSS."""
    found: dict[int, list[int]] = {}
    pattern = r"noto-color-emoji-(\d+)-400-normal\.woff2\)[^}]*?unicode-range: ([^;]+);"
    for number, text in re.findall(pattern, css, re.S):
        points: list[int] = []
        for part in text.split(","):
            low, _, high = part.strip().removeprefix("U+").partition("-")
            points.extend(range(int(low, 16), int(high or low, 16) + 1))
        found[int(number)] = points
    return found


def main(css_path: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for number, points in sorted(ranges(Path(css_path).read_text()).items()):
        font = TTFont(SOURCE)
        options = subset.Options()
        options.flavor = "woff2"
        options.layout_features = ["*"]  # skin tones, flags and families are ligatures
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        target = OUT / NAME.format(n=number)
        font.flavor = "woff2"
        font.save(target)
        print(target.name, target.stat().st_size)


if __name__ == "__main__":
    main(sys.argv[1])

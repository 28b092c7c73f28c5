"""Light and dark themes, the bundled fonts (Persian-capable; monospace), and the touch sizes."""

from __future__ import annotations

import flet as ft

FONT_FAMILY = "Vazirmatn"
MONO_FONT_FAMILY = "DejaVu Sans Mono"  # previews of options (mockups, code) keep their columns
FONTS = {
    FONT_FAMILY: "fonts/Vazirmatn-Regular.ttf",
    MONO_FONT_FAMILY: "fonts/DejaVuSansMono.ttf",
}
SEED = ft.Colors.INDIGO
TAP = 48  # the smallest tappable size, in logical pixels, on every platform


def themes() -> tuple[ft.Theme, ft.Theme]:
    light = ft.Theme(
        color_scheme_seed=SEED, font_family=FONT_FAMILY, visual_density=ft.VisualDensity.STANDARD
    )
    dark = ft.Theme(
        color_scheme_seed=SEED, font_family=FONT_FAMILY, visual_density=ft.VisualDensity.STANDARD
    )
    return light, dark


def apply(page: ft.Page) -> None:
    page.fonts = FONTS
    page.theme, page.dark_theme = themes()
    page.theme_mode = ft.ThemeMode.SYSTEM

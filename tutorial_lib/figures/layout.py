"""What goes around the SVG panels (:mod:`tutorial_lib.figures.svg`) of an explorer frame,
as HTML: :func:`row` lays panels side by side and lets them wrap onto new lines on a phone;
:func:`key` and :func:`gradient_key` are legends placed under the panels, never over the data.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

from .common import INK, MUTED

__all__ = ["row", "key", "gradient_key", "tick_label"]


def tick_label(v: float) -> str:
    """A short tick label: 0.5, 64, 1e+05."""
    if v == 0:
        return "0"
    if abs(v) >= 1e4 or abs(v) < 1e-3:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:.3g}"


def hex_colour(rgba) -> str:
    """An RGB(A) colour of 0..1 floats as six hex digits, "1a2b3c"."""
    return "".join(f"{round(255 * c):02x}" for c in rgba[:3])


def row(*parts: str, caption: str = "") -> str:
    """Panels (or any HTML) side by side, wrapping onto new lines when the screen is narrow."""
    body = (
        '<div class="explorer-panels" style="display:flex;flex-wrap:wrap;gap:6px 14px;'
        f'align-items:flex-start">{"".join(parts)}</div>'
    )
    if caption:
        body += (
            f'<div style="font-size:13px;color:{INK};margin-top:2px">{html.escape(caption)}</div>'
        )
    return body


def key(items: Iterable[tuple[str, str, str]]) -> str:
    """A legend as one line of HTML: (label, colour, kind), kind "line", "dash", "box" or "dot"."""
    marks: dict[str, Callable[[str], str]] = {
        "line": lambda c: f'<line x1="0" x2="18" y1="6" y2="6" stroke="{c}" stroke-width="2"/>',
        "dash": lambda c: (
            f'<line x1="0" x2="18" y1="6" y2="6" stroke="{c}" stroke-width="2" '
            'stroke-dasharray="4,3"/>'
        ),
        "box": lambda c: (
            f'<rect x="2" y="0" width="14" height="12" fill="{c}" stroke="{MUTED}" '
            'stroke-width="0.5"/>'
        ),
        "dot": lambda c: f'<circle cx="9" cy="6" r="4" fill="{c}"/>',
    }
    spans = [
        '<span style="display:inline-flex;align-items:center;gap:4px;margin-right:12px">'
        f'<svg width="18" height="12" aria-hidden="true">{marks[kind](colour)}</svg>'
        f"{html.escape(label)}</span>"
        for label, colour, kind in items
    ]
    return (
        f'<div class="explorer-key" style="font-size:13px;color:{INK};display:flex;'
        f'flex-wrap:wrap;row-gap:2px">{"".join(spans)}</div>'
    )


def gradient_key(cmap: str, vmin: float, vmax: float, label: str, ticks=None) -> str:
    """A horizontal colour key as one line of HTML: what the colours of a heatmap mean."""
    from matplotlib import colormaps

    colours = colormaps[cmap]
    stops = ",".join(f"#{hex_colour(colours(i / 10))}" for i in range(11))
    ticks = [vmin, (vmin + vmax) / 2, vmax] if ticks is None else ticks
    marks = "".join(
        f'<span style="position:absolute;left:{100 * (v - vmin) / (vmax - vmin):.1f}%;'
        f'transform:translateX(-50%);top:14px">{html.escape(tick_label(v))}</span>'
        for v in ticks
    )
    return (
        f'<div class="explorer-key" style="font-size:13px;color:{INK};display:flex;'
        'align-items:flex-start;gap:10px;flex-wrap:wrap;margin:2px 0 4px">'
        f"<span>{html.escape(label)}</span>"
        '<span style="position:relative;display:inline-block;width:180px;height:32px;'
        'margin:0 12px">'
        f'<span style="display:block;height:12px;background:linear-gradient(to right,{stops});'
        f'border:0.5px solid {MUTED}"></span>{marks}</span></div>'
    )

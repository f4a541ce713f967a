"""A small SVG canvas for the book's diagrams: readable text, an opaque panel, accessible names.

Text may carry the book's letters with sub- and superscripts: ``T_src``, ``d_k``, ``W^O``
(``_{..}`` for longer ones). No text is drawn under :data:`MIN_FONT_PX` at the drawing's
natural size; every drawing sits on an opaque white panel, so it reads the same in a dark
theme, and carries a ``<title>`` and ``<desc>`` for screen readers.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

__all__ = ["MIN_FONT_PX", "INK", "MUTED", "PAPER", "FILL", "Canvas", "figure_html", "text_width"]

MIN_FONT_PX = 11  # the smallest text any diagram draws, in px at its natural size
INK = "#1a1a1a"
MUTED = "#4d4d4d"
PAPER = "#ffffff"
TAG_INK = "#1f4e79"  # chapter labels
# Light fills after the paper's Figure 1, dark text on all of them.
FILL = {
    "attention": "#fbe3c3",
    "norm": "#f3f0b5",
    "ffn": "#cfe6f7",
    "embedding": "#f8d5de",
    "linear": "#e3d9f2",
    "softmax": "#d3ecd3",
    "block": "#f4f4f4",
    "tag": "#dbe8f5",
}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

_SUBSUP = re.compile(r"([_^])(\{[^}]*\}|[A-Za-z0-9]+)")


def _segments(text: str) -> list[tuple[str, str]]:
    """Split "(B, T_src, H·d_k)" into ("(B, T", ""), ("src", "_"), (", H·d", ""), ("k", "_"), ...

    ``_x`` or ``_{xy}`` is a subscript and ``^x`` a superscript, as in the book's letters.
    """
    out, last = [], 0
    for match in _SUBSUP.finditer(text):
        if match.start() > last:
            out.append((text[last : match.start()], ""))
        out.append((match.group(2).strip("{}"), match.group(1)))
        last = match.end()
    if last < len(text):
        out.append((text[last:], ""))
    return out


def text_width(text: str, size: float, bold: bool = False) -> float:
    """A generous estimate of the drawn width of ``text`` at ``size`` px (sans-serif)."""
    width = 0.0
    for part, kind in _segments(text):
        width += (0.63 if bold else 0.58) * (MIN_FONT_PX if kind else size) * len(part)
    return width


def _n(x: float) -> str:
    """A coordinate, short: 12.0 -> "12", 12.25 -> "12.2"."""
    return f"{x:.1f}".removesuffix(".0")


@dataclass
class Canvas:
    """An SVG drawing in px, y pointing down. Text may carry ``_sub`` and ``^sup`` marks."""

    width: float
    height: float
    title: str
    desc: str
    id_prefix: str = "diagram"
    parts: list[str] = field(default_factory=list)

    def rect(self, x, y, w, h, fill=PAPER, stroke=INK, rx=5.0, dashed=False, width=1.2):
        dash = ' stroke-dasharray="5 4"' if dashed else ""
        self.parts.append(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" rx="{_n(rx)}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{_n(width)}"{dash}/>'
        )

    def circle(self, cx, cy, r, fill=PAPER, stroke=INK):
        self.parts.append(
            f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="{_n(r)}" fill="{fill}" stroke="{stroke}" '
            'stroke-width="1.2"/>'
        )

    def text(self, x, y, text, size=13, anchor="middle", weight="normal", colour=INK, italic=False):
        """One line of text, its baseline at ``y``; ``_k`` and ``^T`` are sub- and superscripts."""
        if size < MIN_FONT_PX:
            raise ValueError(f"text must be at least {MIN_FONT_PX} px; got {size} for {text!r}")
        sub = max(MIN_FONT_PX, round(size * 0.82))
        segments = _segments(text)
        if all(not kind for _, kind in segments):  # plain text: no tspans needed
            segments = []
            spans = [html.escape(text)]
        else:
            spans = []
        shift = 0.0
        for part, kind in segments:
            target = {"_": 0.3 * size, "^": -0.38 * size, "": 0.0}[kind]
            dy = target - shift
            shift = target
            attrs = f' dy="{_n(dy)}"' if dy else ""
            if kind:
                attrs += f' font-size="{sub}"'
            spans.append(f"<tspan{attrs}>{html.escape(part)}</tspan>")
        extra = ' font-style="italic"' if italic else ""
        extra += f' text-anchor="{anchor}"' if anchor != "start" else ""
        extra += f' font-weight="{weight}"' if weight != "normal" else ""
        extra += f' fill="{colour}"' if colour != INK else ""
        self.parts.append(
            f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}"{extra}>{"".join(spans)}</text>'
        )

    def dots(self, points, radius=1.6, colour="#999999"):
        """Small round dots at ``points``, as one path."""
        d = "".join(f"M{_n(x)} {_n(y)}h0" for x, y in points)
        self.parts.append(
            f'<path d="{d}" stroke="{colour}" stroke-width="{2 * radius}" stroke-linecap="round"/>'
        )

    def line(self, points, colour=INK, width=1.4, dashed=False, arrow=True):
        """A polyline through ``points``, with an arrowhead at its end when ``arrow``."""
        path = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        extra = ' stroke-dasharray="5 4"' if dashed else ""
        extra += ' stroke-linejoin="round"' if len(points) > 2 else ""
        self.parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" '
            f'stroke-width="{_n(width)}"{extra}/>'
        )
        if arrow:
            self.arrowhead(points[-2], points[-1], colour)

    def arrowhead(self, start, end, colour=INK, size=7.0):
        (x0, y0), (x1, y1) = start, end
        length = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 1e-9)
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        bx, by = x1 - ux * size, y1 - uy * size
        left = (bx - uy * size * 0.45, by + ux * size * 0.45)
        right = (bx + uy * size * 0.45, by - ux * size * 0.45)
        self.parts.append(
            f'<polygon points="{_n(x1)},{_n(y1)} {_n(left[0])},{_n(left[1])} '
            f'{_n(right[0])},{_n(right[1])}" fill="{colour}"/>'
        )

    def box(self, x, y, w, lines, fill, tag=None, dashed=False, line_height=16):
        """A box at (x, y) of width ``w`` holding ``lines`` (first one bold); returns its height.

        ``tag``, when given, is a chapter label drawn as a small pill in the box's corner.
        """
        h = 12 + line_height * len(lines)
        for i, line in enumerate(lines):
            if text_width(line, 13 if i == 0 else 12, bold=i == 0) > w - 6:
                raise ValueError(f"{line!r} does not fit in a box {w:.0f} px wide")
        self.rect(x, y, w, h, fill=fill, dashed=dashed)
        for i, line in enumerate(lines):
            size, weight = (13, "bold") if i == 0 else (12, "normal")
            self.text(x + w / 2, y + 4 + line_height * (i + 1) - 3, line, size, weight=weight)
        if tag:
            self.tag(x + w, y, tag)
        return h

    def tag(self, right, top, label):
        """A chapter label: dark blue on a light blue pill (7:1), its top-right corner at
        (right, top)."""
        w = text_width(label, 11) + 10
        self.rect(right - w + 6, top - 9, w, 17, fill=FILL["tag"], stroke=TAG_INK, rx=8.5)
        self.text(right - w / 2 + 6, top + 3.5, label, 11, weight="bold", colour=TAG_INK)

    def render(self) -> str:
        title_id, desc_id = f"{self.id_prefix}-title", f"{self.id_prefix}-desc"
        w, h = round(self.width), round(self.height)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" role="img" aria-labelledby="{title_id} {desc_id}" '
            f'font-family="{FONT}" fill="{INK}" style="max-width:none">'
            f'<title id="{title_id}">{html.escape(self.title)}</title>'
            f'<desc id="{desc_id}">{html.escape(self.desc)}</desc>'
            f'<rect x="0" y="0" width="{w}" height="{h}" rx="8" fill="{PAPER}"/>'
            + "".join(self.parts)
            + "</svg>"
        )


def figure_html(svg: str, caption: str = "") -> str:
    """An SVG for a page: natural size (text stays >= 11 px), scrolling sideways when narrow."""
    cap = (
        f'<figcaption style="font-size:0.9em;margin-top:0.4em">{html.escape(caption)}</figcaption>'
        if caption
        else ""
    )
    return (
        '<figure class="book-diagram" style="margin:1em 0">'
        '<div style="overflow-x:auto;max-width:100%">'
        f'<div style="width:max-content;margin:0 auto">{svg}</div></div>{cap}</figure>'
    )

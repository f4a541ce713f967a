"""Small SVG plots written as text: the frames of the book's explorers.

An explorer frame must redraw in a few milliseconds in a live kernel and weigh a few
kilobytes in the built page; matplotlib needs ~100 ms and a PNG per frame. A
:class:`Panel` is one plot in CSS pixels (its text is real text, 12 px, so it stays
sharp and readable on any screen). What goes around panels in a frame (:func:`row`,
:func:`key`, :func:`gradient_key`) is in :mod:`tutorial_lib.figures.layout`, importable
from here too.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

from .common import INK, MUTED
from .layout import gradient_key, hex_colour, key, row, tick_label

__all__ = ["FONT_PX", "Panel", "row", "key", "gradient_key", "tick_label"]

FONT_PX = 12  # ticks, labels, keys: >= 11 CSS px wherever the panel is shown at its size
TITLE_PX = 13


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


class Panel:
    """One plot: a box in data coordinates, its ticks and labels, and the marks drawn in it.

    ``width`` and ``height`` are CSS pixels, margins included. Marks are added with the
    methods below and clipped to the plot box; ``svg()`` returns the finished element.
    """

    def __init__(
        self,
        width: int = 300,
        height: int = 220,
        *,
        xlim: tuple[float, float],
        ylim: tuple[float, float],
        title: str = "",
        xlabel: str = "",
        ylabel: str = "",
        logx: bool = False,
        logy: bool = False,
        margins: tuple[int, int, int, int] = (52, 26, 12, 42),  # left, top, right, bottom
    ):
        self.width, self.height = width, height
        self.left, self.top, right, bottom = margins
        self.pw, self.ph = width - self.left - right, height - self.top - bottom
        self.xlim, self.ylim, self.logx, self.logy = xlim, ylim, logx, logy
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.marks: list[str] = []  # inside the plot box, clipped
        self.labels: list[str] = []  # ticks, texts, anything outside the box
        # Ids from the geometry: two panels on one page that share an id share the shape too.
        self._clip = f"clip-{self.left}-{self.top}-{self.pw}-{self.ph}"

    # -- coordinates -----------------------------------------------------------------

    def _f(self, v: float, log: bool) -> float:
        return math.log10(v) if log else v

    def x(self, v: float) -> float:
        a, b = (self._f(u, self.logx) for u in self.xlim)
        return self.left + (self._f(v, self.logx) - a) / (b - a) * self.pw

    def y(self, v: float) -> float:
        a, b = (self._f(u, self.logy) for u in self.ylim)
        return self.top + self.ph - (self._f(v, self.logy) - a) / (b - a) * self.ph

    # -- marks -------------------------------------------------------------------------

    def line(self, xs, ys, colour: str, width: float = 1.6, dash: str | None = None) -> None:
        """A polyline; points closer than half a pixel are merged (a panel cannot show them)."""
        points, last = [], None
        for a, b in zip(xs, ys, strict=True):
            if b is None or (isinstance(b, float) and math.isnan(b)):
                continue
            p = (round(self.x(a) * 2) / 2, round(self.y(b) * 2) / 2)
            if p != last:
                points.append(f"{_num(p[0])},{_num(p[1])}")
                last = p
        style = f' stroke-dasharray="{dash}"' if dash else ""
        self.marks.append(
            f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}"{style}/>'
        )

    def stairs(self, edges: Sequence[float], counts: Sequence[float], colour: str) -> None:
        """A filled histogram: counts[i] between edges[i] and edges[i + 1]."""
        y0 = self.y(self.ylim[0])
        path = [f"M{_num(self.x(edges[0]))} {_num(y0)}"]
        for i, c in enumerate(counts):
            yc = _num(self.y(c))
            path.append(f"V{yc}H{_num(self.x(edges[i + 1]))}")
        path.append(f"V{_num(y0)}Z")
        self.marks.append(f'<path d="{"".join(path)}" fill="{colour}" stroke="none"/>')

    def dots(self, xs, ys, colour: str, r: float = 3.0) -> None:
        moves = "".join(
            f"M{_num(self.x(a))} {_num(self.y(b))}h0" for a, b in zip(xs, ys, strict=True)
        )
        self.marks.append(
            f'<path d="{moves}" stroke="{colour}" stroke-width="{2 * r}" stroke-linecap="round"/>'
        )

    def hline(self, v: float, colour: str = MUTED, dash: str | None = "4,3", width=1.2) -> None:
        self.line(self.xlim, [v, v], colour, width, dash)

    def vline(self, v: float, colour: str = MUTED, dash: str | None = "4,3", width=1.2) -> None:
        self.marks.append(
            f'<line x1="{_num(self.x(v))}" x2="{_num(self.x(v))}" y1="{self.top}" '
            f'y2="{self.top + self.ph}" stroke="{colour}" stroke-width="{width}"'
            + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>"
        )

    def span(self, x0: float, x1: float, colour: str, opacity: float = 0.25) -> None:
        a, b = sorted((self.x(x0), self.x(x1)))
        self.marks.append(
            f'<rect x="{_num(a)}" y="{self.top}" width="{_num(b - a)}" height="{self.ph}" '
            f'fill="{colour}" fill-opacity="{opacity}"/>'
        )

    def image(self, data_url: str) -> None:
        """A heatmap image stretched over the whole plot box, cells kept square-edged."""
        self.marks.append(
            f'<image x="{self.left}" y="{self.top}" width="{self.pw}" height="{self.ph}" '
            f'href="{data_url}" preserveAspectRatio="none" style="image-rendering:pixelated"/>'
        )

    def rect(self, x0, y0, x1, y1, *, fill="none", stroke=INK, width=1.5) -> None:
        a, b = sorted((self.x(x0), self.x(x1)))
        c, d = sorted((self.y(y0), self.y(y1)))
        self.marks.append(
            f'<rect x="{_num(a)}" y="{_num(c)}" width="{_num(b - a)}" height="{_num(d - c)}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"/>'
        )

    def text(
        self, x: float, y: float, s: str, *, colour=INK, anchor="start", size=FONT_PX, dy=4.0
    ) -> None:
        """Text at data coordinates (not clipped)."""
        self.labels.append(
            f'<text x="{_num(self.x(x))}" y="{_num(self.y(y) + dy)}" fill="{colour}" '
            f'text-anchor="{anchor}" font-size="{size}">{html.escape(s)}</text>'
        )

    # -- axes ------------------------------------------------------------------------

    def xticks(self, values: Iterable[float], labels: Sequence[str] | None = None) -> None:
        self._ticks("x", values, labels)

    def yticks(self, values: Iterable[float], labels: Sequence[str] | None = None) -> None:
        self._ticks("y", values, labels)

    def _ticks(self, axis: str, values: Iterable[float], labels: Sequence[str] | None) -> None:
        """Tick marks and labels: below the box for x, left of it for y."""
        values = list(values)
        labels = labels or [tick_label(v) for v in values]
        base = self.top + self.ph
        for v, s in zip(values, labels, strict=True):
            if axis == "x":
                x = _num(self.x(v))
                mark, tx, ty, anchor = (x, x, base, base + 4), x, base + 17, "middle"
            else:
                y = _num(self.y(v))
                mark, tx, ty = (self.left - 4, self.left, y, y), self.left - 6, _num(self.y(v) + 4)
                anchor = "end"
            self.labels.append(
                '<line x1="{}" x2="{}" y1="{}" y2="{}" '.format(*mark)
                + f'stroke="{INK}"/><text x="{tx}" y="{ty}" text-anchor="{anchor}">'
                f"{html.escape(s)}</text>"
            )

    def colourbar(
        self, cmap: str, vmin: float, vmax: float, ticks: Sequence[float], label: str = ""
    ) -> None:
        """A vertical colour key right of the plot box (give the panel a right margin of ~60)."""
        from matplotlib import colormaps

        colours = colormaps[cmap]
        gid = f"cmap-{cmap}"  # the same gradient wherever this id is found
        stops = "".join(
            f'<stop offset="{i / 10:.1f}" stop-color="#{hex_colour(colours(1 - i / 10))}"/>'
            for i in range(11)
        )
        x0 = self.left + self.pw + 10
        self.labels.append(
            f'<defs><linearGradient id="{gid}" x1="0" x2="0" y1="0" y2="1">{stops}'
            f'</linearGradient></defs><rect x="{x0}" y="{self.top}" width="10" '
            f'height="{self.ph}" fill="url(#{gid})" stroke="{INK}" stroke-width="0.5"/>'
        )
        for v in ticks:
            y = self.top + self.ph * (1 - (v - vmin) / (vmax - vmin))
            self.labels.append(
                f'<text x="{x0 + 14}" y="{_num(y + 4)}">{html.escape(tick_label(v))}</text>'
            )
        if label:
            cx = x0 + 44
            self.labels.append(
                f'<text transform="translate({cx} {self.top + self.ph / 2}) rotate(90)" '
                f'text-anchor="middle">{html.escape(label)}</text>'
            )

    def svg(self) -> str:
        W, H = self.width, self.height
        cx = self.left + self.pw / 2
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="{FONT_PX}" '
            f'fill="{INK}" role="img" aria-label="{html.escape(self.title or self.ylabel)}" '
            'style="flex:none">',
            f'<clipPath id="{self._clip}"><rect x="{self.left}" y="{self.top}" '
            f'width="{self.pw}" height="{self.ph}"/></clipPath>',
            f'<g clip-path="url(#{self._clip})">{"".join(self.marks)}</g>',
            f'<rect x="{self.left}" y="{self.top}" width="{self.pw}" height="{self.ph}" '
            f'fill="none" stroke="{INK}" stroke-width="0.8"/>',
            "".join(self.labels),
        ]
        if self.title:
            out.append(
                f'<text x="{_num(cx)}" y="{TITLE_PX + 3}" text-anchor="middle" '
                f'font-size="{TITLE_PX}" font-weight="bold">{html.escape(self.title)}</text>'
            )
        if self.xlabel:
            out.append(
                f'<text x="{_num(cx)}" y="{H - 5}" text-anchor="middle">'
                f"{html.escape(self.xlabel)}</text>"
            )
        if self.ylabel:
            out.append(
                f'<text transform="translate(13 {_num(self.top + self.ph / 2)}) rotate(-90)" '
                f'text-anchor="middle">{html.escape(self.ylabel)}</text>'
            )
        out.append("</svg>")
        return "".join(out)

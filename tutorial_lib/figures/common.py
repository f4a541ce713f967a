"""What every figure module shares: the palette, small PNGs, HTML tables, the book style.

* ``HEAD_COLOURS``: the colour-blind-safe palette (Okabe-Ito), one colour per head.
* :func:`palette_png` and :func:`matrix_png`: a heatmap as a few hundred bytes of PNG,
  for the SVG panels of :mod:`tutorial_lib.figures.svg` to stretch (pixelated) over their
  plot box.
* :func:`html_table`: the one table style of every HTML output and explorer frame.
* :func:`use_book_style`: what chapters call once so that their matplotlib figures are
  sharp on 2x screens and their text readable in the book's column.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from collections.abc import Sequence

__all__ = [
    "HEAD_COLOURS",
    "INK",
    "MUTED",
    "COLUMN_PX",
    "MIN_TEXT_PX",
    "palette_png",
    "matrix_png",
    "html_table",
    "code_html",
    "use_book_style",
    "min_font_points",
]

# Colour-blind-safe palette (Okabe-Ito) for heads.
HEAD_COLOURS = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
]
INK = "#1a1a1a"  # text on the white ground of every figure: 17:1 contrast
MUTED = "#555555"  # secondary text, still 7.5:1 on white

# The book's text column at a 1280 px wide window (sphinx-book-theme, measured in Chromium),
# and the smallest text a figure may show in it. A figure wider than the column is scaled down
# to fit, so its text must be drawn larger (see min_font_points).
COLUMN_PX = 688
MIN_TEXT_PX = 11.0


def palette_png(rgb) -> str:
    """uint8 array (rows, cols, 3) -> a data: URL holding it as a 32-colour palette PNG.

    A palette image is a quarter of the bytes of RGB and looks the same for heatmaps
    drawn with a few dozen colour levels.
    """
    from PIL import Image

    image = Image.fromarray(rgb[..., :3], "RGB").quantize(32, method=Image.Quantize.FASTOCTREE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def matrix_png(values, cmap: str, vmin: float, vmax: float, hidden=None, cells: int = 128) -> str:
    """A (rows, cols) array as a palette-PNG data URL, one pixel per cell; ``hidden`` cells grey.

    At most ``cells`` x ``cells`` pixels (nearest neighbour), about what a small panel shows.
    """
    import numpy as np
    from matplotlib import colormaps

    values = np.asarray(values, dtype=float)
    rows = np.linspace(0, values.shape[0] - 1, min(values.shape[0], cells)).round().astype(int)
    cols = np.linspace(0, values.shape[1] - 1, min(values.shape[1], cells)).round().astype(int)
    v = (values[np.ix_(rows, cols)] - vmin) / max(vmax - vmin, 1e-12)
    rgb = (colormaps[cmap](np.clip(np.nan_to_num(v, nan=0.0), 0, 1))[..., :3] * 255).astype(
        np.uint8
    )
    grey = np.isnan(values[np.ix_(rows, cols)])
    if hidden is not None:
        grey |= np.asarray(hidden)[np.ix_(rows, cols)]
    rgb[grey] = (215, 215, 215)
    return palette_png(rgb)


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    caption: str = "",
    *,
    align: Sequence[str] | None = None,
    escape: bool = True,
) -> str:
    """A plain HTML table with dark text on a white ground, legible in light and dark pages.

    ``rows`` hold cell texts (escaped unless ``escape=False``, for cells that carry markup);
    ``align`` gives "left"/"right"/"center" per column.
    """
    align = list(align or ["left"] * len(header))

    def cell(tag, text, a):
        text = html.escape(text) if escape else text
        return f'<{tag} style="text-align:{a};padding:2px 8px">{text}</{tag}>'

    head = "".join(cell("th", h, a) for h, a in zip(header, align, strict=True))
    body = "".join(
        "<tr>" + "".join(cell("td", c, a) for c, a in zip(r, align, strict=True)) + "</tr>"
        for r in rows
    )
    cap = (
        f'<caption style="caption-side:top;text-align:left;color:{INK}">{html.escape(caption)}'
        "</caption>"
        if caption
        else ""
    )
    return (
        f'<table class="book-table" style="border-collapse:collapse;color:{INK};'
        f'background:#fff">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def code_html(text: str, wrap: bool = False) -> str:
    """Code inside a figure or table: in its own dark ink on the white ground (a dark page's
    pale code colour would vanish there), kept on one line unless ``wrap``."""
    space = "normal" if wrap else "nowrap"
    return (
        f'<code style="color:inherit;background:#f2f2f2;white-space:{space}">'
        f"{html.escape(text)}</code>"
    )


def min_font_points(width_in: float, column_px: float = COLUMN_PX) -> float:
    """Smallest font (points) whose text stays >= MIN_TEXT_PX in the book's column.

    A figure ``width_in`` inches wide is shown at 96 CSS px per inch (1 pt = 4/3 px) unless
    that is wider than the column, in which case it is scaled down to the column.
    """
    px_per_point = min(4 / 3, column_px / (72 * width_in))
    return math.ceil(10 * MIN_TEXT_PX / px_per_point) / 10


def _raise_text(fig, floor: float) -> bool:
    """Raise every text of ``fig`` below ``floor`` points to it; whether any was raised."""
    from matplotlib.text import Text

    raised = False
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # Tick labels are remade at every draw: raise them through the axis' settings.
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_text()]
            if labels and min(t.get_fontsize() for t in labels) < floor:
                axis.set_tick_params(which="both", labelsize=floor)
                raised = True
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text() and text.get_fontsize() < floor:
            text.set_fontsize(floor)
            raised = True
    return raised


def _raise_small_text(fig) -> None:
    """Raise every text of ``fig`` that would read below MIN_TEXT_PX to the smallest that won't.

    The width that counts is the saved one (``bbox_inches="tight"`` trims margins or grows
    the image around text outside the axes); raising text can widen it, so check twice.
    """
    import matplotlib as mpl

    pad = 2 * mpl.rcParams["savefig.pad_inches"]  # the tight box is saved with a margin
    for _ in range(2):
        fig.draw_without_rendering()  # runs the layout engine: the saved width is the final one
        width_in = fig.get_tightbbox(fig.canvas.get_renderer()).width + pad
        if not _raise_text(fig, min_font_points(width_in)):
            return


def _save_svg(fig) -> str:
    buffer = io.StringIO()
    # dpi only sets the resolution of layers drawn with rasterized=True (dense scatters):
    # 192 is twice the 96 px per inch of CSS, sharp on a 2x screen.
    fig.savefig(buffer, format="svg", bbox_inches="tight", facecolor="white", dpi=192)
    return buffer.getvalue()


def _svg_figure(fig) -> str:
    """The inline backend's SVG for ``fig``: text kept as text, none of it below the minimum.

    The width measured before saving can miss the saved one by a hair (Q7's distance
    profile: 688.24 pt saved, its 11 pt text shown at 10.996 px), so the saved width has the
    last word: text still too small for it is raised (with 1% to spare) and saved again.
    """
    _raise_small_text(fig)
    svg = _save_svg(fig)
    saved_in = float(re.search(r'<svg[^>]*? width="([0-9.]+)pt"', svg).group(1)) / 72
    if _raise_text(fig, min_font_points(1.01 * saved_in)):
        svg = _save_svg(fig)
    return svg


def use_book_style() -> None:
    """Figures every chapter draws with matplotlib: sharp on 2x screens, text large enough.

    Chapters call this once, in their setup cell (after any ``%matplotlib inline``, which it
    also does). Figures are then sent as SVG (vector: sharp
    at any zoom), with their text kept as text and on an opaque white ground (legible on the
    book's dark theme too). Text sizes are raised so that ticks and labels read at 11 CSS px
    or more where the book shows the figure: any text a cell draws smaller than that, for the
    figure's width, is raised to the minimum when the figure is shown.
    """
    import matplotlib as mpl

    mpl.rcParams.update(
        {
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "xtick.labelsize": 10.5,
            "ytick.labelsize": 10.5,
            "legend.fontsize": 10.5,
            "figure.titlesize": 12,
            "figure.facecolor": "white",
            "savefig.facecolor": "white",
            "svg.fonttype": "none",  # text stays text: smaller files, searchable, measurable
            # Noisy training curves: drop vertices that move a line by under 0.3 px (0.11 by
            # default); a sixth fewer bytes, no visible change.
            "path.simplify_threshold": 0.3,
        }
    )
    try:
        from IPython import get_ipython
        from matplotlib.figure import Figure
    except ImportError:  # no IPython here: nothing to configure
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "enable_matplotlib"):
        return
    # What `%matplotlib inline` does (figures inline even where MPLBACKEND=Agg), done first so
    # that importing pyplot later cannot reset the figure format chosen next.
    shell.enable_matplotlib("inline")
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("svg")
    shell.display_formatter.formatters["image/svg+xml"].for_type(Figure, _svg_figure)

"""Figures and explorers for chapter Q3a (absolute positions); Q3b's are in ``relative``.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).

Explorers draw HTML frames (small SVG panels, :mod:`tutorial_lib.figures.svg`), which
redraw in a few milliseconds; static figures are matplotlib drawing functions that take a
``fig`` and never call ``pyplot``. Everything of :mod:`tutorial_lib.figures.relative` is
importable from here too, as the chapters have always imported it.
"""

from __future__ import annotations

import html
import math

from ..positional import sinusoidal_encoding, sinusoidal_frequencies
from ..training import one_thread
from .common import INK, MUTED, matrix_png
from .explorer import Explorer

# Chapter Q3b's figures, importable from here as before (documented in .relative).
from .relative import SCORE_VARIANTS as SCORE_VARIANTS
from .relative import VARIANT_COLOURS as VARIANT_COLOURS
from .relative import VARIANT_MARKERS as VARIANT_MARKERS
from .relative import draw_extrapolation as draw_extrapolation
from .relative import draw_position_profile as draw_position_profile
from .relative import draw_rope_pair as draw_rope_pair
from .relative import draw_t5_table as draw_t5_table
from .relative import position_scores_explorer as position_scores_explorer
from .relative import position_scores_html as position_scores_html
from .relative import rope_decay_bound as rope_decay_bound
from .svg import Panel, gradient_key, row

__all__ = ["sinusoidal_explorer_html", "sinusoidal_explorer", "draw_length_ratio"]


def sinusoidal_explorer_html(max_len: int, d_model: int, base: float) -> str:
    """Three SVG panels: PE as a heatmap, cos(PE[p], PE[q]) for the middle p, each wavelength."""
    import numpy as np

    with one_thread():  # a small tensor: extra threads would only wait on each other
        pe = sinusoidal_encoding(max_len, d_model, base).double().numpy()  # (T, D)
    p = max_len // 2
    similarity = pe @ pe[p] / (d_model / 2)  # cosine similarity: every row has norm sqrt(D/2)
    wavelength = 2 * math.pi / sinusoidal_frequencies(d_model, base).numpy()  # (D/2,)
    ratio = base ** (2 / d_model)
    # 21 colour levels (steps of 0.1) keep the PNG small; a 96-cell side is what a panel shows.
    levels = np.round(pe * 10) / 10  # (T, D)

    width, height, margins = 212, 230, (44, 24, 14, 42)
    encoding = Panel(
        width, height, xlim=(-0.5, d_model - 0.5), ylim=(max_len - 0.5, -0.5),
        title="the encoding PE", xlabel="dimension", ylabel="position p", margins=margins,
    )  # fmt: skip
    # Cell centres sit on whole numbers, so positions run 0 .. max_len - 1 as in the next panel.
    encoding.image(matrix_png(levels, "RdBu_r", -1.0, 1.0, cells=96))
    encoding.xticks([0, d_model // 2, d_model - 1])
    encoding.yticks([0, max_len // 2, max_len - 1])

    near = Panel(
        width, height, xlim=(0, max_len - 1), ylim=(-0.45, 1.05),
        title=f"similarity to position {p}", xlabel="position q", ylabel="cosine",
        margins=margins,
    )  # fmt: skip
    near.vline(p, MUTED, "2,2")
    near.hline(0, "#bbbbbb", None, 1.0)
    near.line(range(max_len), similarity.tolist(), "#0072B2", 1.4)
    near.xticks([0, p, max_len - 1])
    near.yticks([0, 0.5, 1])

    last = d_model // 2 - 1
    waves = Panel(
        width, height, xlim=(-0.5, last + 0.5), ylim=(1, 1e7), logy=True,
        title="wavelength of each pair", xlabel="pair i (dims 2i, 2i+1)",
        ylabel="positions (log)", margins=margins,
    )  # fmt: skip
    waves.hline(max_len, MUTED, "4,2")
    waves.text(0, max_len, "max_len", colour=MUTED, dy=-5)
    waves.dots(range(d_model // 2), wavelength.tolist(), "#D55E00", 1.8)
    waves.xticks([0, last // 2, last])
    waves.yticks([10, 1e3, 1e5, 1e7], ["10", "10³", "10⁵", "10⁷"])

    slow = int((wavelength > max_len).sum())
    caption = (
        f"D = {d_model}: {d_model // 2} pairs, each {ratio:.3f} times longer than the one "
        f"before; wavelengths {wavelength[0]:.2f} to {wavelength[-1]:.3g} positions, {slow} "
        f"of them longer than max_len = {max_len}."
    )
    return (
        row(encoding.svg(), near.svg(), waves.svg())
        + gradient_key("RdBu_r", -1, 1, "value of PE (first panel)")
        + f'<div style="font-size:13px;color:{INK};margin-top:2px">{html.escape(caption)}</div>'
    )


def sinusoidal_explorer():
    """Chapter Q3a's explorer: 27 frames over max_len, d_model and base (HTML, a few ms each)."""
    return Explorer(
        sinusoidal_explorer_html,
        {"max_len": [32, 128, 512], "d_model": [16, 64, 256], "base": [100.0, 10000.0, 1e6]},
        kind="html",
        initial={"max_len": 128, "d_model": 64, "base": 10000.0},
        title="Sinusoidal encoding explorer: the encoding, its similarities, its wavelengths",
    )


def draw_length_ratio(
    fig, results: dict[str, dict], title: str = "", ylabel: str = "reversal accuracy (%)"
) -> None:
    """Accuracy against the token/position length ratio, one labelled point per setting.

    ``results`` maps a setting's name to ``{"ratio": float, "accuracy": float in [0, 1]}``.
    Labels sit left of points in the right third of the axis, so none is cut at the edge.
    """
    ax = fig.subplots()
    ratios = [r["ratio"] for r in results.values()]
    lo, hi = min(ratios) / 3, max(ratios) * 3
    for i, (name, r) in enumerate(results.items()):
        x, y = r["ratio"], 100 * r["accuracy"]
        ax.scatter(x, y, color=f"C{i}", zorder=3)
        right = math.log(x / lo) > 0.6 * math.log(hi / lo)
        ax.annotate(
            name,
            (x, y),
            xytext=(-6 if right else 6, 6 if i % 2 else -12),
            textcoords="offset points",
            ha="right" if right else "left",
        )
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 105)
    ax.set_xlabel("token vector / position vector (lengths at initialisation)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)

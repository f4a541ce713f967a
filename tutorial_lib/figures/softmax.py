"""The saturation explorer of chapter Q2: scores, one query's weights, and how peaked softmax is.

Dimension letters as in :mod:`tutorial_lib.softmax`: T keys, d_k the width of q and k.

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

from __future__ import annotations

import html
import math

import torch

from ..softmax import MAX_JACOBIAN_NORM, random_dot_products, score_scale, sharpness
from ..training import one_thread
from .common import INK, MUTED
from .explorer import Explorer
from .svg import Panel, key, row

__all__ = ["saturation_html", "saturation_explorer", "BAR_NAMES"]

BAR_NAMES = ("entropy / log T", "largest weight", "‖J‖_F, the softmax Jacobian")
_BLUE, _ORANGE, _RED, _GREEN = "#0072B2", "#E69F00", "#D55E00", "#009E73"


def saturation_html(
    d_k: int, scaling: str, T: int, n_query: int = 64, seed: int = 0, x_max: float | None = None
) -> str:
    """The saturation explorer's frame: scores, one query's weights, and three medians.

    Left: histogram of the n_query x T scores on an x-axis of half-width ``x_max`` (default
    4.5 standard deviations); the explorer keeps it the same for every d_k of one scaling,
    so unscaled scores visibly widen as d_k grows and scaled ones do not; shaded: +-3
    standard deviations (the range popular explanations quote); dotted: the mean of each
    row's largest score. Middle: the weights of one typical query, sorted. Below: the
    medians over queries of entropy / log T, the largest weight and ||J||_F itself (its bar
    is full at the maximum, 1/2). Medians describe a typical query: when the scores are spread wide,
    a few near-ties keep the mean Jacobian norm up while most rows pass almost nothing.
    """
    scale = score_scale(d_k, scaling)
    std = scale * math.sqrt(d_k)  # the scores' standard deviation in theory
    x_max = 4.5 * std if x_max is None else x_max
    with one_thread():
        scores = scale * random_dot_products(d_k, T, n_query, seed)  # (n_query, T)
        weights = torch.softmax(scores, dim=-1)  # (n_query, T)
        stats = {name: value.median().item() for name, value in sharpness(scores).items()}
        counts = torch.histc(scores, bins=41, min=-4.5 * std, max=4.5 * std)  # (41,)
        row_max = scores.max(dim=-1).values.mean().item()
        order = weights.max(dim=-1).values.argsort()
        # One typical query: the row whose largest weight is the median over rows.
        typical = weights[order[len(order) // 2]].sort(descending=True).values  # (T,)

    # 1. Scores: bins follow the spread, the axis does not, so the bell's width is the news.
    hist = Panel(
        325, 230, xlim=(-x_max, x_max), ylim=(0, 1.08), title=f"scores q·k × {scale:.3g}",
        xlabel="score", ylabel="share of scores (peak = 1)", margins=(30, 24, 10, 42),
    )  # fmt: skip
    hist.span(-3 * std, 3 * std, _ORANGE, 0.25)
    edges = torch.linspace(-4.5 * std, 4.5 * std, 42).tolist()
    hist.stairs(edges, (counts / counts.max().clamp_min(1)).tolist(), _BLUE)
    hist.vline(row_max, _RED, "2,3", 1.8)
    step = _nice_step(x_max)
    hist.xticks([-2 * step, -step, 0, step, 2 * step] if 2 * step <= x_max else [-step, 0, step])

    # 2. One query's weights by rank, against the uniform 1/T.
    ranks = list(range(1, T + 1))
    weights_panel = Panel(
        325, 230, xlim=(0.8, T * 1.25), ylim=(0, 1.03), logx=True,
        title="one typical query's weights", xlabel="rank of the key (log scale)",
        ylabel="weight", margins=(44, 24, 10, 42),
    )  # fmt: skip
    weights_panel.hline(1 / T, MUTED, "2,3")
    weights_panel.line(ranks, typical.tolist(), _GREEN, 2.0)
    weights_panel.xticks(sorted({t for t in (1, 10, 100) if t < T} | {T}))
    weights_panel.yticks([0, 0.5, 1])

    legend = key(
        [
            ("scores", _BLUE, "box"),
            ("±3 std", "#f5dcaa", "box"),
            (f"mean largest score of a row, {row_max:.3g}", _RED, "dash"),
            ("weights, sorted", _GREEN, "line"),
            ("uniform, 1/T", MUTED, "dash"),
        ]
    )
    bars = _bars(
        [
            (BAR_NAMES[0], stats["entropy_fraction"], 1.0, "1 = uniform"),
            (BAR_NAMES[1], stats["max_weight"], 1.0, "1 = one-hot"),
            (BAR_NAMES[2], stats["jacobian_norm"], MAX_JACOBIAN_NORM, "bar full at its maximum, ½"),
        ],
        f"medians over {n_query} queries",
    )
    caption = (
        f"d_k = {d_k}, T = {T}, scaling {scaling}: scores have standard deviation {std:.3g}; "
        f"the axis spans ±{x_max:.3g} for every d_k at this scaling."
    )
    return row(hist.svg(), weights_panel.svg()) + legend + bars + _caption(caption)


def _nice_step(x_max: float) -> float:
    """A round tick step that fits about twice into x_max."""
    raw = x_max / 2.2
    power = 10 ** math.floor(math.log10(raw))
    return max(m * power for m in (1, 2, 5) if m * power <= raw)


def _bars(items: list[tuple[str, float, float, str]], title: str) -> str:
    """Horizontal bars with their numbers: (name, value, full-scale value, note)."""
    colours = ("#56B4E9", _GREEN, "#CC79A7")
    rows = []
    for (name, value, full, note), colour in zip(items, colours, strict=True):
        width = max(0.0, min(1.0, value / full)) * 100
        rows.append(
            '<div style="display:flex;align-items:center;gap:8px;flex-wrap:wrap">'
            f'<span style="min-width:19em">{html.escape(name)}: <b>{value:.3f}</b></span>'
            '<span style="display:inline-block;width:160px;height:12px;background:#e6e6e6">'
            f'<span style="display:block;width:{width:.1f}%;height:12px;background:{colour}">'
            f'</span></span><span style="color:{MUTED}">{html.escape(note)}</span></div>'
        )
    return (
        f'<div style="font-size:13px;color:{INK};margin-top:6px">'
        f"<div>{html.escape(title)}:</div>{''.join(rows)}</div>"
    )


def _caption(text: str) -> str:
    return f'<div style="font-size:13px;color:{MUTED};margin-top:4px">{html.escape(text)}</div>'


def saturation_explorer(
    d_ks=(4, 16, 64, 256, 1024),
    scalings=("none", "1/√d_k"),
    Ts=(8, 64, 512),
    initial: dict | None = None,
):
    """The chapter's explorer over d_k (log steps), the scaling and T: 30 frames by default."""
    d_ks = list(d_ks)

    def frame(d_k: int, scaling: str, T: int) -> str:
        # One axis per scaling, 4.5 standard deviations of its widest frame: unscaled scores
        # widen with d_k on it, and scaled ones do not shrink to a sliver on the unscaled axis.
        widest = max(score_scale(d, scaling) * math.sqrt(d) for d in d_ks)
        return saturation_html(d_k, scaling, T, x_max=4.5 * widest)

    return Explorer(
        frame,
        {"d_k": d_ks, "scaling": list(scalings), "T": list(Ts)},
        kind="html",
        labels={"d_k": "d_k", "scaling": "scaling", "T": "T (keys)"},
        initial=initial
        or {
            "d_k": 64 if 64 in d_ks else d_ks[0],
            "scaling": scalings[0],
            "T": 64 if 64 in Ts else Ts[0],
        },
        title="Softmax saturation: random q, k with unit-variance entries",
    )

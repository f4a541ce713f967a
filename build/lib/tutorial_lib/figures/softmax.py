"""The saturation explorer of chapter Q2: scores, one query's weights, and how peaked softmax is.

Dimension letters as in :mod:`tutorial_lib.softmax`: T keys, d_k the width of q and k.

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

from __future__ import annotations

import math

import torch
from matplotlib.patches import Rectangle
from matplotlib.ticker import NullLocator, StrMethodFormatter

from ..softmax import MAX_JACOBIAN_NORM, random_dot_products, score_scale, sharpness
from ..training import one_thread
from .explorer import Explorer

__all__ = ["draw_saturation", "saturation_explorer"]


def draw_saturation(fig, d_k: int, scaling: str, T: int, n_query: int = 64, seed: int = 0):
    """The saturation explorer's frame: scores, one query's weights, and three medians.

    Left: histogram of the n_query x T scores, with the band of +-3 standard
    deviations (the range popular explanations quote) and the mean of each row's
    largest score. Middle: the weights of one typical query, sorted. Right:
    entropy / log T, the largest weight and ||J||_F / 1/2, medians over queries.
    The x-axis of the scores is fixed per d_k, so toggling the scaling shows the
    same scores shrink. Medians describe a typical query: when the scores are
    spread wide, a few near-ties keep the mean Jacobian norm up while most rows
    pass almost nothing.
    """
    scale = score_scale(d_k, scaling)
    std = scale * math.sqrt(d_k)  # the scores' standard deviation in theory
    with one_thread():
        scores = scale * random_dot_products(d_k, T, n_query, seed)  # (n_query, T)
        weights = torch.softmax(scores, dim=-1)  # (n_query, T)
        stats = {name: value.median().item() for name, value in sharpness(scores).items()}
        counts = torch.histc(scores, bins=41, min=-4.5 * std, max=4.5 * std)
        row_max = scores.max(dim=-1).values.mean().item()
        order = weights.max(dim=-1).values.argsort()
        # One typical query: the row whose largest weight is the median over rows.
        row = weights[order[len(order) // 2]].sort(descending=True).values  # (T,)

    art = getattr(fig, "_saturation_artists", None)
    if art is None or art["scores"].axes not in fig.axes:
        art = fig._saturation_artists = _saturation_layout(fig)
    ax_scores, ax_weights = art["scores"].axes, art["weights"].axes

    # Scores: one stairs artist is far cheaper to draw than a bar per bin.
    limit = 4.5 * math.sqrt(d_k)  # fixed per d_k: scaled scores shrink visibly
    edges = torch.linspace(-4.5 * std, 4.5 * std, 42)
    art["scores"].set_data(counts.numpy(), edges.numpy())
    art["band"].remove()
    art["band"] = ax_scores.axvspan(-3 * std, 3 * std, color="#E69F00", alpha=0.2, lw=0)
    art["row_max"].set_xdata([row_max, row_max])
    ax_scores.set_xlim(-limit, limit)
    ax_scores.set_ylim(0, 1.05 * max(counts.max().item(), 1.0))
    ax_scores.set_xticks([-4 * round(limit / 4.5), 0, 4 * round(limit / 4.5)])
    ax_scores.set_title(
        f"scores × {scale:.3g}: std {std:.3g}, ±3 std shaded;\n"
        f"dotted: mean largest score of a row, {row_max:.3g}",
        fontsize=8,
    )

    art["weights"].set_data(range(1, T + 1), row.numpy())
    art["uniform"].set_ydata([1 / T, 1 / T])
    ax_weights.set_xticks(sorted({t for t in (1, 10, 100) if t < T} | {T}), minor=False)
    ax_weights.set_xlim(0.8, T * 1.25)

    values = (
        stats["entropy_fraction"],
        stats["max_weight"],
        stats["jacobian_norm"] / MAX_JACOBIAN_NORM,
    )
    for (label, bar), name, value in zip(art["bars"], BAR_NAMES, values, strict=True):
        label.set_text(f"{name}: {value:.2f}")
        bar.set_width(BAR_WIDTH * value)
    art["n_query"].set_text(f"median of {n_query} queries")
    return ax_scores, ax_weights


BAR_NAMES = ("entropy / log T", "largest weight", "‖J‖_F / ½ (gradient)")
BAR_X, BAR_WIDTH = 0.75, 0.21


def _saturation_layout(fig) -> dict:
    """Axes and artists of a saturation frame, made once per figure and then updated.

    Creating axes, ticks and texts costs more than drawing them, so a kept figure
    only updates its artists' data between frames.
    """
    fig.subplots_adjust(left=0.03, right=0.72, bottom=0.1, top=0.82, wspace=0.12)
    ax_scores, ax_weights = fig.subplots(1, 2, gridspec_kw={"width_ratios": [5, 4]})
    art = {
        "scores": ax_scores.stairs([0.0], [0.0, 1.0], fill=True, color="#0072B2", alpha=0.8),
        "band": ax_scores.axvspan(-1, 1, color="#E69F00", alpha=0.2, lw=0),
        "row_max": ax_scores.axvline(0, color="#D55E00", linestyle=":", lw=1.5),
    }
    ax_scores.set_yticks([])
    (art["weights"],) = ax_weights.step([1], [0], where="mid", color="#009E73", lw=1.5)
    art["uniform"] = ax_weights.axhline(1, color="grey", linestyle=":", lw=1)
    ax_weights.set_xscale("log")
    ax_weights.xaxis.set_minor_locator(NullLocator())
    ax_weights.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax_weights.set_ylim(0, 1.02)
    ax_weights.set_yticks([0, 0.5, 1])
    ax_weights.set_title("one query's weights by rank;\ndotted: uniform, 1/T", fontsize=8)
    # The averages as bars drawn straight on the figure: a third axes would cost more
    # than the rest of the frame.
    colours = ("#56B4E9", "#009E73", "#CC79A7")
    art["bars"] = []
    for i, colour in enumerate(colours):
        y = 0.6 - 0.2 * i
        label = fig.text(BAR_X, y + 0.06, "", fontsize=8, va="bottom")
        fig.add_artist(
            Rectangle((BAR_X, y), BAR_WIDTH, 0.05, color="#e6e6e6", transform=fig.transFigure)
        )
        bar = fig.add_artist(
            Rectangle((BAR_X, y), 0.0, 0.05, color=colour, transform=fig.transFigure)
        )
        art["bars"].append((label, bar))
    for ax in (ax_scores, ax_weights):
        ax.tick_params(labelsize=7, pad=1)
    art["n_query"] = fig.text(BAR_X, 0.86, "", fontsize=8)
    return art


def saturation_explorer(
    d_ks=(4, 16, 64, 256, 1024),
    scalings=("none", "1/√d_k"),
    Ts=(8, 64, 512),
    initial: dict | None = None,
):
    """The chapter's explorer over d_k (log steps), the scaling and T: 30 frames by default."""
    return Explorer(
        draw_saturation,
        {"d_k": list(d_ks), "scaling": list(scalings), "T": list(Ts)},
        labels={"d_k": "d_k", "scaling": "scaling", "T": "T (keys)"},
        initial=initial
        or {
            "d_k": 64 if 64 in d_ks else d_ks[0],
            "scaling": scalings[0],
            "T": 64 if 64 in Ts else Ts[0],
        },
        figsize=(8.0, 3.1),
        keep_figure=True,  # draw_saturation updates its artists instead of redrawing the axes
        title="Softmax saturation: random q, k with unit-variance entries",
        alt="Histogram of attention scores, one query's sorted weights, and bars for "
        "entropy, largest weight and softmax Jacobian norm",
    )

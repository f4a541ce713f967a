"""Figures and the explorer of chapter Q3b (relative positions): what each variant adds to the
scores, the length-extrapolation results, T5's learned table, RoPE's rotation and its bound.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).
Chapters import these from :mod:`tutorial_lib.figures.positional` as well.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import positional
from ..labs.extrapolation import EXTRAPOLATION_TASKS, ExtrapolationConfig, summarise
from ..positional import sinusoidal_frequencies
from ..training import one_thread
from .common import HEAD_COLOURS, matrix_png
from .explorer import Explorer
from .svg import Panel, gradient_key, key, row

__all__ = [
    "SCORE_VARIANTS",
    "position_scores_html",
    "position_scores_explorer",
    "rope_decay_bound",
    "variant_style",
    "VARIANT_COLOURS",
    "VARIANT_MARKERS",
    "draw_extrapolation",
    "draw_t5_table",
    "draw_position_profile",
    "draw_rope_pair",
]

# Shaw, ALiBi and ReRoPE as in chapter Q3b's experiment (K = 8, H = 4, w = 8).
SCORE_VARIANTS = ["Shaw (K=8)", "T5 buckets", "ALiBi", "RoPE", "ReRoPE (w=8)", "leaky ReRoPE"]
_MASKED = "#d7d7d7"  # the grey matrix_png gives hidden cells


def _variant_matrix(variant: str, T: int):
    """(title, matrix (T, T), cmap, lo, hi, hidden or None, lines, ylabel) for one variant."""
    from ..positional import (
        alibi_slopes,
        apply_rope,
        relative_position,
        rerope_positions,
        t5_relative_bucket,
    )

    rel = relative_position(T, T)  # (T, T): j - i
    distance = (-rel).numpy()  # i - j
    causal = distance < 0  # future keys: hidden in causal variants
    if variant.startswith("Shaw"):
        m = rel.clamp(-8, 8).numpy().astype(float)
        return ("Shaw: clip(j − i, −8, 8)", m, "RdBu_r", -8.5, 8.5, None,
                [("clipped j − i", m[-1], "#0072B2")], "clipped offset j − i")  # fmt: skip
    if variant.startswith("T5"):
        m = t5_relative_bucket(rel, bidirectional=False).numpy().astype(float)
        return ("T5: bucket of i − j (causal)", m, "viridis", 0, 31, causal,
                [("bucket", m[-1], "#0072B2")], "bucket")  # fmt: skip
    if variant == "ALiBi":
        slopes = alibi_slopes(4).numpy()
        m = -slopes[0] * distance.astype(float)
        lines = [
            (f"head {h + 1}: m = 1/{round(1 / slopes[h])}", -slopes[h] * distance[-1], c)
            for h, c in zip(range(4), HEAD_COLOURS, strict=False)
        ]
        return ("ALiBi, head 1: −(i − j)/4", m, "magma", float(-slopes[0] * (T - 1)), 0.0,
                causal, lines, "bias added to the score")  # fmt: skip
    if variant == "RoPE":
        r = torch.as_tensor(distance, dtype=torch.float64)  # (T, T)
        title, hidden = "RoPE: score / d at distance i − j", None
    else:
        leaky = 4.0 if variant.startswith("leaky") else None
        r = rerope_positions(torch.as_tensor(distance), 8, leaky)  # (T, T)
        title = "leaky ReRoPE (w = 8, slope 1/4)" if leaky else "ReRoPE: distance capped at w = 8"
        hidden = causal
    # <R_r q, q> for q = all ones: rotate once per distinct relative position r.
    unique, where = torch.unique(r, return_inverse=True)
    ones = torch.ones(len(unique), 32, dtype=torch.float64)
    per_r = (apply_rope(ones, unique) * ones).sum(-1) / 32  # (distinct r,)
    m = per_r[where].numpy()  # (T, T)
    return title, m, "RdBu_r", -1.0, 1.0, hidden, [("score / d", m[-1], "#0072B2")], "score / d"


def position_scores_html(variant: str, T: int) -> str:
    """What one variant contributes to the scores of a T x T causal or bidirectional map.

    Left: the matrix over (query i, key j) with its colour key; right: its last row
    against the distance i - j. RoPE panels show the score of one content vector (all
    ones, d = 32) with itself at positions i and j, so only position varies.
    """
    import numpy as np

    if variant not in SCORE_VARIANTS:
        raise ValueError(f"variant must be one of {SCORE_VARIANTS}; got {variant!r}")
    if not isinstance(T, int) or T < 2:
        raise ValueError(f"T must be an integer >= 2 (a map needs two positions); got T={T!r}")
    with one_thread():
        title, m, cmap, lo, hi, hidden, lines, ylabel = _variant_matrix(variant, T)

    ticks = [0, T // 2, T - 1]
    matrix = Panel(
        300, 250, xlim=(-0.5, T - 0.5), ylim=(T - 0.5, -0.5), title=title, xlabel="key j",
        ylabel="query i", margins=(46, 24, 8, 42),
    )  # fmt: skip
    matrix.image(matrix_png(m, cmap, lo, hi, hidden))
    matrix.xticks(ticks)
    matrix.yticks(ticks)

    d_last = np.arange(T - 1, -1, -1)  # distance i - j of the last query to keys 0 .. T-1
    values = np.concatenate([v for _, v, _ in lines])
    y_lo, y_hi = float(values.min()), float(values.max())
    pad = 0.08 * (y_hi - y_lo or 1.0)
    profile = Panel(
        300, 250, xlim=(0, T - 1), ylim=(y_lo - pad, y_hi + pad),
        title=f"last query, i = {T - 1}", xlabel="distance i − j", ylabel=ylabel,
        margins=(52, 24, 8, 42),
    )  # fmt: skip
    for _, v, colour in lines:
        profile.line(d_last, v, colour, 1.6)
    profile.xticks([0, (T - 1) // 2, T - 1])
    profile.yticks(sorted({round(y_lo, 2), round((y_lo + y_hi) / 2, 2), round(y_hi, 2)}))

    items = [(label, colour, "line") for label, _, colour in lines]
    if hidden is not None and hidden.any():
        items.append(("masked future keys (causal)", _MASKED, "box"))
    return (
        row(matrix.svg(), profile.svg())
        + gradient_key(cmap, lo, hi, "matrix colour = value")
        + key(items)
    )


def position_scores_explorer():
    """Chapter Q3b's explorer: what each variant adds to the scores, for T = 16, 64, 256."""
    return Explorer(
        position_scores_html,
        {"variant": SCORE_VARIANTS, "T": [16, 64, 256]},
        kind="html",
        initial={"variant": "T5 buckets", "T": 64},
        title="What each variant does to the score matrix",
    )


def rope_decay_bound(distance: Tensor, d: int = 128, base: float = 10000.0) -> Tensor:
    """RoFormer's long-range bound (Su et al., section 3.4.3): mean_l abs(S_l) per distance.

    S_l = sum_{s<l} exp(1j * distance * theta_s), l = 1 .. d/2. (N,) -> (N,) float64.
    """
    theta = sinusoidal_frequencies(d, base)  # (d/2,)
    phase = distance.to(torch.float64)[:, None] * theta  # (N, d/2)
    partial = torch.polar(torch.ones_like(phase), phase).cumsum(dim=-1)  # (N, d/2): S_1..S_d/2
    return partial.abs().mean(dim=-1)  # (N,)


_NO_POSITIONS, _MARKERS = "#999999", "os^vD<>xP"


def variant_style(name: str) -> tuple[str, str, str]:
    """(label, colour, marker) of a registry variant, derived from its row's place in
    ``tutorial_lib.positional.VARIANTS``: grey for no positions, then the head colours and
    the markers in turn, cycling when the table outgrows them."""
    rows = [row for row in positional.VARIANTS if row.acts != "none"]
    row = positional.variant(name)
    if row.acts == "none":
        return row.label, _NO_POSITIONS, _MARKERS[0]
    i = rows.index(row)
    return row.label, HEAD_COLOURS[i % len(HEAD_COLOURS)], _MARKERS[(i + 1) % len(_MARKERS)]


VARIANT_COLOURS = {row.name: variant_style(row.name)[1] for row in positional.VARIANTS}
VARIANT_MARKERS = {row.name: variant_style(row.name)[2] for row in positional.VARIANTS}


def draw_extrapolation(fig, rows: list[dict], cfg: ExtrapolationConfig) -> None:
    """Accuracy against evaluation length, one panel per task, one line per variant.

    The key sits below the panels, never over the curves. Each variant's points sit a little
    left or right of their length (dodged), so variants that tie at 100% stay visible.
    """
    fig.set_layout_engine("constrained")
    table = summarise(rows)
    axes = fig.subplots(1, len(cfg.tasks), squeeze=False, sharey=True)[0]
    middle = (len(cfg.variants) - 1) / 2
    for ax, task in zip(axes, cfg.tasks, strict=True):
        for n, variant in enumerate(cfg.variants):
            means = [
                100 * sum(table[task, variant, T]) / len(table[task, variant, T])
                for T in cfg.eval_lens
            ]
            label, colour, marker = variant_style(variant)
            # Distinct markers, dodged by up to a tenth of an octave, so that ties stay visible.
            dodged = [T * 2 ** (0.025 * (n - middle)) for T in cfg.eval_lens]
            ax.plot(dodged, means, marker=marker, ms=5, lw=1.2, label=label,
                    color=colour, alpha=0.85, fillstyle="none")  # fmt: skip
        ax.axvline(cfg.train_len, color="grey", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(cfg.eval_lens, [f"{T}" for T in cfg.eval_lens])
        ax.minorticks_off()
        ax.set_xlabel("evaluation length T (dotted: training length)")
        ax.set_title(f"{task}: {EXTRAPOLATION_TASKS[task][2]}")
    axes[0].set_ylabel("accuracy (%)")
    axes[0].set_ylim(0, 103)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 9),
               frameon=False, columnspacing=1.0, handletextpad=0.3)  # fmt: skip


def draw_t5_table(fig, model, train_len: int) -> None:
    """The learned T5 bias of every head per bucket, with the buckets training reached."""
    from ..positional import t5_relative_bucket

    fig.set_layout_engine("constrained")
    bias = model.blocks[0].attention.attention.bias
    table = bias.table.detach()  # (buckets, H)
    reached = t5_relative_bucket(-torch.arange(train_len), bidirectional=False).max().item()
    ax = fig.subplots()
    for h in range(table.shape[1]):
        ax.plot(table[:, h], "o-", ms=3, lw=1, color=HEAD_COLOURS[h], label=f"head {h + 1}")
    ax.axvspan(reached + 0.5, table.shape[0] - 0.5, color="#eee", zorder=0)
    ax.text(reached + 1, 0.97, "never reached in training", va="top",
            transform=ax.get_xaxis_transform())  # fmt: skip
    ax.set_xlabel("bucket (0 = same position; causal, so distance i − j)")
    ax.set_ylabel("learned bias")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over


def draw_position_profile(fig, profile: Tensor, best: int, train_len: int, lag: int) -> None:
    """A score bias per head against the distance i - j, from ``position_part_by_distance``.

    profile: (H, T). The best head is drawn bold, the others faint; distances from
    ``train_len`` on, which training never produced, are shaded.
    """
    fig.set_layout_engine("constrained")
    T = profile.shape[1]
    ax = fig.subplots()
    ax.axvspan(train_len - 0.5, T - 0.5, color="#eee", zorder=0)
    ax.axvline(lag, color="grey", ls=":", lw=1)
    for h in range(profile.shape[0]):
        bold = h == best
        label = f"head {h + 1}" + (" (best)" if bold else "")
        ax.plot(profile[h], lw=1.6 if bold else 0.8, alpha=1.0 if bold else 0.45,
                color=HEAD_COLOURS[h], label=label)  # fmt: skip
    ax.text(train_len + 1, 0.97, "distances never seen\nin training", va="top",
            transform=ax.get_xaxis_transform())  # fmt: skip
    ax.set_xlim(-0.5, T - 0.5)
    ax.set_xlabel(f"distance i − j (dotted: {lag}, the key the task needs)")
    ax.set_ylabel("mean position part of the score")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over


def draw_rope_pair(fig, theta: float = 0.5) -> None:
    """One 2-D pair: q and k rotated by their positions; equal offsets give equal angles."""
    import numpy as np
    from matplotlib.patches import Circle

    fig.set_layout_engine("constrained")
    q, k = np.array([1.0, 0.25]), np.array([0.55, 0.8])

    def rot(v, p):
        c, s = np.cos(p * theta), np.sin(p * theta)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    axes = fig.subplots(1, 2)
    for ax, (m, n) in zip(axes, [(1, 3), (4, 6)], strict=True):
        for v, p, name, colour in ((q, m, "q", "#0072B2"), (k, n, "k", "#D55E00")):
            ax.annotate("", rot(v, p), (0, 0), arrowprops={"arrowstyle": "->", "color": colour})
            faint = {"arrowstyle": "->", "color": colour, "alpha": 0.3, "ls": "--"}
            ax.annotate("", v, (0, 0), arrowprops=faint)  # before rotation, labelled plainly
            ax.text(*(v * 1.14), name, color=colour, alpha=0.5, ha="center", va="center")
            ax.text(*(rot(v, p) * 1.14), f"R{_sub(p)}{name}", color=colour, ha="center",
                    va="center")  # fmt: skip
        score = rot(q, m) @ rot(k, n)
        ax.set_title(f"m = {m}, n = {n}: score {score:.3f}")
        ax.add_patch(Circle((0, 0), 1.1, fill=False, color="#ddd"))
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_aspect("equal")
        ax.set_xlabel("dimension 2l")
    axes[0].set_ylabel("dimension 2l + 1")


def _sub(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))

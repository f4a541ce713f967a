"""Figures and explorers for chapters Q3a and Q3b (positions).

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).

The explorers draw HTML frames (small SVG plots around PNG heatmaps) rather than
matplotlib figures: a frame then redraws in a few milliseconds, where clearing
and redrawing a three-panel matplotlib figure costs about 100 ms. Static figures
are plain matplotlib drawing functions that take a ``fig`` and never call ``pyplot``.
"""

from __future__ import annotations

import base64
import html
import io
import math

import torch
from torch import Tensor

from ..labs.extrapolation import (
    EXTRAPOLATION_TASKS,
    VARIANTS,
    ExtrapolationConfig,
    PositionModel,
    summarise,
)
from ..positional import sinusoidal_encoding, sinusoidal_frequencies
from ..training import one_thread
from .common import HEAD_COLOURS
from .explorer import Explorer

__all__ = [
    "sinusoidal_explorer_html",
    "sinusoidal_explorer",
    "SCORE_VARIANTS",
    "position_scores_html",
    "position_scores_explorer",
    "rope_decay_bound",
    "draw_extrapolation",
    "draw_t5_table",
    "draw_position_profile",
    "draw_rope_pair",
]


def _png(rgba) -> str:
    """uint8 array (rows, cols, 4), opaque -> a data: URL holding it as a palette PNG."""
    from PIL import Image

    buffer = io.BytesIO()
    # A 32-colour palette image: a quarter of the bytes of RGBA, and no visible difference
    # for heatmaps drawn with at most a few dozen colour levels.
    image = Image.fromarray(rgba[..., :3], "RGB").quantize(32, method=Image.Quantize.FASTOCTREE)
    image.save(buffer, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _tick(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e4 else f"{v:.0e}".replace("e+0", "e")


def _svg_panel(title, xlabel, ylabel, xlim, ylim, xticks, yticks, draw, logy=False) -> str:
    """One small SVG plot (230 x 190 px): axes, ticks, labels, and whatever ``draw`` returns.

    ``draw(x, y, box)`` gets the data-to-pixel maps and the plot box (left, top, w, h).
    Hand-written SVG because a frame must redraw in a few ms; matplotlib needs ~100 ms.
    """
    W, H, left, top, right, bottom = 230, 190, 46, 22, 10, 36
    pw, ph = W - left - right, H - top - bottom
    f = math.log10 if logy else (lambda v: v)
    y0, y1 = f(ylim[0]), f(ylim[1])

    def x(v):
        return left + (v - xlim[0]) / (xlim[1] - xlim[0]) * pw

    def y(v):
        return top + ph - (f(v) - y0) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="9" fill="#111">',
        draw(x, y, (left, top, pw, ph)),
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>',
        f'<text x="{left + pw / 2}" y="12" text-anchor="middle" font-size="10">'
        f"{html.escape(title)}</text>",
        f'<text x="{left + pw / 2}" y="{H - 4}" text-anchor="middle">{html.escape(xlabel)}</text>',
        f'<text transform="translate(10 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
        f"{html.escape(ylabel)}</text>",
    ]
    for v in xticks:
        out.append(
            f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top + ph}" y2="{top + ph + 3}" '
            f'stroke="#333"/><text x="{x(v):.1f}" y="{top + ph + 12}" '
            f'text-anchor="middle">{_tick(v)}</text>'
        )
    for v in yticks:
        out.append(
            f'<line x1="{left - 3}" x2="{left}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#333"/>'
            f'<text x="{left - 5}" y="{y(v) + 3:.1f}" text-anchor="end">{_tick(v)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _polyline(xs, ys, x, y, colour, width=1.2) -> str:
    # Whole pixels: a 180-pixel panel cannot show more, and the frames stay small.
    points = " ".join(f"{x(a):.0f},{y(b):.0f}" for a, b in zip(xs, ys, strict=True))
    return f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="{width}"/>'


def sinusoidal_explorer_html(max_len: int, d_model: int, base: float) -> str:
    """Three SVG panels: PE as a heatmap, cos(PE[p], PE[q]) for the middle p, each wavelength."""
    import numpy as np
    from matplotlib import colormaps

    with one_thread():  # a small tensor: extra threads would only wait on each other
        pe = sinusoidal_encoding(max_len, d_model, base).double().numpy()  # (T, D)
    p = max_len // 2
    similarity = pe @ pe[p] / (d_model / 2)  # cosine similarity: every row has norm sqrt(D/2)
    wavelength = 2 * math.pi / sinusoidal_frequencies(d_model, base).numpy()  # (D/2,)
    ratio = base ** (2 / d_model)

    # At most 96 x 96 cells, nearest-neighbour, about what a 180-pixel panel shows anyway;
    # 21 colour levels (steps of 0.1) keep the PNG small.
    rows = np.linspace(0, max_len - 1, min(max_len, 96)).round().astype(int)
    cols = np.linspace(0, d_model - 1, min(d_model, 96)).round().astype(int)
    levels = np.round(pe[np.ix_(rows, cols)] * 10) / 10  # (<=128, <=128)
    rgba = (colormaps["RdBu_r"]((levels + 1) / 2) * 255).astype(np.uint8)
    image = _png(rgba)

    def heatmap(x, y, box):
        left, top, pw, ph = box
        return (
            f'<image x="{left}" y="{top}" width="{pw}" height="{ph}" href="{image}" '
            'preserveAspectRatio="none" style="image-rendering:pixelated"/>'
        )

    def similarity_plot(x, y, box):
        return (
            f'<line x1="{x(p):.1f}" x2="{x(p):.1f}" y1="{y(1.05):.1f}" y2="{y(-0.45):.1f}" '
            'stroke="#888" stroke-dasharray="2,2"/>'
            f'<line x1="{x(0)}" x2="{x(max_len - 1)}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
            'stroke="#ccc"/>' + _polyline(range(max_len), similarity, x, y, "#0072B2", 1.0)
        )

    def wavelength_plot(x, y, box):
        # One path of zero-length round-capped strokes: a dot per pair, in few bytes.
        moves = "".join(f"M{x(i):.0f} {y(w):.0f}h0" for i, w in enumerate(wavelength))
        dots = f'<path d="{moves}" stroke="#D55E00" stroke-width="3.6" stroke-linecap="round"/>'
        return (
            f'<line x1="{x(0)}" x2="{x(d_model // 2 - 1)}" y1="{y(max_len):.1f}" '
            f'y2="{y(max_len):.1f}" stroke="#888" stroke-dasharray="4,2"/>'
            f'<text x="{x(0) + 2:.1f}" y="{y(max_len) - 3:.1f}" fill="#555">max_len</text>' + dots
        )

    last = d_model // 2 - 1
    panels = [
        _svg_panel(
            "PE (red +1, blue -1)", "dimension", "position p", (0, d_model), (max_len, 0),
            [0, d_model // 2, d_model], [0, max_len // 2, max_len], heatmap,
        ),
        _svg_panel(
            f"similarity to position {p}", "position q", f"cos(PE[{p}], PE[q])",
            (0, max_len - 1), (-0.45, 1.05), [0, p, max_len - 1], [0, 0.5, 1], similarity_plot,
        ),
        _svg_panel(
            f"each pair x{ratio:.3f} longer", "pair i (dims 2i, 2i+1)", "wavelength",
            (-0.5, last + 0.5), (1, 1e7), [0, last // 2, last], [10, 1e3, 1e5, 1e7],
            wavelength_plot, logy=True,
        ),
    ]  # fmt: skip
    slow = int((wavelength > max_len).sum())
    caption = (
        f"D = {d_model}: {d_model // 2} pairs, wavelengths {wavelength[0]:.2f} to "
        f"{wavelength[-1]:.3g} positions; {slow} of them longer than max_len = {max_len}."
    )
    return (
        '<div style="display:flex;flex-wrap:wrap;gap:2px">' + "".join(panels) + "</div>"
        f'<div style="font-size:0.8em">{html.escape(caption)}</div>'
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


def _matrix_png(values, cmap: str, vmin: float, vmax: float, hidden=None) -> str:
    """A (rows, cols) array as a PNG data URL, at most 128 x 128 cells; hidden cells grey."""
    import numpy as np
    from matplotlib import colormaps

    rows = np.linspace(0, values.shape[0] - 1, min(values.shape[0], 128)).round().astype(int)
    cols = np.linspace(0, values.shape[1] - 1, min(values.shape[1], 128)).round().astype(int)
    v = (values[np.ix_(rows, cols)] - vmin) / max(vmax - vmin, 1e-12)
    rgba = (colormaps[cmap](np.clip(v, 0, 1)) * 255).astype(np.uint8)
    if hidden is not None:
        rgba[hidden[np.ix_(rows, cols)]] = (225, 225, 225, 255)
    return _png(rgba)


# Shaw, ALiBi and ReRoPE as in chapter Q3b's experiment (K = 8, H = 4, w = 8).
SCORE_VARIANTS = ["Shaw (K=8)", "T5 buckets", "ALiBi", "RoPE", "ReRoPE (w=8)", "leaky ReRoPE"]


def position_scores_html(variant: str, T: int) -> str:
    """What one variant contributes to the scores of a T x T causal or bidirectional map.

    Left: the matrix over (query i, key j); right: its last row against the distance i - j.
    RoPE panels show the score of one content vector (all ones, d = 32) with itself at
    positions i and j, so only position varies.
    """
    import numpy as np

    from ..positional import (
        alibi_slopes,
        apply_rope,
        relative_position,
        rerope_positions,
        t5_relative_bucket,
    )

    with one_thread():
        rel = relative_position(T, T)  # (T, T): j - i
        distance = (-rel).numpy()  # i - j
        causal = distance < 0  # future keys: hidden in causal variants
        lines = []  # (label, values over the last row, colour)
        if variant.startswith("Shaw"):
            m = rel.clamp(-8, 8).numpy().astype(float)
            title, cmap, lo, hi, hidden = "clip(j - i, -8, 8)", "RdBu_r", -8.5, 8.5, None
            lines.append(("clipped j - i", m[-1], "#0072B2"))
            ylab = "index into a^K, a^V"
        elif variant.startswith("T5"):
            m = t5_relative_bucket(rel, bidirectional=False).numpy().astype(float)
            title, cmap, lo, hi, hidden = "bucket (causal, 32 buckets)", "viridis", 0, 31, causal
            lines.append(("bucket", m[-1], "#0072B2"))
            ylab = "bucket"
        elif variant == "ALiBi":
            slopes = alibi_slopes(4).numpy()
            m = -slopes[0] * distance.astype(float)
            lo = float(-slopes[0] * (T - 1))
            title, cmap, hi, hidden = "head 1: -1/4 (i - j)", "magma", 0.0, causal
            for h in range(4):
                row = -slopes[h] * distance[-1].astype(float)
                lines.append((f"head {h + 1}: m=1/{round(1 / slopes[h])}", row, HEAD_COLOURS[h]))
            ylab = "bias added to scores"
        else:
            if variant == "RoPE":
                r = torch.as_tensor(distance, dtype=torch.float64)  # (T, T)
                title, hidden = "score / d, content fixed", None
            else:
                leaky = 4.0 if variant.startswith("leaky") else None
                r = rerope_positions(torch.as_tensor(distance), 8, leaky)  # (T, T)
                title, hidden = "score / d, ReRoPE positions", causal
            # <R_r q, q> for q = all ones: rotate once per distinct relative position r.
            unique, where = torch.unique(r, return_inverse=True)
            ones = torch.ones(len(unique), 32, dtype=torch.float64)
            per_r = (apply_rope(ones, unique) * ones).sum(-1) / 32  # (distinct r,)
            m = per_r[where].numpy()  # (T, T)
            cmap, lo, hi = "RdBu_r", -1.0, 1.0
            lines.append(("score / d", m[-1], "#0072B2"))
            ylab = "score / d"
    image = _matrix_png(m, cmap, lo, hi, hidden)

    def heatmap(x, y, box):
        left, top, pw, ph = box
        return (
            f'<image x="{left}" y="{top}" width="{pw}" height="{ph}" href="{image}" '
            'preserveAspectRatio="none" style="image-rendering:pixelated"/>'
        )

    d_last = distance[-1]  # (T,): T-1 .. 0
    values = np.concatenate([v for _, v, _ in lines])
    y_lo, y_hi = float(values.min()), float(values.max())
    pad = 0.08 * (y_hi - y_lo or 1.0)

    def profile(x, y, box):
        out = "".join(_polyline(d_last, v, x, y, c) for _, v, c in lines)
        for n, (label, _, c) in enumerate(lines):
            out += (
                f'<text x="{box[0] + box[2] - 4}" y="{box[1] + 11 + 11 * n}" fill="{c}" '
                f'text-anchor="end">{html.escape(label)}</text>'
            )
        return out

    ticks = [0, T // 2, T]
    panels = [
        _svg_panel(title, "key j", "query i", (0, T), (T, 0), ticks, ticks, heatmap),
        _svg_panel(
            f"last query (i = {T - 1})", "distance i - j", ylab, (0, T - 1),
            (y_lo - pad, y_hi + pad), [0, (T - 1) // 2, T - 1],
            sorted({round(y_lo, 2), round((y_lo + y_hi) / 2, 2), round(y_hi, 2)}), profile,
        ),
    ]  # fmt: skip
    return '<div style="display:flex;flex-wrap:wrap;gap:2px">' + "".join(panels) + "</div>"


def position_scores_explorer():
    """Chapter Q3b's explorer: what each variant adds to the scores, for T = 16, 64, 256."""
    return Explorer(
        position_scores_html,
        {"variant": SCORE_VARIANTS, "T": [16, 64, 256]},
        kind="html",
        initial={"variant": "T5 buckets", "T": 64},
        title="What each variant does to the score matrix (grey: masked future keys)",
    )


def rope_decay_bound(distance: Tensor, d: int = 128, base: float = 10000.0) -> Tensor:
    """RoFormer's long-range bound (Su et al., section 3.4.3): mean_l abs(S_l) per distance.

    S_l = sum_{s<l} exp(1j * distance * theta_s), l = 1 .. d/2. (N,) -> (N,) float64.
    """
    theta = sinusoidal_frequencies(d, base)  # (d/2,)
    phase = distance.to(torch.float64)[:, None] * theta  # (N, d/2)
    partial = torch.polar(torch.ones_like(phase), phase).cumsum(dim=-1)  # (N, d/2): S_1..S_d/2
    return partial.abs().mean(dim=-1)  # (N,)


# ---------------------------------------------------------------------------------------
# Q3b: static figures
# ---------------------------------------------------------------------------------------

VARIANT_COLOURS = dict(zip(VARIANTS, ["#999999", *HEAD_COLOURS], strict=True))
VARIANT_MARKERS = dict(zip(VARIANTS, "os^vD<>xP", strict=True))


def draw_extrapolation(fig, rows: list[dict], cfg: ExtrapolationConfig) -> None:
    """Accuracy against evaluation length, one panel per task, one line per variant."""
    table = summarise(rows)
    axes = fig.subplots(1, len(cfg.tasks), squeeze=False, sharey=True)[0]
    for ax, task in zip(axes, cfg.tasks, strict=True):
        for variant in cfg.variants:
            means = [
                100 * sum(table[task, variant, T]) / len(table[task, variant, T])
                for T in cfg.eval_lens
            ]
            colour, marker = VARIANT_COLOURS[variant], VARIANT_MARKERS[variant]
            # Distinct markers, because several variants overlap at 100%.
            ax.plot(cfg.eval_lens, means, marker=marker, ms=4, lw=1.2, label=variant,
                    color=colour, alpha=0.85, fillstyle="none")  # fmt: skip
        ax.axvline(cfg.train_len, color="grey", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(cfg.eval_lens, [f"{T}" for T in cfg.eval_lens])
        ax.set_xlabel("evaluation length T (trained at the dotted line)", fontsize=8)
        ax.set_title(f"{task}: {EXTRAPOLATION_TASKS[task][2]}", fontsize=9)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("accuracy (%)", fontsize=8)
    axes[0].set_ylim(0, 103)
    axes[-1].legend(fontsize=7, loc="lower left", ncol=2, frameon=False)


def draw_t5_table(fig, model: PositionModel, train_len: int) -> None:
    """The learned T5 bias of every head per bucket, with the buckets training reached."""
    from ..positional import t5_relative_bucket

    bias = model.blocks[0].attention.attention.bias
    table = bias.table.detach()  # (buckets, H)
    reached = t5_relative_bucket(-torch.arange(train_len), bidirectional=False).max().item()
    ax = fig.subplots()
    for h in range(table.shape[1]):
        ax.plot(table[:, h], "o-", ms=3, lw=1, color=HEAD_COLOURS[h], label=f"head {h + 1}")
    ax.axvspan(reached + 0.5, table.shape[0] - 0.5, color="#eee", zorder=0)
    ax.text(reached + 1, ax.get_ylim()[1] * 0.9, "never reached in training", fontsize=8)
    ax.set_xlabel("bucket (0 = same position; causal, so distance i - j)", fontsize=8)
    ax.set_ylabel("learned bias", fontsize=8)
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.32, 1.0))
    ax.tick_params(labelsize=7)


def draw_position_profile(fig, profile: Tensor, best: int, train_len: int, lag: int) -> None:
    """A score bias per head against the distance i - j, from ``position_part_by_distance``.

    profile: (H, T). The best head is drawn bold, the others faint; distances from
    ``train_len`` on, which training never produced, are shaded.
    """
    T = profile.shape[1]
    ax = fig.subplots()
    ax.axvspan(train_len - 0.5, T - 0.5, color="#eee", zorder=0)
    ax.axvline(lag, color="grey", ls=":", lw=1)
    for h in range(profile.shape[0]):
        bold = h == best
        label = f"head {h + 1}" + (" (best)" if bold else "")
        ax.plot(profile[h], lw=1.6 if bold else 0.8, alpha=1.0 if bold else 0.45,
                color=HEAD_COLOURS[h], label=label)  # fmt: skip
    ax.text(train_len + 1, ax.get_ylim()[1] * 0.92, "distances never seen in training", fontsize=8)
    ax.set_xlim(-0.5, T - 0.5)
    ax.set_xlabel(f"distance i - j (dotted: {lag}, the key the task needs)", fontsize=8)
    ax.set_ylabel("mean position part of the score", fontsize=8)
    ax.legend(fontsize=7, frameon=False, loc="lower left")
    ax.tick_params(labelsize=7)


def draw_rope_pair(fig, theta: float = 0.5) -> None:
    """One 2-D pair: q and k rotated by their positions; equal offsets give equal angles."""
    import numpy as np
    from matplotlib.patches import Circle

    q, k = np.array([1.0, 0.25]), np.array([0.55, 0.8])

    def rot(v, p):
        c, s = np.cos(p * theta), np.sin(p * theta)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    axes = fig.subplots(1, 2)
    for ax, (m, n) in zip(axes, [(1, 3), (4, 6)], strict=True):
        for v, p, name, colour in ((q, m, "q", "#0072B2"), (k, n, "k", "#D55E00")):
            ax.annotate("", rot(v, p), (0, 0), arrowprops={"arrowstyle": "->", "color": colour})
            faint = {"arrowstyle": "->", "color": colour, "alpha": 0.3, "ls": "--"}
            ax.annotate("", v, (0, 0), arrowprops=faint)  # before rotation
            ax.text(*(rot(v, p) * 1.12), f"R_{p} {name}", color=colour, fontsize=8, ha="center")
        score = rot(q, m) @ rot(k, n)
        ax.set_title(f"m={m}, n={n}: score {score:.3f}", fontsize=9)
        ax.add_patch(Circle((0, 0), 1.1, fill=False, color="#ddd"))
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
        ax.set_aspect("equal")
        ax.set_xlabel("dimension 2i", fontsize=8)
        ax.set_ylabel("dimension 2i+1", fontsize=8)
        ax.tick_params(labelsize=7)

"""Figures for attention (chapter Q1): the multi-head shape trace and attention heatmaps.

Dimension letters as in :mod:`tutorial_lib.attention` (B, T, D, H, d_k, d_v).
"""

from __future__ import annotations

import functools
import html
from dataclasses import dataclass

import torch
from torch import Tensor

from ..attention import MultiHeadAttention
from .common import HEAD_COLOURS
from .trace import letters_of, trace_tensors

__all__ = [
    "ShapeStep",
    "multihead_shape_trace",
    "shape_trace_html",
    "draw_attention_maps",
    "draw_offset_shares",
]

# Probe sizes: a distinct prime per letter, so every size in a traced shape names its letter.
_PROBE = {"B": 2, "T": 3, "H": 5, "d_k": 7, "D": 11, "d_v": 13}


@dataclass(frozen=True)
class ShapeStep:
    step: str  # the numbered step of MultiHeadAttention that made the tensor
    code: str  # the line of tutorial_lib.attention that made it
    op: str  # the operation on that line that returned it
    shape: tuple[int, ...]  # its measured shape
    letters: str  # the shape in the book's letters, read from a probe run
    contiguous: bool  # whether its memory is laid out in shape order


def multihead_shape_trace(mha: MultiHeadAttention, x: Tensor) -> tuple[list[ShapeStep], Tensor]:
    """Run ``mha(x, x, x)`` on x (B, T, D) and record every tensor it makes, step by step.

    Nothing is restated: the real ``forward`` runs under a tracer
    (:func:`tutorial_lib.figures.trace.trace_tensors`), so the output equals
    ``mha(x, x, x)[0]``. Letters come from a second run at probe sizes.
    """
    (out, _), traced = trace_tensors(mha, x, x, x)
    probe = _probe_trace()
    if [t.op for t in probe] != [t.op for t in traced]:
        raise RuntimeError("the probe run took another path than the traced one")
    steps = [
        ShapeStep(t.step, t.code, t.op, t.shape, letters_of(p.shape, _PROBE), t.contiguous)
        for t, p in zip(traced, probe, strict=True)
    ]
    return steps, out


@functools.cache
def _probe_trace() -> list:
    """The same call at probe sizes (d_v differs from d_k there, so v's axes read d_v)."""
    p = _PROBE
    with torch.device("meta"):
        mha = MultiHeadAttention(p["H"], p["D"], p["d_k"], p["d_v"], dropout=0.0).eval()
        x = torch.zeros(p["B"], p["T"], p["D"])
        return trace_tensors(mha, x, x, x)[1]


def _head_bar(step: ShapeStep, H: int) -> str:
    """A small bar for the last axis, coloured by head where the axis holds heads."""
    width = 180
    if "H·" in step.letters.rsplit(",", 1)[-1]:
        cells = "".join(
            f'<span style="display:inline-block;width:{width / H:.1f}px;height:10px;'
            f'background:{HEAD_COLOURS[h % len(HEAD_COLOURS)]}"></span>'
            for h in range(H)
        )
        return f'<span title="{H} heads side by side">{cells}</span>'
    if "H," in step.letters:
        return f'<span style="font-size:0.85em">no: the {H} heads have their own axis</span>'
    return '<span style="font-size:0.85em">no</span>'


def shape_trace_html(B: int, T: int, d_model: int, n_head: int) -> str:
    """An HTML table of every tensor one multi-head self-attention call makes.

    d_k = d_v = d_model // n_head, as in the paper. Shapes are measured by running
    ``MultiHeadAttention.forward`` on the meta device (shapes, no numbers), not typed.
    """
    if d_model % n_head:
        return (
            f"<p>d_model = {d_model} is not divisible by n_head = {n_head}, so the paper's "
            "choice d_k = d_model / n_head is not a whole number.</p>"
        )
    d_k = d_model // n_head
    with torch.device("meta"):
        mha = MultiHeadAttention(n_head, d_model, d_k, d_k, dropout=0.0).eval()
        steps, _ = multihead_shape_trace(mha, torch.zeros(B, T, d_model))
    rows = []
    for i, s in enumerate(steps):
        numel = 1
        for n in s.shape:
            numel *= n
        step = s.step if i == 0 or steps[i - 1].step != s.step else ""
        rows.append(
            "<tr>"
            f"<td>{html.escape(step)}</td>"
            f"<td><code>{html.escape(s.code.split('  #')[0])}</code></td>"
            f"<td><code>{html.escape(s.op)}</code></td>"
            f"<td><code>{html.escape(s.letters)}</code></td>"
            f"<td><code>{tuple(s.shape)}</code></td>"
            f"<td style='text-align:right'>{numel:,}</td>"
            f"<td>{'yes' if s.contiguous else '<b>no</b>'}</td>"
            f"<td>{_head_bar(s, n_head)}</td>"
            "</tr>"
        )
    head = (
        "<tr><th>step</th><th>line of MultiHeadAttention</th><th>operation</th><th>letters</th>"
        "<th>shape</th><th>elements</th><th>contiguous</th><th>heads on the last axis?</th></tr>"
    )
    caption = (
        f"B={B}, T={T}, D=d_model={d_model}, H=n_head={n_head}, so d_k=d_v={d_k}. "
        f"The attention weights hold {n_head}·B·T² = {n_head * B * T * T:,} numbers."
    )
    return (
        '<table class="shape-trace" style="font-size:0.85em;border-collapse:collapse">'
        f"<caption style='caption-side:top;text-align:left'>{caption}</caption>"
        f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def draw_attention_maps(fig, weights: Tensor, titles: list[str], tokens: list[str] | None = None):
    """One heatmap per map in ``weights`` (n, T_q, T_k), side by side, sharing a colour scale."""
    weights = weights.detach().cpu()
    n = weights.shape[0]
    axes = fig.subplots(1, n, squeeze=False)[0]
    image = None
    for ax, w, title in zip(axes, weights, titles, strict=True):
        image = ax.imshow(w.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key position j", fontsize=8)
        ax.set_ylabel("query position i", fontsize=8)
        if tokens is not None:
            ax.set_xticks(range(len(tokens)), tokens, fontsize=7)
            ax.set_yticks(range(len(tokens)), tokens, fontsize=7)
        else:
            ax.tick_params(labelsize=7)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="attention weight")
    return axes


def draw_offset_shares(
    fig,
    two_heads: Tensor,
    one_head: dict[str, Tensor],
    commitment: Tensor,
    accuracy: Tensor,
):
    """How heads split "one step back" and "two steps back", token by token (chapter Q1).

    A share is w(t-1) / (w(t-1) + w(t-2)) for one query t: 1 = only one step back.
    Top left: ``two_heads`` (2, N) holds both heads' shares of one two-head model, one dot per
    token. Top right: histograms of one-head models' shares, one per entry of ``one_head``
    (label -> (N,) shares). Bottom: one dot per one-head model, the fraction of tokens on which
    its head commits to one offset (``commitment``, (R,)) against its ``accuracy`` (R,).
    Sized for a figure about 7 x 6 inches.
    """
    from matplotlib.ticker import PercentFormatter

    grid = fig.add_gridspec(2, 2, hspace=0.6, wspace=0.4)
    ax_two, ax_one = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_runs = fig.add_subplot(grid[1, :])
    ax_two.plot(two_heads[0], two_heads[1], ".", color=HEAD_COLOURS[0], alpha=0.15, ms=3)
    ax_two.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), xticks=[0, 0.5, 1], yticks=[0, 0.5, 1])
    ax_two.set_xlabel("head 1: share one back")
    ax_two.set_ylabel("head 2: share one back")
    ax_two.set_title("two heads, per token")
    bins = torch.linspace(0, 1, 21)
    for i, (label, share) in enumerate(one_head.items()):
        weights = torch.full_like(share, 1 / len(share))
        ax_one.hist(share, bins=bins, weights=weights, histtype="step", lw=2,
                    color=HEAD_COLOURS[1 + i], label=label)  # fmt: skip
    ax_one.set(xlim=(0, 1), xticks=[0, 0.5, 1])
    ax_one.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax_one.set_xlabel("share one back")
    ax_one.set_ylabel("tokens")
    ax_one.set_title("one head, per token")
    ax_one.legend(loc="upper center", frameon=False)
    ax_runs.plot(commitment, accuracy, "o", color=HEAD_COLOURS[5], ms=5)
    ax_runs.set(
        xlim=(-0.02, 1.02), ylim=(0, 1.05), xticks=[0, 0.25, 0.5, 0.75, 1], yticks=[0, 0.5, 1]
    )
    ax_runs.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax_runs.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax_runs.set_xlabel("share of tokens on which the head commits to one offset")
    ax_runs.set_ylabel("accuracy")
    ax_runs.set_title("every one-head run")
    return ax_two, ax_one, ax_runs

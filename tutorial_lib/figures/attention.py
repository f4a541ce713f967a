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
from .common import HEAD_COLOURS, INK, code_html
from .trace import letters_of, shape_of, trace_tensors

__all__ = [
    "ShapeStep",
    "multihead_shape_trace",
    "shape_steps",
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
    mha = MultiHeadAttention(p["H"], p["D"], p["d_k"], p["d_v"], dropout=0.0).eval()
    x = torch.zeros(p["B"], p["T"], p["D"])
    with torch.no_grad():
        return trace_tensors(mha, x, x, x)[1]


@functools.lru_cache(maxsize=16)
def _contiguity(ones: tuple[str, ...]) -> tuple[bool, ...]:
    """Which traced tensors are contiguous when the letters in ``ones`` have size 1.

    Whether a transposed tensor is laid out in order depends on the sizes only through which
    axes have size 1 (moving a size-1 axis moves nothing), so a run at the probe sizes with
    those letters set to 1 answers for every size: a few milliseconds, however large the
    frame's sizes.
    """
    p = _PROBE | dict.fromkeys(ones, 1)
    mha = MultiHeadAttention(p["H"], p["D"], p["d_k"], p["d_v"], dropout=0.0).eval()
    x = torch.zeros(p["B"], p["T"], p["D"])
    with torch.no_grad():
        traced = trace_tensors(mha, x, x, x)[1]
    if [t.op for t in traced] != [t.op for t in _probe_trace()]:
        raise RuntimeError("the run with sizes of 1 took another path than the probe run")
    return tuple(t.contiguous for t in traced)


def shape_steps(B: int, T: int, d_model: int, n_head: int) -> list[ShapeStep]:
    """The steps :func:`multihead_shape_trace` records for ``mha(x, x, x)`` at these sizes
    (d_k = d_v = D/H), without running at these sizes: the letters of the probe run, read at
    these sizes, and the contiguity of a run whose sizes of 1 are the same (the tests compare
    both with a direct run)."""
    d_k = d_model // n_head
    sizes = {"B": B, "T": T, "H": n_head, "d_k": d_k, "D": d_model, "d_v": d_k}
    ones = tuple(letter for letter in ("B", "T", "H", "d_k", "d_v") if sizes[letter] == 1)
    steps = []
    for t, contiguous in zip(_probe_trace(), _contiguity(ones), strict=True):
        letters = letters_of(t.shape, _PROBE)
        steps.append(ShapeStep(t.step, t.code, t.op, shape_of(letters, sizes), letters, contiguous))
    return steps


def _head_bar(step: ShapeStep, H: int) -> str:
    """The last axis as a small bar, coloured by head where it holds the heads side by side."""
    if "H·" in step.letters.rsplit(",", 1)[-1]:
        cells = "".join(
            f'<span style="display:inline-block;width:{96 / H:.1f}px;height:10px;'
            f'background:{HEAD_COLOURS[h % len(HEAD_COLOURS)]}"></span>'
            for h in range(H)
        )
        return f'<span title="{H} heads side by side" style="white-space:nowrap">{cells}</span>'
    if "H," in step.letters:
        return "own axis"
    return "—"


def shape_trace_html(B: int, T: int, d_model: int, n_head: int) -> str:
    """An HTML table of every tensor one multi-head self-attention call makes.

    d_k = d_v = d_model // n_head, as in the paper. Shapes are measured by running
    ``MultiHeadAttention.forward`` (see :func:`shape_steps`), not typed. Each numbered step
    and each line of code heads the rows of the tensors it made, so
    the table stays narrow enough for the book's column.
    """
    if d_model % n_head:
        return (
            f"<p>d_model = {d_model} is not divisible by n_head = {n_head}, so the paper's "
            "choice d_k = d_model / n_head is not a whole number.</p>"
        )
    d_k = d_model // n_head
    steps = shape_steps(B, T, d_model, n_head)
    rows = []
    for i, s in enumerate(steps):
        numel = 1
        for n in s.shape:
            numel *= n
        if i == 0 or steps[i - 1].step != s.step:
            rows.append(f'<tr><th colspan="6" style="text-align:left;padding-top:6px">'
                        f"step {html.escape(s.step)}</th></tr>")  # fmt: skip
        if i == 0 or steps[i - 1].code != s.code or steps[i - 1].step != s.step:
            rows.append(f'<tr><td colspan="6" style="padding-left:1em">'
                        f"{code_html(s.code.split('  #')[0], wrap=True)}</td></tr>")  # fmt: skip
        rows.append(
            '<tr><td style="padding-left:2em">'
            f"{code_html(s.op)}</td><td>{code_html(s.letters)}</td>"
            f"<td>{code_html(str(tuple(s.shape)))}</td>"
            f"<td style='text-align:right'>{numel:,}</td>"
            f"<td>{'yes' if s.contiguous else '<b>no</b>'}</td>"
            f"<td>{_head_bar(s, n_head)}</td></tr>"
        )
    head = (
        "<tr><th>operation</th><th>letters</th><th>shape</th><th>elements</th>"
        "<th>contiguous</th><th>heads</th></tr>"
    )
    caption = (
        f"B={B}, T={T}, D=d_model={d_model}, H=n_head={n_head}, so d_k=d_v={d_k}. "
        f"The attention weights hold H·B·T² = {n_head}·{B}·{T}² = {n_head * B * T * T:,} numbers. "
        "Rows follow MultiHeadAttention.forward, which projects keys and values first "
        "(project_kv, the part a decoder caches), then the queries. Last column: a stripe "
        "of H colours where the last axis holds the heads side by side; <i>own axis</i> where "
        "the heads have an axis of their own; — once the output projection w_o has mixed them."
    )
    return (
        f'<table class="shape-trace" style="font-size:14px;border-collapse:collapse;color:{INK}">'
        f"<caption style='caption-side:top;text-align:left;color:{INK}'>{caption}</caption>"
        f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def draw_attention_maps(fig, weights: Tensor, titles: list[str], tokens: list[str] | None = None):
    """One heatmap per map in ``weights`` (n, T_q, T_k), side by side, sharing a colour scale.

    Only the first panel names its y-axis (the others share it); ticks are whole positions;
    titles may hold a line break to stay within their panel.
    """
    from matplotlib.ticker import MaxNLocator

    fig.set_layout_engine("constrained")
    weights = weights.detach().cpu()
    n = weights.shape[0]
    axes = fig.subplots(1, n, squeeze=False, sharey=True)[0]
    image = None
    for ax, w, title in zip(axes, weights, titles, strict=True):
        image = ax.imshow(w.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(title)
        ax.set_xlabel("key position j")
        if tokens is not None:
            ax.set_xticks(range(len(tokens)), tokens)
            ax.set_yticks(range(len(tokens)), tokens)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    axes[0].set_ylabel("query position i")
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
    token, each quadrant (split at 0.5) labelled with its percentage of the tokens. Top right:
    histograms of one-head models' shares, one per entry of ``one_head`` (label -> (N,) shares).
    Bottom: one dot per one-head model, the fraction of tokens on which its head commits to one
    offset (``commitment``, (R,)) against its ``accuracy`` (R,).
    Sized for a figure about 7 x 6 inches.
    """
    from matplotlib.ticker import PercentFormatter

    grid = fig.add_gridspec(2, 2, hspace=0.6, wspace=0.4)
    ax_two, ax_one = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_runs = fig.add_subplot(grid[1, :])
    # Thousands of dots: one raster layer instead of one SVG path each (600 kB to ~50 kB).
    ax_two.plot(
        two_heads[0], two_heads[1], ".", color=HEAD_COLOURS[0], alpha=0.15, ms=3, rasterized=True
    )
    ax_two.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), xticks=[0, 0.5, 1], yticks=[0, 0.5, 1])
    # Faint dots hide how many sit in one corner, so each quadrant says its share of the tokens.
    right, top = two_heads[0] > 0.5, two_heads[1] > 0.5
    ax_two.axvline(0.5, color="0.85", lw=0.8, zorder=0)
    ax_two.axhline(0.5, color="0.85", lw=0.8, zorder=0)
    quadrants = {(0.25, 0.75): ~right & top, (0.75, 0.75): right & top,
                 (0.25, 0.25): ~right & ~top, (0.75, 0.25): right & ~top}  # fmt: skip
    for (x, y), inside in quadrants.items():
        label = f"{100 * inside.float().mean().item():.0f}%"
        box = {"fc": "white", "ec": "none", "alpha": 0.8}
        ax_two.text(x, y, label, ha="center", va="center", color=INK, bbox=box)
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

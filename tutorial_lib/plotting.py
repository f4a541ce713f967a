"""Figure helpers shared by the chapters: attention heatmaps and shape diagrams.

Dimension letters as in :mod:`tutorial_lib.attention` (B, T, D, H, d_k, d_v).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import torch
from torch import Tensor

from .attention import MultiHeadAttention

__all__ = ["ShapeStep", "multihead_shape_trace", "shape_trace_html", "draw_attention_maps"]

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


@dataclass(frozen=True)
class ShapeStep:
    step: str  # which numbered step of MultiHeadAttention.forward
    code: str  # the line that made the tensor
    name: str  # the tensor's name
    shape: tuple[int, ...]  # its measured shape
    letters: str  # the shape in the book's letters
    contiguous: bool  # whether its memory is laid out in shape order


def multihead_shape_trace(mha: MultiHeadAttention, x: Tensor) -> tuple[list[ShapeStep], Tensor]:
    """Run self-attention on x (B, T, D) step by step, recording every tensor's shape.

    The steps are those of ``forward`` of
    :class:`~tutorial_lib.attention.MultiHeadAttention` (in eval mode), so the
    returned output equals ``mha(x, x, x)[0]``; a test checks that.
    """
    B, T, _ = x.shape
    H, d_k, d_v = mha.n_head, mha.d_k, mha.d_v
    steps: list[ShapeStep] = []

    def record(step, code, name, t, letters):
        steps.append(ShapeStep(step, code, name, tuple(t.shape), letters, t.is_contiguous()))

    record("input", "x", "x", x, "(B, T, D)")
    q = mha.w_qs(x)
    record("1 project", "w_qs(x)", "q", q, "(B, T, H·d_k)")
    q = q.view(B, T, H, d_k)
    record("1 split heads", "q.view(B, T, H, d_k)", "q", q, "(B, T, H, d_k)")
    q = q.transpose(1, 2)
    record("2 heads first", "q.transpose(1, 2)", "q", q, "(B, H, T, d_k)")
    k = mha.w_ks(x).view(B, T, H, d_k).transpose(1, 2)
    v = mha.w_vs(x).view(B, T, H, d_v).transpose(1, 2)
    record("2 heads first", "w_vs(x).view(B, T, H, d_v).transpose(1, 2)", "v", v, "(B, H, T, d_v)")
    scores = mha.attention.get_scores(q, k)
    record("4 scores", "q @ k.transpose(-2, -1) / sqrt(d_k)", "scores", scores, "(B, H, T, T)")
    weights = torch.softmax(scores, dim=-1)
    record("4 weights", "softmax(scores, dim=-1)", "weights", weights, "(B, H, T, T)")
    out = weights @ v
    record("4 mix values", "weights @ v", "out", out, "(B, H, T, d_v)")
    out = out.transpose(1, 2)
    record("5 heads back", "out.transpose(1, 2)", "out", out, "(B, T, H, d_v)")
    out = out.contiguous()
    record("5 copy", ".contiguous()", "out", out, "(B, T, H, d_v)")
    out = out.view(B, T, H * d_v)
    record("5 concatenate", "out.view(B, T, H * d_v)", "out", out, "(B, T, H·d_v)")
    out = mha.fc(out)
    record("5 mix heads", "fc(out)", "out", out, "(B, T, D)")
    out = mha.layer_norm(out + x)
    record("6 residual + LN", "layer_norm(out + x)", "out", out, "(B, T, D)")
    return steps, out


def _head_bar(step: ShapeStep, H: int) -> str:
    """A small bar for the last axis, coloured by head where the axis holds heads."""
    width = 180
    if "H·" in step.letters:
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
    """An HTML table of every tensor's shape in one multi-head self-attention call.

    d_k = d_v = d_model // n_head, as in the paper. Shapes are measured by
    running the steps on zeros, not typed.
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
    for s in steps:
        numel = 1
        for n in s.shape:
            numel *= n
        rows.append(
            "<tr>"
            f"<td>{html.escape(s.step)}</td>"
            f"<td><code>{html.escape(s.code)}</code></td>"
            f"<td><code>{html.escape(s.letters)}</code></td>"
            f"<td><code>{tuple(s.shape)}</code></td>"
            f"<td style='text-align:right'>{numel:,}</td>"
            f"<td>{'yes' if s.contiguous else '<b>no</b>'}</td>"
            f"<td>{_head_bar(s, n_head)}</td>"
            "</tr>"
        )
    head = (
        "<tr><th>step</th><th>code</th><th>letters</th><th>shape</th><th>elements</th>"
        "<th>contiguous</th><th>heads on the last axis?</th></tr>"
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

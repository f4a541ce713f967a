"""Figures and explorers for the whole Transformer (chapter Q5): masks, trained attention.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src source length, T_tgt
target length, D = d_model, H = n_head, d_ff feed-forward width, V vocabulary, N layers.

Every ``draw_*`` function draws on a matplotlib Figure it is given; nothing here calls
``pyplot``. The shape tour lives in :mod:`tutorial_lib.figures.model_shapes` and the
decoding explorer in :mod:`tutorial_lib.figures.decoding`; both are importable from here.
"""

from __future__ import annotations

import html

import torch
from torch import Tensor

from ..data import PAD, to_text
from ..model import Transformer, source_mask, target_mask
from .common import html_table

# The decoding explorer and the shape tour, importable from here as the chapter does.
from .decoding import DecodingRecord as DecodingRecord
from .decoding import decoding_explorer as decoding_explorer
from .decoding import draw_decoding_step as draw_decoding_step
from .decoding import record_decoding as record_decoding
from .model_shapes import ShapeRow as ShapeRow
from .model_shapes import model_shape_html as model_shape_html
from .model_shapes import model_shape_trace as model_shape_trace

__all__ = [
    "ShapeRow",
    "model_shape_trace",
    "model_shape_html",
    "draw_masks",
    "draw_trained_attention",
    "token_table_html",
]


def _labels(tokens: Tensor) -> list[str]:
    return to_text(tokens).split(" ")


def draw_masks(fig, src: Tensor, tgt_in: Tensor, pad_id: int = PAD):
    """The three masks of one example: src (T_src,) and decoder input tgt_in (T_tgt,) token ids.

    Encoder self-attention and cross-attention use the source's padding mask; the decoder's
    self-attention uses causal AND padding. Dark = masked (False), light = may attend (True);
    the key under the panels says so.
    """
    from matplotlib.patches import Patch

    fig.set_layout_engine("constrained")
    src, tgt_in = src[None], tgt_in[None]  # (1, T_src), (1, T_tgt)
    T_src, T_tgt = src.shape[1], tgt_in.shape[1]
    panels = [
        ("encoder self-attention\n(padding)", source_mask(src, pad_id).expand(1, T_src, T_src)),
        ("decoder self-attention\n(causal & padding)", target_mask(tgt_in, pad_id)),
        ("cross-attention\n(source padding)", source_mask(src, pad_id).expand(1, T_tgt, T_src)),
    ]
    rows = [_labels(src[0]), _labels(tgt_in[0]), _labels(tgt_in[0])]
    cols = [_labels(src[0]), _labels(tgt_in[0]), _labels(src[0])]
    axes = fig.subplots(1, 3)
    for ax, (title, mask), r, c in zip(axes, panels, rows, cols, strict=True):
        ax.imshow(mask[0].float().numpy(), cmap="Greys_r", vmin=-0.3, vmax=1.0)
        ax.set_title(title)
        ax.set_xticks(range(len(c)), c)
        ax.set_yticks(range(len(r)), r)
        ax.set_xlabel("key (what is read)")
    axes[0].set_ylabel("query (who reads)")
    light, dark = "#ffffff", "#4d4d4d"  # Greys_r at 1 and 0 with vmin -0.3
    fig.legend(
        handles=[
            Patch(facecolor=light, edgecolor="#888", label="True: may attend"),
            Patch(facecolor=dark, edgecolor="#888", label="False: masked"),
        ],
        loc="outside lower center", ncol=2, frameon=False,
    )  # fmt: skip
    return axes


def draw_trained_attention(fig, model: Transformer, src: Tensor, tgt_in: Tensor, layer: int = 0):
    """Head-averaged attention of one example (src (T_src,), tgt_in (T_tgt,)) after a forward.

    Three panels: encoder self-attention, decoder self-attention, cross-attention.
    """
    fig.set_layout_engine("constrained")
    with torch.no_grad():
        model.eval()
        model(src[None], tgt_in[None])
    maps = [
        ("encoder self-attention", model.attention["encoder"][layer], src, src),
        ("decoder self-attention", model.attention["decoder_self"][layer], tgt_in, tgt_in),
        ("cross-attention", model.attention["cross"][layer], tgt_in, src),
    ]
    axes = fig.subplots(1, 3)
    image = None
    for ax, (title, w, rows, cols) in zip(axes, maps, strict=True):
        image = ax.imshow(w[0].mean(0).numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(title)
        # A label per cell, so every row and column can be read off.
        ax.set_xticks(range(len(cols)), _labels(cols), fontsize=8)
        ax.set_yticks(range(len(rows)), _labels(rows), fontsize=8)
        ax.set_xlabel("key")
    axes[0].set_ylabel("query")
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="weight (mean over heads)")
    return axes


def token_table_html(columns: dict[str, list[str]], marked: dict[str, list[bool]] | None = None):
    """A small table, one column per list; cells where ``marked[column]`` is True are bold."""
    marked = marked or {}
    n = max(len(v) for v in columns.values())
    rows = []
    for i in range(n):
        cells = []
        for name, values in columns.items():
            text = html.escape(values[i]) if i < len(values) else ""
            if marked.get(name, [False] * n)[i]:
                text = f"<b style='color:#B34700'>{text}</b>"  # dark orange: 5.2:1 on white
            cells.append(text)
        rows.append(cells)
    return html_table(list(columns), rows, align=["center"] * len(columns), escape=False)

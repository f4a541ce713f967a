"""Self-check for a learner's multi-head self-attention (chapter Q1).

Dimension letters: B batch, T sequence length, D = d_model, H = n_head, d_k = D / H.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from .engine import Mistake, call_learner, compare_and_explain, describe, expect_tensor

__all__ = ["check_multihead", "CONFIGS", "OTHER_CONFIGS"]

# (B, T, D, H): several head counts and widths, so a fixed head count or size shows.
CONFIGS = ((2, 4, 12, 3), (1, 5, 12, 2), (3, 3, 16, 4), (2, 3, 8, 1))
OTHER_CONFIGS = ((2, 6, 18, 3), (3, 2, 20, 5), (1, 4, 24, 6), (2, 5, 10, 2))  # a grader's


def _multihead(
    x: Tensor,
    w: tuple[Tensor, Tensor, Tensor, Tensor],
    H: int,
    *,
    split: str = "right",
    merge: str = "right",
    scale: str = "d_k",
    softmax_dim: int = -1,
    project: bool = True,
) -> Tensor:
    """Multi-head self-attention, right by default, with one mistake switched on by a keyword."""
    B, T, D = x.shape
    d_k = D // H
    w_q, w_k, w_v, w_o = w

    def heads(t: Tensor) -> Tensor:  # (B, T, D) -> (B, H, T, d_k)
        if split == "view without transpose":
            return t.reshape(B, H, T, d_k)
        if split == "wrong axis":
            return t.view(B, T, d_k, H).permute(0, 3, 1, 2)
        if split == "none":
            return t.unsqueeze(1)  # one head of width D
        return t.view(B, T, H, d_k).transpose(1, 2)

    q, k, v = heads(x @ w_q), heads(x @ w_k), heads(x @ w_v)
    factor = {
        "d_k": 1 / math.sqrt(q.shape[-1]),
        "D": 1 / math.sqrt(D),
        "1/d_k": 1 / d_k,
        "none": 1.0,
        "T": 1 / math.sqrt(T),
    }[scale]
    weights = torch.softmax(q @ k.transpose(-2, -1) * factor, dim=softmax_dim)  # (B, H, T, T)
    out = weights @ v  # (B, H, T, d_k)
    if merge == "reshape without transpose":
        out = out.reshape(B, T, D)
    else:
        out = out.transpose(1, 2).reshape(B, T, D)
    return out @ w_o if project else out


def _mistakes(x: Tensor, w: tuple, H: int) -> list[Mistake]:
    B, T, D = x.shape
    d_k = D // H
    wt = tuple(m.T for m in w)
    mistakes = [
        Mistake(
            "one head over all of D",
            f"this is single-head attention of width D = {D}. "
            f"Split q, k and v into n_head = {H} slices of d_k = {d_k} columns and attend in "
            "each slice.",
            _multihead(x, w, H, split="none", scale="D"),
        ),
        Mistake(
            "heads split with view(B, H, T, d_k)",
            "the projection (B, T, D) was read as "
            "(B, H, T, d_k) directly, which mixes positions into heads. Split the last axis "
            "first and then swap: .view(B, T, H, d_k).transpose(1, 2).",
            _multihead(x, w, H, split="view without transpose"),
        ),
        Mistake(
            "heads merged without transpose",
            "the heads (B, H, T, d_k) were reshaped to "
            "(B, T, D) directly, which mixes heads into positions. Swap back first: "
            ".transpose(1, 2).reshape(B, T, D) (or .contiguous().view(...)).",
            _multihead(x, w, H, merge="reshape without transpose"),
        ),
        Mistake(
            "heads split along the wrong axis",
            "head h must use the contiguous columns "
            "h*d_k ... (h+1)*d_k - 1 (a view as (B, T, H, d_k)), not every n_head-th column.",
            _multihead(x, w, H, split="wrong axis"),
        ),
        Mistake(
            "scale 1/sqrt(D)",
            f"each head's scores were divided by sqrt(D) = "
            f"{math.sqrt(D):.3g}; a head has width d_k = {d_k}, so divide by sqrt(d_k) = "
            f"{math.sqrt(d_k):.3g}.",
            _multihead(x, w, H, scale="D"),
        ),
        Mistake(
            "scale 1/d_k",
            f"each head's scores were divided by d_k = {d_k}; divide by "
            f"sqrt(d_k) = {math.sqrt(d_k):.3g}.",
            _multihead(x, w, H, scale="1/d_k"),
        ),
        Mistake(
            "scale missing",
            f"the scores were not scaled: divide them by sqrt(d_k) = "
            f"{math.sqrt(d_k):.3g} before the softmax.",
            _multihead(x, w, H, scale="none"),
        ),
        Mistake(
            "scale 1/sqrt(T)",
            f"the scores were divided by sqrt(T) = {math.sqrt(T):.3g}, "
            "the sequence length; the scale comes from the head width d_k.",
            _multihead(x, w, H, scale="T"),
        ),
        Mistake(
            "softmax over the queries",
            "softmax ran over dim=-2 (the queries); each query "
            "spreads its weight over the keys: softmax(dim=-1).",
            _multihead(x, w, H, softmax_dim=-2),
        ),
        Mistake(
            "missing output projection",
            "the heads were concatenated but not mixed: multiply the concatenation by w_o.",
            _multihead(x, w, H, project=False),
        ),
        Mistake(
            "weights used as x @ W.T",
            "the (D, D) matrices are used as x @ w in this "
            "exercise (head h owns columns h*d_k ... (h+1)*d_k - 1); you used x @ w.T, "
            "nn.Linear's convention for its stored weight.",
            _multihead(x, wt, H),
        ),
    ]
    right = _multihead(x, w, H)
    layer_norm = torch.nn.functional.layer_norm(x + right, (D,))
    mistakes += [
        Mistake(
            "residual added",
            "the exercise asks for attention alone: drop the `x +` "
            "(the residual belongs to the layer around it).",
            x + right,
        ),
        Mistake(
            "residual and LayerNorm added",
            "the exercise asks for attention alone, "
            "without the residual and LayerNorm that MultiHeadAttention adds after W^O.",
            layer_norm,
        ),
    ]
    for other in range(1, D + 1):
        if D % other == 0 and other != H:
            mistakes.append(
                Mistake(
                    f"n_head ignored (computed with {other})",
                    f"your output "
                    f"equals attention with {other} heads, but the call passed "
                    f"n_head = {H}: use the argument, not a fixed number.",
                    _multihead(x, w, other),
                )
            )
    return mistakes


def check_multihead(fn: Callable[..., Tensor], *, configs: tuple = CONFIGS, seed: int = 1) -> None:
    """Check ``fn(x, w_q, w_k, w_v, w_o, n_head) -> (B, T, D)``, multi-head self-attention.

    x is (B, T, D); the four weights are (D, D) matrices used as ``x @ w``; head h uses
    columns h*d_k ... (h+1)*d_k - 1 with d_k = D / n_head; no residual and no LayerNorm
    (chapter Q1's exercise). Tried for several (B, T, D, H). Catches a single head over all
    of D, heads split with a view and no transpose (or merged so), the wrong scale, softmax
    over the queries, a missing output projection, the x @ W.T convention, a residual or
    LayerNorm added, and a head count fixed in the code. ``configs`` and ``seed`` choose other
    sizes and draws (a grader's hidden test passes OTHER_CONFIGS); the defaults are what a
    learner's call tries.
    """
    check = "check_multihead"
    g = torch.Generator().manual_seed(seed)
    for Bn, T, D, Hn in configs:
        x = torch.randn(Bn, T, D, generator=g)
        w = tuple(torch.randn(D, D, generator=g) / math.sqrt(D) for _ in range(4))
        out = call_learner(
            check,
            fn,
            x,
            *w,
            Hn,
            call="fn(x, w_q, w_k, w_v, w_o, n_head)",
            names=("x", "w_q", "w_k", "w_v", "w_o", "n_head"),
        )
        config = describe(B=Bn, T=T, D=D, H=Hn)
        out = expect_tensor(check, out, f"the output (for {config})", "(B, T, D)", (Bn, T, D))
        compare_and_explain(
            check,
            "your output",
            out,
            _multihead(x, w, Hn),
            _mistakes(x, w, Hn),
            "concat(head_1, ..., head_H) @ w_o",
            config=config,
        )

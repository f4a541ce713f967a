"""Self-check for a learner's grouped-query attention (chapter Q6).

Dimension letters: B batch, H query heads, H_kv key/value heads, G = H / H_kv query heads per
key/value head, T_q queries, T_k keys and values, d_k and d_v widths. Query head h reads
key/value head h // G: the G query heads of a group are neighbours, as in ``repeat_interleave``
and in ``F.scaled_dot_product_attention(..., enable_gqa=True)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from .engine import Mistake, call_learner, compare_and_explain, describe, expect_tensor, fail, same

__all__ = ["check_grouped_attention"]

# (B, H, H_kv, T_q, T_k, d_k, d_v): two and three query heads per group, with H_kv >= 2 so that
# tiling [0, 1, 0, 1] and interleaving [0, 0, 1, 1] differ; then multi-query and multi-head.
# d_k != d_v and T_q != T_k, so that a swapped size shows.
CONFIGS = (
    (2, 4, 2, 3, 5, 8, 6),
    (1, 6, 2, 4, 3, 4, 5),
    (2, 8, 4, 2, 4, 6, 3),
    (1, 3, 1, 3, 4, 4, 2),
    (1, 2, 2, 2, 3, 5, 4),
)
# What a grader's hidden test tries (other_settings): four and two query heads per group, again
# with multi-query and multi-head among them.
OTHER_CONFIGS = (
    (1, 8, 2, 2, 6, 5, 7),
    (2, 6, 3, 4, 2, 3, 4),
    (1, 4, 1, 5, 3, 6, 2),
    (2, 3, 3, 3, 2, 4, 5),
)


def _grouped(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    k_heads: Tensor | None = None,
    v_heads: Tensor | None = None,
    scale: float | None = None,
    softmax_dim: int = -1,
) -> Tensor:
    """Grouped-query attention, right by default: query head h reads key head k_heads[h] and
    value head v_heads[h] (default h // G), scores times ``scale`` (default 1/sqrt(d_k))."""
    H, H_kv = q.shape[1], k.shape[1]
    right = torch.arange(H) // (H // H_kv)  # (H,): the key/value head of every query head
    k = k[:, right if k_heads is None else k_heads]  # (B, H, T_k, d_k)
    v = v[:, right if v_heads is None else v_heads]  # (B, H, T_k, d_v)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    weights = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=softmax_dim)  # (B, H, T_q, T_k)
    return weights @ v  # (B, H, T_q, d_v)


def _mistakes(q: Tensor, k: Tensor, v: Tensor) -> list[Mistake]:
    H, H_kv, d_k, d_v = q.shape[1], k.shape[1], q.shape[-1], v.shape[-1]
    G = H // H_kv
    tiled = torch.arange(H) % H_kv  # what k.repeat(1, G, 1, 1) gives: [0, 1, 0, 1, ...]
    right = torch.arange(H) // G
    first = torch.zeros(H, dtype=torch.long)
    tile_fix = (
        "Use k.repeat_interleave(G, dim=1), which gives [0, 0, 1, 1, ...]: query head h "
        "reads key/value head h // G. k.repeat(1, G, 1, 1) gives [0, 1, 0, 1, ...], and so does "
        "splitting q as (B, G, H_kv, T, d) instead of (B, H_kv, G, T, d)."
    )
    return [
        Mistake(
            "key/value heads repeated in the wrong order (tiled, not interleaved)",
            f"query head h read key/value head h % H_kv, not h // G (H = {H}, H_kv = {H_kv}, "
            f"G = {G}). {tile_fix}",
            _grouped(q, k, v, k_heads=tiled, v_heads=tiled),
        ),
        Mistake(
            "keys and values repeated in different orders",
            "the keys were interleaved and the values tiled, or the other way round: a query "
            "head then weighs one head's values with another head's keys. Repeat both with "
            "repeat_interleave(G, dim=1).",
            _grouped(q, k, v, k_heads=right, v_heads=tiled),
        ),
        Mistake(
            "values repeated in a different order from the keys",
            "the values were interleaved and the keys tiled. Repeat both with "
            "repeat_interleave(G, dim=1).",
            _grouped(q, k, v, k_heads=tiled, v_heads=right),
        ),
        Mistake(
            "only the first key/value head used",
            f"every query head read key/value head 0, as if H_kv were 1 (k[:, :1] broadcast "
            f"over the heads). There are H_kv = {H_kv}: query head h reads head h // G.",
            _grouped(q, k, v, k_heads=first, v_heads=first),
        ),
        Mistake(
            "the scale of d_k lost",
            f"the scores were not scaled. Multiply them by 1/sqrt(d_k) = {1 / math.sqrt(d_k):.3g}"
            " (d_k = q.shape[-1]) before the softmax, as in every head of multi-head attention.",
            _grouped(q, k, v, scale=1.0),
        ),
        Mistake(
            "scale from the width of every key/value head together",
            f"the scores were divided by sqrt(H_kv d_k) = {math.sqrt(H_kv * d_k):.3g}. Sharing a "
            f"key head does not widen it: divide by sqrt(d_k) = {math.sqrt(d_k):.3g}.",
            _grouped(q, k, v, scale=1 / math.sqrt(H_kv * d_k)),
        ),
        Mistake(
            "scale from the width of all query heads",
            f"the scores were divided by sqrt(H d_k) = {math.sqrt(H * d_k):.3g}, the model "
            f"width; each head compares d_k = {d_k} numbers: divide by sqrt(d_k).",
            _grouped(q, k, v, scale=1 / math.sqrt(H * d_k)),
        ),
        Mistake(
            "scale 1/sqrt(d_v)",
            f"the scores were divided by sqrt(d_v) = {math.sqrt(d_v):.3g}; the scale comes from "
            f"the width of q and k, d_k = {d_k}.",
            _grouped(q, k, v, scale=1 / math.sqrt(d_v)),
        ),
        Mistake(
            "softmax over the queries",
            "softmax ran over dim=-2 (the queries); each query spreads its weight over the "
            "keys: softmax(dim=-1).",
            _grouped(q, k, v, softmax_dim=-2),
        ),
    ]


def _diagnose(q: Tensor, k: Tensor, v: Tensor, config: str) -> Callable[[Tensor], None]:
    """Which key and value head each query head of the learner's output read, if any."""
    H, H_kv = q.shape[1], k.shape[1]
    G = H // H_kv

    def diagnose(actual: Tensor) -> None:
        read = []
        for h in range(H):
            pairs = [
                (a, b)
                for a in range(H_kv)
                for b in range(H_kv)
                if same(actual[:, h], _grouped(q, k, v, k_heads=torch.full((H,), a),
                                               v_heads=torch.full((H,), b))[:, h])
            ]  # fmt: skip
            if not pairs:
                return  # this head matches no key/value head: the generic report follows
            read.append(pairs[0])
        wrong = [(h, a, b) for h, (a, b) in enumerate(read) if (a, b) != (h // G, h // G)]
        shown = ", ".join(
            f"query head {h} read key head {a}" + (f" and value head {b}" if b != a else "")
            for h, a, b in wrong[:4]
        )
        fail(
            "check_grouped_attention",
            f"your output (for {config}) maps groups to the wrong query heads: {shown}. With "
            f"G = H / H_kv = {G} query heads per group, query head h reads key and value head "
            "h // G: heads 0 .. G-1 read head 0, heads G .. 2G-1 read head 1, and so on.",
        )

    return diagnose


def check_grouped_attention(
    fn: Callable[..., Tensor], *, configs: tuple = CONFIGS, seed: int = 6
) -> None:
    """Check ``fn(q, k, v) -> output``, grouped-query attention without a mask.

    q (B, H, T_q, d_k), k (B, H_kv, T_k, d_k), v (B, H_kv, T_k, d_v) -> (B, H, T_q, d_v), where
    query head h attends with key/value head h // G, G = H / H_kv, scores scaled by
    1/sqrt(d_k) (what ``F.scaled_dot_product_attention(q, k, v, enable_gqa=True)`` computes).
    Tried for several sizes, multi-query (H_kv = 1) and multi-head (H_kv = H) among them;
    ``configs`` and ``seed`` choose other sizes and draws (a grader's hidden test passes
    OTHER_CONFIGS).
    Catches key/value heads repeated in the wrong order (``repeat`` for ``repeat_interleave``),
    keys and values repeated differently, groups mapped to other query heads, one key/value
    head for all, the scale of d_k lost or taken from another width, softmax over the queries.
    """
    check = "check_grouped_attention"
    g = torch.Generator().manual_seed(seed)
    for B, H, H_kv, T_q, T_k, d_k, d_v in configs:
        q = torch.randn(B, H, T_q, d_k, generator=g)
        k = torch.randn(B, H_kv, T_k, d_k, generator=g)
        v = torch.randn(B, H_kv, T_k, d_v, generator=g)
        config = describe(B=B, H=H, H_kv=H_kv, T_q=T_q, T_k=T_k, d_k=d_k, d_v=d_v)
        out = call_learner(check, fn, q, k, v, call="fn(q, k, v)", names=("q", "k", "v"))
        if isinstance(out, tuple):
            fail(check, f"fn(q, k, v) should return the output alone; got a tuple (for {config})")
        out = expect_tensor(
            check, out, f"the output (for {config})", "(B, H, T_q, d_v)", (B, H, T_q, d_v)
        )
        mistakes = [m for m in _mistakes(q, k, v) if not same(m.result, _grouped(q, k, v))]
        compare_and_explain(
            check,
            "your output",
            out,
            _grouped(q, k, v),
            mistakes,
            "softmax(q kᵀ / √d_k) v with query head h reading key/value head h // G",
            _diagnose(q, k, v, config),
            config,
        )

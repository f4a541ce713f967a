"""Self-check for a learner's scaled dot-product attention (chapter Q2).

Dimension letters: B batch, H heads, T_q queries, T_k keys and values, d_k and d_v widths.
Mask convention: boolean, True = may attend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..attention import attention_scores, causal_mask, masked_softmax, scaled_dot_product_attention
from .engine import Mistake, call_learner, compare_and_explain, describe, expect_tensor, fail, same

__all__ = ["attention_check_inputs", "check_attention", "CONFIGS", "OTHER_CONFIGS"]

# Sizes the check tries: no two of T_q, T_k, d_k, d_v equal, so every axis mix-up shows;
# 4-D inputs with heads and 3-D inputs without; a random, a padding and a causal mask.
CONFIGS = (
    {"lead": (2, 2), "T_q": 3, "T_k": 5, "d_k": 16, "d_v": 6, "mask": "random"},
    {"lead": (1, 3), "T_q": 4, "T_k": 2, "d_k": 9, "d_v": 5, "mask": "padding"},
    {"lead": (3,), "T_q": 4, "T_k": 4, "d_k": 8, "d_v": 3, "mask": "causal"},
)
# Other sizes with the same properties (random and padding masks are 4-D; a random one needs
# T_q <= T_k and T_k >= 3): what a grader tries beyond the learner's own check.
OTHER_CONFIGS = (
    {"lead": (3, 2), "T_q": 2, "T_k": 7, "d_k": 12, "d_v": 4, "mask": "random"},
    {"lead": (2, 3), "T_q": 5, "T_k": 3, "d_k": 20, "d_v": 7, "mask": "padding"},
    {"lead": (2,), "T_q": 6, "T_k": 6, "d_k": 10, "d_v": 9, "mask": "causal"},
)


def attention_check_inputs(seed: int = 0, config: int | dict = 0) -> dict[str, Tensor]:
    """The inputs :func:`check_attention` tries: q, k, v and a mask, for one of its configs.

    Config 0: q (B, H, T_q, d_k) = (2, 2, 3, 16), k (2, 2, 5, 16), v (2, 2, 5, 6). Entries
    are N(0, 1): scaled by 1/sqrt(d_k) the scores have standard deviation 1, by 1 it is
    sqrt(d_k) and by 1/d_k it is 1/sqrt(d_k), so softmax is far from one-hot and the
    scalings give clearly different weights. Every mask lets every query see at least one
    key and blocks at least one, and so does its opposite, so a flipped convention gives
    finite, recognisable weights. ``config`` is an index into CONFIGS or a config of its own.
    """
    if isinstance(config, int):  # each of CONFIGS draws from its own seed
        seed, config = seed + 101 * config, CONFIGS[config]
    c, generator = config, torch.Generator().manual_seed(seed)
    lead, T_q, T_k = c["lead"], c["T_q"], c["T_k"]
    q = torch.randn(*lead, T_q, c["d_k"], generator=generator)
    k = torch.randn(*lead, T_k, c["d_k"], generator=generator)
    v = torch.randn(*lead, T_k, c["d_v"], generator=generator)
    rows = torch.arange(T_q)
    if c["mask"] == "random":
        mask = torch.rand(lead[0], 1, T_q, T_k, generator=generator) < 0.5  # (B, 1, T_q, T_k)
        mask[..., rows, rows] = True  # one allowed and one blocked key per row
        mask[..., rows, (rows + 2) % T_k] = False
    elif c["mask"] == "padding":
        lengths = torch.tensor([T_k - 1] * lead[0])  # the last key of every row is padding
        mask = (torch.arange(T_k) < lengths[:, None])[:, None, None, :]  # (B, 1, 1, T_k)
    else:
        mask = causal_mask(T_q, T_k)  # (T_q, T_k), shared by the batch
    return {"q": q, "k": k, "v": v, "mask": mask}


def _mistakes(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> list[Mistake]:
    """What common wrong implementations return for the weights (..., T_q, T_k)."""
    d_k, d_v, T_k = q.shape[-1], v.shape[-1], k.shape[-2]
    root = math.sqrt(d_k)
    scaled = [
        (
            "missing scaling",
            1.0,
            f"softmax(q kᵀ) without a scale. Multiply the scores by "
            f"1/√d_k (here d_k = {d_k}, so by {1 / root:.3g}) before the softmax.",
        ),
        (
            "wrong scale 1/d_k",
            1.0 / d_k,
            f"the scores were divided by d_k = {d_k}. Divide by "
            f"√d_k = {root:.3g} instead; 1/d_k makes the weights flatter than the paper's.",
        ),
        (
            "scale multiplied instead of divided",
            root,
            f"the scores were multiplied by √d_k = {root:.3g}. Divide by it.",
        ),
        (
            "wrong scale 1/√d_v",
            1.0 / math.sqrt(d_v),
            f"the scores were divided by √d_v = "
            f"{math.sqrt(d_v):.3g}; the scale comes from the width of q and k: divide by √d_k.",
        ),
        (
            "wrong scale 1/√T_k",
            1.0 / math.sqrt(T_k),
            f"the scores were divided by √T_k = "
            f"{math.sqrt(T_k):.3g}, the square root of the number of keys; the scale is "
            f"1/√d_k, from the width of q and k (d_k = {d_k}), whatever the sequence length.",
        ),
    ]
    mistakes = [
        Mistake(n, e, masked_softmax(attention_scores(q, k, s), mask)) for n, s, e in scaled
    ]
    scores = attention_scores(q, k)  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    axes = {0: "the batch B", -2: "the queries T_q"}
    if q.dim() == 4:
        axes[1] = "the heads H"
    for dim, axis in axes.items():
        mistakes.append(
            Mistake(
                f"softmax over the wrong axis (dim={dim})",
                f"softmax ran over {axis}. Each query spreads its weight over the keys: "
                "use softmax(dim=-1).",
                torch.softmax(scores, dim=dim),
            )
        )
    if mask is None:
        return mistakes
    unmasked = attention_scores(q, k)
    return mistakes + [
        Mistake(
            "mask ignored",
            "the weights are the same as with no mask. Set the scores of blocked keys (mask "
            "False) to -inf before the softmax: scores.masked_fill(~mask, float('-inf')).",
            torch.softmax(unmasked, dim=-1),
        ),
        Mistake(
            "flipped mask convention",
            "keys were blocked where the mask is True. In this book (and in "
            "torch.nn.functional.scaled_dot_product_attention) True means *may attend*: "
            "block where the mask is False, scores.masked_fill(~mask, float('-inf')).",
            masked_softmax(unmasked, ~mask),
        ),
        Mistake(
            "mask filled with 0",
            "blocked scores were set to 0, which still leaves them weight after the softmax. "
            "Set them to -inf (or a very negative number).",
            torch.softmax(unmasked.masked_fill(~mask, 0.0), dim=-1),
        ),
        Mistake(
            "mask added to the scores",
            "the boolean mask was added to the scores as 0s and 1s. A boolean mask selects: "
            "scores.masked_fill(~mask, float('-inf')); adding only works for an additive mask "
            "of 0 and -inf.",
            torch.softmax(unmasked + mask, dim=-1),
        ),
        Mistake(
            "mask applied after the softmax",
            "the weights were zeroed after the softmax, so the rest no longer sum to 1. Block "
            "the scores before the softmax instead.",
            torch.softmax(unmasked, dim=-1) * mask,
        ),
    ]


def _diagnose_weights(check: str, weights: Tensor, mask: Tensor | None, where: str) -> None:
    """General findings about wrong weights (..., T_q, T_k) that match no single mistake."""
    if mask is not None and (weights.masked_select(~mask.expand_as(weights)) != 0).any():
        fail(
            check,
            f"your weights{where} give weight to keys the mask blocks (mask False = may not "
            "attend). Set those scores to -inf before the softmax.",
        )
    sums = weights.sum(-1)
    if same(sums, torch.ones_like(sums)):
        return
    axes = {-2: "the queries T_q", 0: "the batch B"}
    if weights.dim() == 4:
        axes[1] = "the heads H"
    for dim, axis in axes.items():
        other = weights.sum(dim)
        if same(other, torch.ones_like(other)):
            fail(
                check,
                f"your weights{where} sum to 1 over {axis} (dim={dim}), not over the keys. "
                "Softmax belongs on the last axis, T_k: use softmax(dim=-1).",
            )
    fail(
        check,
        f"each query's weights{where} should sum to 1 over the keys; yours sum to between "
        f"{sums.min().item():.3g} and {sums.max().item():.3g}. Is something applied after the "
        "softmax?",
    )


def _split_result(check: str, result: Any, call: str, q: Tensor, k: Tensor, v: Tensor) -> tuple:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        kind = type(result).__name__
        if isinstance(result, (tuple, list)):
            kind = f"a {kind} of {len(result)} items"
        fail(check, f"{call} should return two tensors, (output, weights); it returned {kind}")
    output, weights = result
    lead = tuple(q.shape[:-2])
    letters = "(B, H, " if q.dim() == 4 else "(B, "
    out_shape = (*lead, q.shape[-2], v.shape[-1])
    w_shape = (*lead, q.shape[-2], k.shape[-2])
    if (
        isinstance(output, Tensor)
        and isinstance(weights, Tensor)
        and tuple(output.shape) == w_shape
        and tuple(weights.shape) == out_shape
    ):
        fail(check, f"{call} returned (weights, output); return (output, weights) in that order")
    weights = expect_tensor(
        check, weights, "the weights (second result)", letters + "T_q, T_k)", w_shape
    )
    output = expect_tensor(
        check, output, "the output (first result)", letters + "T_q, d_v)", out_shape
    )
    return output, weights


def check_attention(
    fn: Callable[..., tuple[Tensor, Tensor]], *, configs: tuple = CONFIGS, seed: int = 0
) -> None:
    """Check a learner's ``fn(q, k, v, mask=None) -> (output, weights)``; feedback on failure.

    ``fn`` takes q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) and a boolean
    mask broadcastable to (..., T_q, T_k), True = may attend, like
    :func:`tutorial_lib.attention.scaled_dot_product_attention`. It is called without and
    with a mask on three configurations (4-D with heads and 3-D without; random, padding
    and causal masks; T_q, T_k, d_k, d_v all different). Raises AssertionError naming what
    is wrong (missing or wrong scaling, softmax over the wrong axis, mask ignored, flipped,
    added or applied late, results swapped, wrong shapes, ...); returns None when
    everything matches. ``configs`` and ``seed`` choose other sizes and draws (a grader's
    hidden test passes OTHER_CONFIGS); the defaults are what a learner's call tries.
    """
    check = "check_attention"
    reference = "softmax(q kᵀ / √d_k)"
    for index, c in enumerate(configs):
        inputs = attention_check_inputs(seed + 101 * index, c)
        q, k, v, mask = inputs["q"], inputs["k"], inputs["v"], inputs["mask"]
        sizes = describe(
            **({"B": c["lead"][0]} | ({"H": c["lead"][1]} if len(c["lead"]) > 1 else {})),
            T_q=c["T_q"],
            T_k=c["T_k"],
            d_k=c["d_k"],
            d_v=c["d_v"],
        )
        for this_mask, call in ((None, "fn(q, k, v)"), (mask, "fn(q, k, v, mask=mask)")):
            kwargs = {} if this_mask is None else {"mask": this_mask}
            result = call_learner(check, fn, q, k, v, call=call, names=("q", "k", "v"), **kwargs)
            output, weights = _split_result(check, result, call, q, k, v)
            expected_output, expected_weights = scaled_dot_product_attention(
                q, k, v, mask=this_mask
            )
            config = sizes + ("" if this_mask is None else f", a {c['mask']} mask")
            compare_and_explain(
                check,
                "your weight matrix",
                weights,
                expected_weights,
                _mistakes(q, k, v, this_mask),
                reference,
                diagnose=lambda w, m=this_mask, s=config: _diagnose_weights(
                    check, w, m, f" (for {s})"
                ),
                config=config,
            )
            if same(output, expected_output):
                continue
            if q.shape[-2] == k.shape[-2] and same(output, weights.transpose(-2, -1) @ v):
                fail(
                    check,
                    f"your output (for {config}) is weightsᵀ @ v: use weights @ v, "
                    "(..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v).",
                )
            difference = (output.to(torch.float64) - expected_output.to(torch.float64)).abs().max()
            fail(
                check,
                f"your weights (for {config}) are right, but the output differs from weights @ v "
                f"by up to {difference.item():.3g}. The output is weights @ v: (..., T_q, T_k) @ "
                "(..., T_k, d_v) -> (..., T_q, d_v).",
            )

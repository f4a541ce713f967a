"""Self-checks for attention (chapter Q2), causal masks (Q1, Q5) and multi-head attention (Q1).

Dimension letters: B batch, H heads, T sequence length (T_q, T_k), d_k, d_v per-head widths.
Mask convention: boolean, True = may attend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..attention import attention_scores, masked_softmax, scaled_dot_product_attention
from .engine import Mistake, call_learner, compare_and_explain, expect_shape, fail, same

__all__ = ["attention_check_inputs", "check_attention", "check_causal_mask", "check_multihead"]


B, H, T_Q, T_K, D_K, D_V = 2, 2, 3, 5, 16, 6


def attention_check_inputs(seed: int = 0) -> dict[str, Tensor]:
    """The inputs :func:`check_attention` uses: q, k, v and a mask.

    q (B, H, T_q, d_k) = (2, 2, 3, 16), k (2, 2, 5, 16), v (2, 2, 5, 6), so that no
    two of T_q, T_k, d_k, d_v are equal and every axis mix-up shows in a shape.
    Entries are N(0, 1): scaled by 1/sqrt(d_k) the scores have standard
    deviation 1, by 1 it is 4 and by 1/d_k it is 1/4, so softmax is far from
    one-hot and the three scalings give clearly different weights. The mask
    (B, 1, T_q, T_k) lets every query see at least one key and blocks at least
    one, and so does its opposite, so a flipped convention gives finite,
    recognisable weights.
    """
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T_Q, D_K, generator=generator)
    k = torch.randn(B, H, T_K, D_K, generator=generator)
    v = torch.randn(B, H, T_K, D_V, generator=generator)
    mask = torch.rand(B, 1, T_Q, T_K, generator=generator) < 0.5
    # Force one allowed and one blocked key per row, at different places.
    rows = torch.arange(T_Q)
    mask[..., rows, rows] = True
    mask[..., rows, (rows + 2) % T_K] = False
    return {"q": q, "k": k, "v": v, "mask": mask}


def _attention_mistakes(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> list[Mistake]:
    """What common wrong implementations return: weights (B, H, T_q, T_k) for each."""
    d_k, d_v = q.shape[-1], v.shape[-1]
    root = math.sqrt(d_k)
    mistakes = [
        Mistake(
            "missing scaling",
            f"softmax(q kᵀ) without a scale. Multiply the scores by 1/√d_k (here d_k = {d_k}, "
            f"so by {1 / root:g}) before the softmax.",
            masked_softmax(attention_scores(q, k, 1.0), mask),
        ),
        Mistake(
            "wrong scale 1/d_k",
            f"the scores were divided by d_k = {d_k}. Divide by √d_k = {root:g} instead; "
            "1/d_k makes the weights flatter than the paper's.",
            masked_softmax(attention_scores(q, k, 1.0 / d_k), mask),
        ),
        Mistake(
            "scale multiplied instead of divided",
            f"the scores were multiplied by √d_k = {root:g}. Divide by it.",
            masked_softmax(attention_scores(q, k, root), mask),
        ),
        Mistake(
            "wrong scale 1/√d_v",
            f"the scores were divided by √d_v = {math.sqrt(d_v):.3g}; the scale comes from "
            f"the width of q and k, d_k = {d_k}: divide by √d_k = {root:g}.",
            masked_softmax(attention_scores(q, k, 1.0 / math.sqrt(d_v)), mask),
        ),
    ]
    scores = attention_scores(q, k)  # (B, H, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    axis_names = {0: "the batch B", 1: "the heads H", -2: "the queries T_q"}
    for dim, axis in axis_names.items():
        mistakes.append(
            Mistake(
                f"softmax over the wrong axis (dim={dim})",
                f"softmax ran over {axis} (dim={dim} of (B, H, T_q, T_k)). Each query "
                "spreads its weight over the keys: use softmax(dim=-1).",
                torch.softmax(scores, dim=dim),
            )
        )
    if mask is not None:
        unmasked = attention_scores(q, k)
        mistakes += [
            Mistake(
                "mask ignored",
                "the weights are the same as with no mask. Set the scores of blocked keys "
                "(mask False) to -inf before the softmax, e.g. "
                "scores.masked_fill(~mask, float('-inf')).",
                torch.softmax(unmasked, dim=-1),
            ),
            Mistake(
                "flipped mask convention",
                "keys were blocked where the mask is True. In this book (and in "
                "torch.nn.functional.scaled_dot_product_attention) True means *may attend*: "
                "block where the mask is False, e.g. scores.masked_fill(~mask, float('-inf')).",
                masked_softmax(unmasked, ~mask),
            ),
            Mistake(
                "mask filled with 0",
                "blocked scores were set to 0, which still leaves them weight after the "
                "softmax. Set them to -inf (or a very negative number).",
                torch.softmax(unmasked.masked_fill(~mask, 0.0), dim=-1),
            ),
            Mistake(
                "mask applied after the softmax",
                "the weights were zeroed after the softmax, so the rest no longer sum to 1. "
                "Block the scores before the softmax instead.",
                torch.softmax(unmasked, dim=-1) * mask,
            ),
        ]
    return mistakes


def _diagnose_weights(check: str, weights: Tensor, mask: Tensor | None) -> None:
    """General findings about wrong weights (B, H, T_q, T_k) that match no single mistake."""
    if not torch.isfinite(weights).all():
        fail(
            check,
            "your weights contain NaN or inf. A softmax over a row where every score is "
            "-inf gives NaN: is the mask blocking every key of some query?",
        )
    if mask is not None and (weights.masked_select(~mask.expand_as(weights)) != 0).any():
        fail(
            check,
            "your weights give weight to keys the mask blocks (mask False = may not attend). "
            "Set those scores to -inf before the softmax.",
        )
    if same(weights.sum(-1), torch.ones(weights.shape[:-1])):
        return
    for dim, axis in ((-2, "the queries T_q"), (1, "the heads H"), (0, "the batch B")):
        sums = weights.sum(dim)
        if same(sums, torch.ones_like(sums)):
            fail(
                check,
                f"your weights sum to 1 over {axis} (dim={dim}), not over the keys. "
                "Softmax belongs on the last axis, T_k: use softmax(dim=-1).",
            )
    sums = weights.sum(-1)
    fail(
        check,
        "each query's weights should sum to 1 over the keys; yours sum to between "
        f"{sums.min().item():.3g} and {sums.max().item():.3g}. Is something applied after "
        "the softmax?",
    )


def _check_result(check: str, result: Any, call: str, inputs: dict[str, Tensor]) -> tuple:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        kind = type(result).__name__
        if isinstance(result, (tuple, list)):
            kind = f"a {kind} of {len(result)} items"
        fail(check, f"{call} should return two tensors, (output, weights); it returned {kind}")
    output, weights = result
    B_, H_, T_q, T_k, d_v = q.shape[0], q.shape[1], q.shape[2], k.shape[2], v.shape[-1]
    out_shape, w_shape = (B_, H_, T_q, d_v), (B_, H_, T_q, T_k)
    if (
        isinstance(output, Tensor)
        and isinstance(weights, Tensor)
        and tuple(output.shape) == w_shape
        and tuple(weights.shape) == out_shape
    ):
        fail(check, f"{call} returned (weights, output); return (output, weights) in that order")
    expect_shape(check, weights, w_shape, "the weights (second result)", "(B, H, T_q, T_k)")
    expect_shape(check, output, out_shape, "the output (first result)", "(B, H, T_q, d_v)")
    return output.detach(), weights.detach()


def check_attention(fn: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Check a learner's ``fn(q, k, v, mask=None) -> (output, weights)``; feedback on failure.

    ``fn`` takes q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) and a
    boolean mask broadcastable to (..., T_q, T_k), True = may attend, like
    :func:`tutorial_lib.attention.scaled_dot_product_attention`. It is called
    twice, without and with a mask, on the inputs of
    :func:`attention_check_inputs`. Raises AssertionError naming what is wrong
    (missing or wrong scaling, softmax over the wrong axis, mask ignored or
    flipped, wrong shapes, ...); returns None when everything matches.
    """
    check = "check_attention"
    inputs = attention_check_inputs()
    q, k, v, mask = inputs["q"], inputs["k"], inputs["v"], inputs["mask"]
    reference = "softmax(q kᵀ / √d_k)"

    for this_mask, call in ((None, "fn(q, k, v)"), (mask, "fn(q, k, v, mask=mask)")):
        kwargs = {} if this_mask is None else {"mask": this_mask}
        result = call_learner(check, fn, q, k, v, call=call, names=("q", "k", "v"), **kwargs)
        output, weights = _check_result(check, result, call, inputs)
        expected_output, expected_weights = scaled_dot_product_attention(q, k, v, mask=this_mask)
        where = "" if this_mask is None else " with a mask"
        compare_and_explain(
            check,
            f"your weights{where}",
            weights,
            expected_weights,
            _attention_mistakes(q, k, v, this_mask),
            reference,
            diagnose=lambda w, m=this_mask: _diagnose_weights(check, w, m),
        )
        if not same(output, expected_output):
            difference = (output.to(expected_output.dtype) - expected_output).abs().max().item()
            fail(
                check,
                f"your weights{where} are right, but the output differs from weights @ v by up "
                f"to {difference:.3g}. The output is weights @ v: (B, H, T_q, T_k) @ "
                "(B, H, T_k, d_v) -> (B, H, T_q, d_v).",
            )


def check_causal_mask(fn: Callable[[int], Tensor]) -> None:
    """Check a learner's ``fn(T) -> (T, T)`` boolean causal mask, True = may attend.

    Position i may attend to keys j <= i. Catches a mask that lets the past see
    the future, the flipped convention, a mask that hides the diagonal, and
    non-boolean masks.
    """
    check = "check_causal_mask"
    T = 5
    mask = call_learner(check, fn, T, call=f"fn({T})", names=("T",))
    expect_shape(check, mask, (T, T), f"fn({T})", "(T, T)")
    if mask.dtype != torch.bool:
        fail(check, f"the mask should be boolean (True = may attend); got dtype {mask.dtype}")
    expected = torch.ones(T, T, dtype=torch.bool).tril()
    if torch.equal(mask, expected):
        return
    future = (mask & ~expected).nonzero().tolist()
    if torch.equal(mask, ~expected):
        fail(
            check,
            "your mask is True where a query must NOT look: in this book True means "
            "*may attend*, so row i is True for j <= i (use .tril(), not .triu(1)).",
        )
    if torch.equal(mask, expected.tril(-1)):
        fail(
            check,
            "your mask hides the diagonal: position i may attend to itself (j = i), "
            "so use .tril() (diagonal=0), not .tril(-1).",
        )
    if future:
        i, j = future[0]
        fail(
            check,
            f"the future leaks: query {i} may attend to key {j} > {i}. Row i must be "
            "False for every j > i.",
        )
    i, j = (expected & ~mask).nonzero().tolist()[0]
    fail(check, f"query {i} may not attend to key {j} <= {i}, which it should.")


# -- multi-head shapes (chapter Q1) ------------------------------------------------------


def check_multihead(fn: Callable[..., Tensor]) -> None:
    """Check ``fn(x, w_q, w_k, w_v, w_o, n_head) -> (B, T, D)``, multi-head self-attention.

    x is (B, T, D); the four weights are (D, D) matrices used as ``x @ w``; head h
    uses columns h*d_k ... (h+1)*d_k - 1 with d_k = D / n_head; no residual and no
    LayerNorm (chapter Q1's exercise). Catches a single head over all of D, the
    scale 1/sqrt(D) instead of 1/sqrt(d_k), heads split along the wrong axis, and
    a missing output projection.
    """
    check = "check_multihead"
    g = torch.Generator().manual_seed(1)
    Bn, T, D, Hn = 2, 4, 12, 3
    x = torch.randn(Bn, T, D, generator=g)
    w_q, w_k, w_v, w_o = (torch.randn(D, D, generator=g) / math.sqrt(D) for _ in range(4))
    out = call_learner(
        check,
        fn,
        x,
        w_q,
        w_k,
        w_v,
        w_o,
        Hn,
        call="fn(x, w_q, w_k, w_v, w_o, n_head)",
        names=("x", "w_q", "w_k", "w_v", "w_o", "n_head"),
    )
    expect_shape(check, out, (Bn, T, D), "the output", "(B, T, D)")
    d_k = D // Hn

    def heads(t):  # (B, T, D) -> (B, H, T, d_k)
        return t.view(Bn, T, Hn, d_k).transpose(1, 2)

    def run(q, k, v, scale):
        o, _ = scaled_dot_product_attention(q, k, v, scale=scale)
        return o

    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, D)
    concat = run(heads(q), heads(k), heads(v), None).transpose(1, 2).reshape(Bn, T, D)
    expected = concat @ w_o

    def wrong_split(t):  # the last axis read as (d_k, H) instead of (H, d_k)
        return t.view(Bn, T, d_k, Hn).permute(0, 3, 1, 2)

    wrong = run(wrong_split(q), wrong_split(k), wrong_split(v), None)
    mistakes = [
        Mistake(
            "one head over all of D",
            f"this is single-head attention of width D = {D}. Split q, k and v into "
            f"n_head = {Hn} slices of d_k = {d_k} columns and attend in each slice.",
            run(q, k, v, 1 / math.sqrt(D)) @ w_o,
        ),
        Mistake(
            "scale 1/sqrt(D)",
            f"each head's scores were divided by sqrt(D) = {math.sqrt(D):.3g}; a head has "
            f"width d_k = {d_k}, so divide by sqrt(d_k) = {math.sqrt(d_k):.3g}.",
            run(heads(q), heads(k), heads(v), 1 / math.sqrt(D)).transpose(1, 2).reshape(Bn, T, D)
            @ w_o,
        ),
        Mistake(
            "heads split along the wrong axis",
            "head h must use the contiguous columns h*d_k ... (h+1)*d_k - 1 (a view as "
            "(B, T, H, d_k)), not every n_head-th column.",
            wrong.transpose(1, 2).reshape(Bn, T, D) @ w_o,
        ),
        Mistake(
            "missing output projection",
            "the heads were concatenated but not mixed: multiply the concatenation by w_o.",
            concat,
        ),
    ]
    compare_and_explain(
        check, "your output", out.detach(), expected, mistakes, "concat(head_1, ..., head_H) @ w_o"
    )

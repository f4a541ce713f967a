"""Self-checks learners call on their own implementations: compare, then explain.

A check runs the learner's function on small inputs chosen so that the common
mistakes give visibly different answers, compares the result with the book's
reference, and, when they differ, computes what each known mistake would have
returned to name the one that was made. It raises ``AssertionError`` with that
feedback, or returns quietly. Checks for later chapters use the same helpers:
:func:`call_learner`, :func:`expect_shape`, :func:`compare_and_explain` with a
list of :class:`Mistake`.

Dimension letters, fixed book-wide:
    B    batch size
    H    n_head, the number of heads
    T    sequence length (T_q for queries, T_k for keys and values)
    d_k  per-head width of queries and keys
    d_v  per-head width of values

Mask convention: boolean, True = may attend.

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import torch
from torch import Tensor

from .attention import attention_scores, masked_softmax, scaled_dot_product_attention

__all__ = [
    "Mistake",
    "fail",
    "call_learner",
    "expect_shape",
    "same",
    "compare_and_explain",
    "attention_check_inputs",
    "check_attention",
    "check_causal_mask",
    "check_multihead",
    "check_layer_norm",
    "check_sinusoidal_encoding",
    "check_rope",
]

# Tolerances for float32 results that should agree up to rounding.
ATOL, RTOL = 1e-5, 1e-4


# -- shared helpers: compare and explain ------------------------------------------------


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: what it is called, what to change, and what it returns."""

    name: str  # short name, e.g. "missing scaling"
    explanation: str  # what went wrong and what to change, in the book's letters
    result: Tensor  # what a function with this mistake returns on the check's inputs


def fail(check: str, message: str) -> NoReturn:
    """Raise the AssertionError a learner sees: the check's name, then the feedback."""
    raise AssertionError(f"{check}: {message}")


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def call_learner(
    check: str,
    fn: Callable,
    *args: Any,
    call: str,
    names: Sequence[str] = (),
    **kwargs: Any,
) -> Any:
    """Call the learner's ``fn`` on copies of the inputs; a crash or an in-place edit is feedback.

    ``call`` is how the call reads to a learner, e.g. ``"fn(q, k, v)"``; ``names``
    names the positional arguments in messages.
    """
    copies = [a.clone() if isinstance(a, Tensor) else a for a in args]
    kw_copies = {n: v.clone() if isinstance(v, Tensor) else v for n, v in kwargs.items()}
    try:
        result = fn(*copies, **kw_copies)
    except Exception as error:  # any crash is something to explain, not to hide
        fail(check, f"calling {call} raised {type(error).__name__}: {error}")
    labels = [names[i] if i < len(names) else f"argument {i + 1}" for i in range(len(args))]
    for name, before, after in zip(
        [*labels, *kwargs], [*args, *kwargs.values()], [*copies, *kw_copies.values()], strict=True
    ):
        if isinstance(before, Tensor) and not torch.equal(before, after):
            fail(
                check,
                f"{call} changed its input {name} in place (e.g. `q /= ...` or "
                "`masked_fill_`); work on new tensors so the caller's inputs stay intact",
            )
    return result


def expect_shape(check: str, tensor: Any, expected: Sequence[int], name: str, letters: str) -> None:
    """Fail unless ``tensor`` is a Tensor of shape ``expected``, written ``letters`` in the book."""
    if not isinstance(tensor, Tensor):
        fail(check, f"{name} should be a torch.Tensor {letters}; got {type(tensor).__name__}")
    if tuple(tensor.shape) != tuple(expected):
        fail(
            check,
            f"{name} should have shape {letters} = {_shape(expected)}; got {_shape(tensor.shape)}",
        )


def same(a: Tensor, b: Tensor, atol: float = ATOL, rtol: float = RTOL) -> bool:
    """True when a and b have the same shape and agree up to float32 rounding (NaN = NaN)."""
    return a.shape == b.shape and torch.allclose(
        a.detach().to(b.dtype), b, atol=atol, rtol=rtol, equal_nan=True
    )


def compare_and_explain(
    check: str,
    what: str,
    actual: Tensor,
    expected: Tensor,
    mistakes: Sequence[Mistake],
    reference: str,
    diagnose: Callable[[Tensor], None] | None = None,
) -> None:
    """Return if ``actual`` matches ``expected``; otherwise explain the difference.

    First the known ``mistakes`` are tried (the most specific feedback); then
    ``diagnose(actual)``, which may fail with a more general finding (e.g. rows
    that do not sum to 1); then a plain report of the largest difference.
    ``what`` names the compared thing ("your weights"); ``reference`` says how
    the expected value is computed.
    """
    if same(actual, expected):
        return
    for mistake in mistakes:
        if same(actual, mistake.result):
            fail(check, f"{what} match a common mistake ({mistake.name}): {mistake.explanation}")
    if diagnose is not None:
        diagnose(actual)
    difference = (actual.detach().to(expected.dtype) - expected).abs().max().item()
    fail(
        check,
        f"{what} differ from {reference} by up to {difference:.3g}, and match none of the "
        f"common mistakes checked ({', '.join(m.name for m in mistakes)}).",
    )


# -- attention ---------------------------------------------------------------------------

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


# -- masks (chapter Q1, and the whole-Transformer chapter) -------------------------------


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


# -- LayerNorm (chapter Q4) --------------------------------------------------------------


def check_layer_norm(fn: Callable[..., Tensor]) -> None:
    """Check ``fn(x, gamma, beta, eps=1e-5) -> y`` for x (B, T, D), gamma and beta (D,).

    Each token is normalised over its D features with the biased variance, then
    scaled by gamma and shifted by beta. Catches normalising over the wrong axis
    (BatchNorm's or the whole sequence's), the unbiased variance, eps outside the
    square root, and gamma/beta left out.
    """
    check = "check_layer_norm"
    g = torch.Generator().manual_seed(2)
    Bn, T, D = 3, 4, 6
    x = 2.0 + 3.0 * torch.randn(Bn, T, D, generator=g)
    gamma, beta = 1 + torch.rand(D, generator=g), torch.randn(D, generator=g)
    eps = 1e-1  # large, so where eps goes shows in the result
    y = call_learner(
        check,
        fn,
        x,
        gamma,
        beta,
        eps=eps,
        call="fn(x, gamma, beta, eps=0.1)",
        names=("x", "gamma", "beta"),
    )
    expect_shape(check, y, (Bn, T, D), "the output", "(B, T, D)")

    def norm(dims, unbiased=False, eps_inside=True):
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, keepdim=True, unbiased=unbiased)
        z = (x - mean) / (var + eps).sqrt() if eps_inside else (x - mean) / (var.sqrt() + eps)
        return z * gamma + beta

    expected = torch.nn.functional.layer_norm(x, (D,), gamma, beta, eps)
    mistakes = [
        Mistake(
            "statistics over the batch and positions (BatchNorm's axes)",
            "each feature was normalised over all B*T tokens. LayerNorm normalises each "
            "token over its own D features: mean and variance over dim=-1.",
            norm((0, 1)),
        ),
        Mistake(
            "statistics over the whole sequence",
            "each sequence was normalised over all its T*D numbers. LayerNorm keeps one "
            "mean and variance per token: over dim=-1 only.",
            norm((1, 2)),
        ),
        Mistake(
            "unbiased variance",
            "the variance divides by D - 1; LayerNorm (and nn.LayerNorm) divides by D: "
            "use var(dim=-1, unbiased=False).",
            norm(-1, unbiased=True),
        ),
        Mistake(
            "eps outside the square root",
            "eps was added to the standard deviation; it belongs inside: "
            "(x - mean) / sqrt(var + eps).",
            norm(-1, eps_inside=False),
        ),
        Mistake(
            "gamma and beta left out",
            "the normalised tokens were returned as they are: multiply by gamma and add beta.",
            (norm(-1) - beta) / gamma,
        ),
    ]
    compare_and_explain(
        check,
        "your output",
        y.detach(),
        expected,
        mistakes,
        "nn.functional.layer_norm over the last axis",
    )


# -- positions (chapters Q3a and Q3b) ----------------------------------------------------


def check_sinusoidal_encoding(fn: Callable[[int, int], Tensor]) -> None:
    """Check ``fn(max_len, d_model) -> (max_len, d_model)``, the paper's sinusoidal encoding.

    Even columns 2i hold sin(p / 10000^(2i/D)), odd columns 2i+1 hold the cos of
    the same angle. Catches sin and cos swapped, the two halves side by side
    instead of interleaved, and the exponent i/D instead of 2i/D.
    """
    from .positional import sinusoidal_encoding

    check = "check_sinusoidal_encoding"
    L, D = 12, 8
    pe = call_learner(check, fn, L, D, call=f"fn({L}, {D})", names=("max_len", "d_model"))
    expect_shape(check, pe, (L, D), f"fn({L}, {D})", "(max_len, d_model)")
    expected = sinusoidal_encoding(L, D)
    p = torch.arange(L, dtype=torch.float64)[:, None]
    i = torch.arange(D // 2, dtype=torch.float64)
    angle = p / 10000 ** (2 * i / D)  # (L, D/2)
    angle_i = p / 10000 ** (i / D)
    mistakes = [
        Mistake(
            "sin and cos swapped",
            "even columns take sin, odd columns cos.",
            torch.stack([angle.cos(), angle.sin()], -1).flatten(-2).float(),
        ),
        Mistake(
            "halves instead of interleaved",
            "the sines fill the first D/2 columns and the cosines the rest; the paper "
            "interleaves them: column 2i is sin, column 2i+1 is cos of the same angle.",
            torch.cat([angle.sin(), angle.cos()], -1).float(),
        ),
        Mistake(
            "exponent i/D",
            "the frequency of pair i is 1/10000^(2i/D), not 1/10000^(i/D).",
            torch.stack([angle_i.sin(), angle_i.cos()], -1).flatten(-2).float(),
        ),
    ]
    compare_and_explain(
        check,
        "your encoding",
        pe.detach().float(),
        expected.float(),
        mistakes,
        "the paper's formula (Vaswani et al. 2017, section 3.5)",
    )


def check_rope(fn: Callable[[Tensor, Tensor], Tensor]) -> None:
    """Check ``fn(x, positions) -> rotated x`` for x (..., T, d): RoPE, RoFormer's layout.

    Pair (2i, 2i+1) turns by positions * 10000^(-2i/d). Catches the rotation the
    wrong way round, the GPT-NeoX pairing (i, i + d/2), and the exponent i/d.
    Also checks the property that matters: scores depend only on m - n.
    """
    from .positional import apply_rope

    check = "check_rope"
    g = torch.Generator().manual_seed(3)
    T, d = 6, 8
    x = torch.randn(2, T, d, generator=g)
    positions = torch.arange(T)
    out = call_learner(check, fn, x, positions, call="fn(x, positions)", names=("x", "positions"))
    expect_shape(check, out, (2, T, d), "fn(x, positions)", "(B, T, d)")
    expected = apply_rope(x, positions)
    mistakes = [
        Mistake(
            "rotation the wrong way round",
            "each pair turned by minus the angle: the first output of a pair is "
            "x1 cos - x2 sin, the second x1 sin + x2 cos.",
            apply_rope(x, -positions),
        ),
        Mistake(
            "pairs (i, i + d/2)",
            "that is GPT-NeoX's layout; the RoFormer paper rotates adjacent pairs "
            "(2i, 2i+1). Both work if used consistently, but this check follows the paper.",
            apply_rope(x, positions, layout="half"),
        ),
        Mistake(
            "exponent i/d",
            "pair i turns by position * 10000^(-2i/d), not 10000^(-i/d).",
            apply_rope(x, positions, base=10000.0**0.5),
        ),
    ]
    compare_and_explain(
        check,
        "your rotated x",
        out.detach(),
        expected,
        mistakes,
        "apply_rope (RoFormer, Su et al.)",
    )

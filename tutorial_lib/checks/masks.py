"""Self-check for a learner's causal mask (chapters Q1 and Q5).

Dimension letters: T sequence length; a mask is (T_q, T_k) = (T, T), boolean, True = may attend.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .engine import call_learner, fail

__all__ = ["check_causal_mask", "LENGTHS", "OTHER_LENGTHS"]

LENGTHS = (5, 1, 3, 8)  # the first one is the usual example; the others catch a fixed size
OTHER_LENGTHS = (7, 2, 11, 4)  # what a grader tries beyond the learner's own check


def _one_length(check: str, fn: Callable[[int], Tensor], T: int, first: int | None) -> tuple:
    call = f"fn({T})"
    mask = call_learner(check, fn, T, call=call, names=("T",))
    if not isinstance(mask, Tensor):
        fail(check, f"{call} should return a torch.Tensor (T, T); got {type(mask).__name__}")
    shape = tuple(mask.shape)
    if shape != (T, T):
        if first is not None and shape == (first, first):
            fail(
                check,
                f"{call} returned shape {shape}, the same as for T = {first}: the size "
                "seems fixed. Build the mask from the argument T, e.g. torch.ones(T, T).",
            )
        if shape[-2:] == (T, T):
            fail(
                check,
                f"{call} should return (T, T) = ({T}, {T}); got {shape}: drop the "
                "extra axes (attention broadcasts a (T, T) mask over the batch and heads)",
            )
        fail(check, f"{call} should return (T, T) = ({T}, {T}); got {shape}")
    return call, mask


def _explain_float(check: str, call: str, mask: Tensor, expected: Tensor) -> None:
    values = set(torch.unique(mask).tolist())
    if values <= {0.0, float("-inf")} and torch.equal(mask == 0, expected):
        fail(
            check,
            f"{call} is an additive mask (0 where allowed, -inf where blocked). This "
            "book's masks are boolean, True = may attend: return the boolean one and let "
            "attention turn it into -inf (e.g. torch.ones(T, T, dtype=torch.bool).tril()).",
        )
    if values <= {0.0, 1.0} and torch.equal(mask == 1, expected):
        fail(
            check,
            f"{call} has the right pattern but dtype {mask.dtype}; masks are boolean "
            "(True = may attend): add dtype=torch.bool, or compare with `== 1`.",
        )
    fail(check, f"the mask should be boolean (True = may attend); {call} has dtype {mask.dtype}")


def check_causal_mask(fn: Callable[[int], Tensor], *, lengths: tuple = LENGTHS) -> None:
    """Check a learner's ``fn(T) -> (T, T)`` boolean causal mask, True = may attend.

    Position i may attend to keys j <= i. Tried for several T (so a size fixed in the code
    shows). Catches a mask that lets the past see the future, the flipped convention
    (``triu``), a mask that hides the diagonal, an additive (0 / -inf) or 0/1 float mask,
    and extra axes; each with how to fix it. ``lengths`` are the T tried (a grader's hidden
    test passes OTHER_LENGTHS); the default is what a learner's call tries.
    """
    check = "check_causal_mask"
    for T in lengths:
        call, mask = _one_length(check, fn, T, None if T == lengths[0] else lengths[0])
        expected = torch.ones(T, T, dtype=torch.bool).tril()
        if mask.dtype != torch.bool:
            _explain_float(check, call, mask, expected)
        if torch.equal(mask, expected):
            continue
        if torch.equal(mask, ~expected):
            fail(
                check,
                f"{call} is True where a query must NOT look: in this book True means "
                "*may attend*, so row i is True for j <= i (use .tril(), not .triu(1)).",
            )
        if torch.equal(mask, expected.T):
            fail(
                check,
                f"{call} is the transpose of a causal mask: row i (the query) must be "
                "True for keys j <= i, so the mask is lower-triangular, .tril(), not .triu().",
            )
        if torch.equal(mask, expected.tril(-1)):
            fail(
                check,
                f"{call} hides the diagonal: position i may attend to itself (j = i), "
                "so use .tril() (diagonal=0), not .tril(-1).",
            )
        future = (mask & ~expected).nonzero().tolist()
        if future:
            i, j = future[0]
            fail(
                check,
                f"in {call} the future leaks: query {i} may attend to key {j} > {i}. "
                "Row i must be False for every j > i.",
            )
        i, j = (expected & ~mask).nonzero().tolist()[0]
        fail(check, f"in {call} query {i} may not attend to key {j} <= {i}, which it should.")

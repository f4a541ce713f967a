"""The feedback engine of the self-checks: call the learner's function safely, compare, explain.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import torch
from torch import Tensor

from ..attention import format_shape

__all__ = [
    "Mistake",
    "fail",
    "call_learner",
    "expect_shape",
    "same",
    "compare_and_explain",
    "ATOL",
    "RTOL",
]

# Tolerances for float32 results that should agree up to rounding.
ATOL, RTOL = 1e-5, 1e-4


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: what it is called, what to change, and what it returns."""

    name: str  # short name, e.g. "missing scaling"
    explanation: str  # what went wrong and what to change, in the book's letters
    result: Tensor  # what a function with this mistake returns on the check's inputs


def fail(check: str, message: str) -> NoReturn:
    """Raise the AssertionError a learner sees: the check's name, then the feedback."""
    raise AssertionError(f"{check}: {message}")


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
            f"{name} should have shape {letters} = {format_shape(expected)}; "
            f"got {format_shape(tensor.shape)}",
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

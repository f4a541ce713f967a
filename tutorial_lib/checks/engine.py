"""The feedback engine of the self-checks: call the learner's function safely, compare, explain.

A check runs the learner's function on several small configurations chosen so that the
common mistakes give visibly different answers, compares each result with the book's
reference, and, when they differ, computes what each known mistake would have returned
to name the one that was made and say how to fix it. It raises ``AssertionError`` with
that feedback, or returns quietly. Every check module uses the same few helpers:
:func:`call_learner`, :func:`expect_tensor`, :func:`compare_and_explain` with a list of
:class:`Mistake`.

Dimension letters, fixed book-wide: B batch, H heads, T sequence length (T_q for
queries, T_k for keys and values), D = d_model, d_k and d_v per-head widths.

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

from __future__ import annotations

import inspect
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
    "expect_tensor",
    "expect_shape",
    "same",
    "compare_and_explain",
    "describe",
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


def describe(**sizes: Any) -> str:
    """A configuration in the book's letters: ``describe(B=2, T=5)`` -> ``"B=2, T=5"``."""
    return ", ".join(f"{name}={value}" for name, value in sizes.items())


def _signature_problem(fn: Callable, args: tuple, kwargs: dict) -> str | None:
    """Why ``fn`` cannot take these arguments, or None (also when Python cannot tell)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C function: let the call speak
        return None
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        name = getattr(fn, "__name__", "your function")
        return f"{name}{signature} cannot be called this way ({error})"
    return None


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
    names the positional arguments in messages. A signature that does not fit, an
    exception inside ``fn`` and an input changed in place each get a message that says
    what happened and what the check expected, instead of a traceback from the check.
    """
    if not callable(fn):
        fail(check, f"expected a function to call as {call}; got {type(fn).__name__}")
    problem = _signature_problem(fn, args, kwargs)
    if problem:
        fail(check, f"the check calls {call}, but {problem}. Give your function that signature.")
    copies = [a.clone() if isinstance(a, Tensor) else a for a in args]
    kw_copies = {n: v.clone() if isinstance(v, Tensor) else v for n, v in kwargs.items()}
    try:
        result = fn(*copies, **kw_copies)
    except Exception as error:  # any crash is something to explain, not to hide
        hint = ""
        if isinstance(error, RuntimeError) and ("size" in str(error) or "shape" in str(error)):
            hint = (
                " The shapes inside your function do not fit together: print each tensor's "
                "shape and compare it with the book's letters."
            )
        arguments = ", ".join(
            f"{n} {format_shape(a)}" if isinstance(a, Tensor) else f"{n}={a!r}"
            for n, a in zip([*names, *kwargs], [*args, *kwargs.values()], strict=False)
        )
        fail(
            check, f"calling {call} with {arguments} raised {type(error).__name__}: {error}.{hint}"
        )
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


def expect_tensor(check: str, value: Any, what: str, letters: str, shape: Sequence[int]) -> Tensor:
    """``value`` as a tensor of shape ``shape`` (written ``letters``), or a failure that says
    what came back instead. A numpy array is accepted and converted."""
    if not isinstance(value, Tensor):
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy comes with torch
            np = None
        if np is not None and isinstance(value, np.ndarray):
            value = torch.from_numpy(value)
        else:
            fail(check, f"{what} should be a torch.Tensor {letters}; got {type(value).__name__}")
    expect_shape(check, value, shape, what, letters)
    return value.detach()


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
    if a.shape != b.shape:
        return False
    if a.dtype == torch.bool or b.dtype == torch.bool:
        return a.dtype == b.dtype and torch.equal(a, b)
    return torch.allclose(
        a.detach().to(torch.float64),
        b.detach().to(torch.float64),
        atol=atol,
        rtol=rtol,
        equal_nan=True,
    )


def compare_and_explain(
    check: str,
    what: str,
    actual: Tensor,
    expected: Tensor,
    mistakes: Sequence[Mistake],
    reference: str,
    diagnose: Callable[[Tensor], None] | None = None,
    config: str = "",
) -> None:
    """Return if ``actual`` matches ``expected``; otherwise explain the difference.

    First NaN or inf where the reference is finite; then the known ``mistakes`` (the most
    specific feedback); then ``diagnose(actual)``, which may fail with a more general
    finding (e.g. rows that do not sum to 1); then a plain report of the largest
    difference. ``what`` names the compared thing ("your weights"); ``reference`` says
    how the expected value is computed; ``config`` names the sizes tried.
    """
    if same(actual, expected):
        return
    where = f" (for {config})" if config else ""
    bad = ~torch.isfinite(actual.to(torch.float64)) & torch.isfinite(expected.to(torch.float64))
    if bad.any():
        first = tuple(bad.nonzero()[0].tolist())
        fail(
            check,
            f"{what}{where} contains NaN or inf, at {int(bad.sum())} place(s), the first at "
            f"index {first}, where {reference} is finite. A NaN usually comes from 0/0, the "
            "square root or log of a negative number, or a softmax over a row of -inf only.",
        )
    for mistake in mistakes:
        if same(actual, mistake.result):
            fail(
                check,
                f"{what}{where} shows a common mistake, {mistake.name}: {mistake.explanation}",
            )
    if diagnose is not None:
        diagnose(actual)
    difference = (actual.to(torch.float64) - expected.to(torch.float64)).abs().max().item()
    fail(
        check,
        f"{what}{where} is off from {reference} by up to {difference:.3g}, and it shows none "
        f"of the common mistakes checked ({', '.join(m.name for m in mistakes)}).",
    )

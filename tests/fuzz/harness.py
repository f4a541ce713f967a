"""The fuzz suite's machinery: how an entry describes its inputs, and what every call must do.

An entry (:class:`Spec`) says how to draw a *legal* call (sizes that fit together, tensors of
any float dtype) and which of its arguments are scalars of a known kind. The runner then
either makes the legal call and checks it (no exception, no NaN or inf from finite input, the
entry's own shape and dtype checks), or spoils exactly one argument and checks that the
library itself raises ValueError or TypeError naming that argument: a ``raise`` statement in
``tutorial_lib``, never an error from inside torch or Python.
"""

from __future__ import annotations

import math
import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

import tutorial_lib

LIB = os.path.dirname(tutorial_lib.__file__)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
NAN, INF = float("nan"), float("inf")


# -- scalars: legal and illegal values by kind -------------------------------------------------


@dataclass
class Param:
    """A scalar argument: its kind, and the names an error about it may use."""

    kind: str  # "int", "even", "real", "bool", "choice"
    minimum: float | None = None  # int/even/real: the smallest legal value (None: no bound)
    above: float | None = None  # real: legal values are strictly above this
    maximum: float | None = None  # real: the largest legal value
    options: tuple = ()  # choice: the legal values
    optional: bool = False  # None is legal
    aliases: tuple[str, ...] = ()  # other names an error may use for it (a letter: "H")


def bad_values(p: Param) -> st.SearchStrategy:
    """Values no argument of this kind may take."""
    common = [st.just("3"), st.just([1]), st.just(object())]
    if not p.optional:
        common.append(st.none())
    if p.kind in ("int", "even"):
        bad = [st.booleans(), st.floats(allow_nan=True), st.just(np.float64(2.0))]
        if p.minimum is not None:
            bad.append(st.integers(max_value=int(p.minimum) - 1))
        if p.kind == "even":
            bad.append(st.integers(0, 50).map(lambda n: 2 * n + 1))
        return st.one_of(*bad, *common)
    if p.kind == "real":
        bad = [st.sampled_from([NAN, INF, -INF]), st.booleans(), st.just(torch.ones(2))]
        if p.minimum is not None:
            bad.append(st.floats(max_value=p.minimum, exclude_max=True, allow_infinity=False))
        if p.above is not None:
            bad.append(st.floats(max_value=p.above, allow_infinity=False))
        if p.maximum is not None:
            bad.append(st.floats(min_value=p.maximum, exclude_min=True, allow_infinity=False))
        return st.one_of(*bad, *common)
    if p.kind == "bool":
        return st.one_of(st.sampled_from(["yes", "False", 2, 1.0]), *common)
    if p.kind == "choice":
        return st.one_of(st.sampled_from(["nope", 7, True]), *common).filter(
            lambda v: not isinstance(v, str) or v not in p.options
        )
    raise AssertionError(f"unknown kind {p.kind}")


def as_any_integer(draw, value: int):
    """The same integer as a Python, NumPy or 0-d tensor integer: all are integers."""
    return draw(st.sampled_from([int, np.int64, np.int32, lambda v: torch.tensor(v)]))(value)


# -- one entry ----------------------------------------------------------------------------------


@dataclass
class Call:
    """A drawn call: the function, its keyword arguments, and what to check on the result."""

    function: Callable[..., Any]
    kwargs: dict[str, Any]
    check: Callable[[Any, dict[str, Any]], None] | None = None


@dataclass
class Spec:
    """How to fuzz one public name.

    ``legal(draw)`` returns a :class:`Call` that must succeed. ``params`` lists its scalar
    arguments: the runner may replace one with a bad value (and expect an error naming it).
    ``illegal(draw)`` returns (Call, names) for illegal inputs that are not a single scalar:
    shapes, dtypes, masks, relations between sizes. ``examples`` bounds the runtime.
    """

    legal: Callable[[Callable], Call]
    params: dict[str, Param] = field(default_factory=dict)
    illegal: Callable[[Callable], tuple[Call, tuple[str, ...]]] | None = None
    examples: int = 12


class Registry:
    """The entries of one specs module: ``spec(name)`` registers a legal-call drawer,
    ``illegal(name)`` adds the drawer of illegal calls to it."""

    def __init__(self, exempt: dict[str, str] | None = None):
        self.specs: dict[str, Spec] = {}
        self.exempt = exempt or {}

    def spec(self, name: str, **kwargs):
        def register(legal):
            self.specs[name] = Spec(legal, **kwargs)
            return legal

        return register

    def illegal(self, name: str):
        def register(function):
            self.specs[name].illegal = function
            return function

        return register


def raised_by_library(error: BaseException) -> bool:
    """True if a ``raise`` statement of tutorial_lib raised it (not an operation inside it)."""
    frames = traceback.extract_tb(error.__traceback__)
    return (
        bool(frames) and frames[-1].filename.startswith(LIB) and frames[-1].line.startswith("raise")
    )


def names_one_of(message: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", message) for n in names)


def expect_library_error(call: Call, names: tuple[str, ...]) -> None:
    try:
        result = call.function(**call.kwargs)
    except (ValueError, TypeError) as error:
        where = traceback.format_exception(error)[-3:]
        assert raised_by_library(error), f"an error from inside torch/Python: {''.join(where)}"
        assert names_one_of(str(error), names), f"{error!r} does not name any of {names}"
        return
    except Exception as error:  # noqa: BLE001 - the point: no other kind of error
        raise AssertionError(f"{type(error).__name__} instead of a ValueError: {error}") from error
    raise AssertionError(
        f"illegal input accepted (expected an error naming {names}): {result!r:.200}"
    )


def tensors_in(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from tensors_in(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from tensors_in(v)
    elif hasattr(x, "__dataclass_fields__"):
        for name in x.__dataclass_fields__:
            yield from tensors_in(getattr(x, name))


def all_finite(x) -> bool:
    return all(torch.isfinite(t).all() for t in tensors_in(x) if t.is_floating_point())


def expect_success(call: Call) -> None:
    inputs_finite = all_finite(call.kwargs)
    result = call.function(**call.kwargs)
    if inputs_finite:
        assert all_finite(result), "NaN or inf from finite input"
    if call.check is not None:
        call.check(result, call.kwargs)


def run(spec: Spec, draw: Callable) -> None:
    """One example: a legal call, or one argument spoilt."""
    modes = ["legal"] + [f"param:{p}" for p in spec.params] + (["illegal"] if spec.illegal else [])
    mode = draw(st.sampled_from(modes))
    if mode == "illegal":
        call, names = spec.illegal(draw)
        expect_library_error(call, names)
        return
    call = spec.legal(draw)
    if mode == "legal":
        expect_success(call)
        return
    name = mode.split(":", 1)[1]
    param = spec.params[name]
    call.kwargs[name] = draw(bad_values(param))
    expect_library_error(call, (name, *param.aliases))


# -- tensors ------------------------------------------------------------------------------------


def tensor(draw, *shape: int, dtype=torch.float32, scale: float | None = None) -> torch.Tensor:
    """A seeded normal tensor; values stay small enough for float16 scores to be finite."""
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 3.0])) if scale is None else scale
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def ids(draw, *shape: int, vocab: int, low: int = 0) -> torch.Tensor:
    seed = draw(st.integers(0, 2**31 - 1))
    return torch.randint(low, vocab, shape, generator=torch.Generator().manual_seed(seed))


def shape_is(*expected, dtype=None, pick=lambda r: r):
    """A check: the (picked) result has this shape, and this dtype if given."""

    def check(result, kwargs):
        t = pick(result)
        assert tuple(t.shape) == tuple(expected), f"shape {tuple(t.shape)}, expected {expected}"
        if dtype is not None:
            assert t.dtype == dtype, f"dtype {t.dtype}, expected {dtype}"

    return check


def holds(predicate: Callable[[Any], bool]):
    """A check: ``predicate(result)`` is true."""

    def check(result, kwargs):
        assert predicate(result), f"the result breaks the entry's property: {result!r:.300}"

    return check


def close_enough(dtype: torch.dtype) -> float:
    return {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-5)


def sizes(draw, n: int, low: int = 1, high: int = 5) -> list[int]:
    return [draw(st.integers(low, high)) for _ in range(n)]


__all__ = [
    "FLOATS",
    "NAN",
    "INF",
    "Param",
    "Call",
    "Spec",
    "Registry",
    "run",
    "tensor",
    "ids",
    "shape_is",
    "holds",
    "sizes",
    "as_any_integer",
    "close_enough",
    "math",
    "st",
]

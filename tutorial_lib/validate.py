"""The validators the labs use on their arguments, and :func:`format_shape`.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (T_q for queries, T_k for keys and values)
    D    d_model, the width of the residual stream
    H    n_head, the number of heads
    d_k  per-head width of queries and keys
    d_v  per-head width of values
    V    vocabulary size

The concept modules check their inputs themselves, where they enter and only where the error
teaches or stops a silently wrong answer (a mask read along the wrong axis, a sequence past a
learned table). The labs take many settings from a chapter's cells and name a bad one before
a run starts; they use the validators below. Each raises an error that names the argument,
what was expected and what was given:

* ``TypeError`` when the argument is the wrong *kind* of thing: a string for a size,
  ``True`` for a number of heads, a list where a tensor is needed;
* ``ValueError`` when it is the right kind with a wrong value: a size of 0, a NaN rate, a
  tensor of the wrong shape.

Validators are named ``require_*``; ``check_*`` is kept for the learners' self-checks in
:mod:`tutorial_lib.checks`. Integers are Python ints, NumPy integers and one-element integer
tensors; ``True`` and ``False`` are not sizes. This module imports only torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection

import torch
from torch import Tensor

__all__ = [
    "format_shape",
    "require_int",
    "require_real",
    "require_bool",
    "require_choice",
    "require_tensor",
    "to_tensor",
    "require_tokens",
    "require_padding_mask",
    "require_token_ids",
    "require_same_batch",
]


def format_shape(t: Tensor | tuple[int, ...] | torch.Size) -> str:
    """A tensor's shape (or a shape) as the book writes it: ``(2, 5, 512)``."""
    shape = t.shape if isinstance(t, Tensor) else t
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _given(value: object) -> str:
    """How a wrong value is shown: its repr and, when that hides it, its type."""
    if isinstance(value, Tensor):
        return f"a {value.dtype} tensor of shape {format_shape(value)}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _is_bool(value: object) -> bool:
    """True and False, and NumPy's bools (checked by name: this module does not import NumPy)."""
    kind = type(value)
    return isinstance(value, bool) or (
        kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")
    )


def _is_integer(value: object) -> bool:
    """A Python or NumPy integer, or a 0-d integer tensor; never a bool."""
    if isinstance(value, Tensor):
        return value.dim() == 0 and not (
            value.is_floating_point() or value.is_complex() or value.dtype == torch.bool
        )
    return isinstance(value, numbers.Integral) and not _is_bool(value)


def require_int(
    name: str, value: object, minimum: int | None = 1, *, even: bool = False, why: str = ""
) -> int:
    """``value`` as a Python int, or an error: an integer >= ``minimum`` (any integer when
    ``minimum`` is None), and even if asked.

    ``why`` (a short clause) is added to the message, e.g. "(H, the number of heads)".
    """
    if minimum is None:
        wanted = "an even integer" if even else "an integer"
    elif minimum == 1:
        wanted = "a positive even integer" if even else "a positive integer"
    elif minimum == 0:
        wanted = "a non-negative even integer" if even else "a non-negative integer"
    else:
        wanted = f"{'an even' if even else 'an'} integer >= {minimum}"
    wanted += f" {why}" if why else ""
    if _is_bool(value):
        raise TypeError(f"{name} must be {wanted}, not True or False; got {name}={value!r}")
    if not _is_integer(value):
        raise TypeError(f"{name} must be {wanted}; got {name}={_given(value)}")
    number = int(value)
    if (minimum is not None and number < minimum) or (even and number % 2):
        raise ValueError(f"{name} must be {wanted}; got {name}={number}")
    return number


def require_real(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    why: str = "",
) -> float:
    """``value`` as a finite Python float in the range (``above`` is exclusive), or an error."""
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    if minimum is not None:
        parts.append(f">= {minimum:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:g}")
    wanted = "a finite number" + (" " + " and ".join(parts) if parts else "")
    wanted += f" {why}" if why else ""
    is_number = isinstance(value, numbers.Real) or (
        isinstance(value, Tensor) and value.dim() == 0 and value.dtype != torch.bool
    )
    if _is_bool(value) or not is_number:
        raise TypeError(f"{name} must be {wanted}; got {name}={_given(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be {wanted}; got {name}={number}")
    if (
        (above is not None and not number > above)
        or (minimum is not None and number < minimum)
        or (maximum is not None and number > maximum)
    ):
        raise ValueError(f"{name} must be {wanted}; got {name}={number:g}")
    return number


def require_bool(name: str, value: object) -> bool:
    """``value`` as a Python bool (True, False or a NumPy bool), or a TypeError."""
    if _is_bool(value):
        return bool(value)
    raise TypeError(f"{name} must be True or False; got {name}={_given(value)}")


def require_choice(name: str, value: object, options: Collection) -> object:
    """``value`` if it is one of ``options``, else a ValueError listing them."""
    if isinstance(value, (str, int, float, tuple, type(None))) and not isinstance(value, bool):
        if value in options:
            return value
    raise ValueError(f"{name} must be one of {list(options)}; got {name}={value!r}")


_KINDS = {
    "float": (lambda t: t.is_floating_point(), "a floating-point (float16 to float64)"),
    "integer": (
        lambda t: not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool,
        "an integer",
    ),
    "bool": (lambda t: t.dtype == torch.bool, "a boolean"),
    "real": (lambda t: not t.is_complex() and t.dtype != torch.bool, "a real-valued"),
}


def require_tensor(name: str, value: object, kind: str | None = None, letters: str = "") -> Tensor:
    """``value`` if it is a tensor (of dtype ``kind``: float, integer, bool or real), else an error.

    ``letters`` (e.g. "(B, T, D)") says in the message what shape the tensor should have.
    """
    shape = f" {letters}" if letters else ""
    if not isinstance(value, Tensor):
        hint = " (wrap it: torch.tensor(...))" if isinstance(value, (list, tuple)) else ""
        raise TypeError(f"{name} must be a tensor{shape}{hint}; got {name}={_given(value)}")
    if kind is not None:
        ok, described = _KINDS[kind]
        if not ok(value):
            raise TypeError(f"{name} must be {described} tensor{shape}; got dtype {value.dtype}")
    return value


def to_tensor(name: str, value: object, kind: str | None = None, letters: str = "") -> Tensor:
    """``value`` as a tensor (lists, tuples and NumPy arrays of numbers are converted), then
    checked as :func:`require_tensor` does; anything else is a TypeError naming ``name``."""
    if not isinstance(value, Tensor):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            shape = f" {letters}" if letters else ""
            raise TypeError(f"{name} must be numbers{shape}; got {name}={_given(value)}") from None
    return require_tensor(name, value, kind, letters)


def require_tokens(x: Tensor, d_model: int, where: str, name: str = "x") -> None:
    """Raise unless ``x`` is a float tensor (B, T, D) with D = d_model.

    ``where`` names the layer in the message, ``name`` the argument.
    """
    letters = f"(B, T, D) with D = d_model = {d_model}"
    require_tensor(name, x, "float", letters)
    if x.dim() != 3 or x.shape[-1] != d_model:
        found = f"so D = {x.shape[-1]}" if x.dim() == 3 else f"which is {x.dim()}-D"
        raise ValueError(
            f"{where} expects {name} of shape {letters}; got {name} of shape "
            f"{format_shape(x)}, {found}"
        )


def require_padding_mask(mask: Tensor | None, x: Tensor, where: str, name: str = "mask") -> None:
    """Raise unless ``mask`` is None or a bool tensor (B, T) matching x (B, T, D)."""
    if mask is None:
        return
    require_tensor(name, mask, "bool", "(B, T), True = real token")
    if tuple(mask.shape) != tuple(x.shape[:2]):
        raise ValueError(
            f"{where}: the padding {name} must have shape (B, T) = {format_shape(x.shape[:2])} "
            f"to match x {format_shape(x)}; got {name} of shape {format_shape(mask)}"
        )


def _inside_vmap(t: Tensor) -> bool:
    """True for one member's view inside ``torch.func.vmap``, whose values cannot be read."""
    return torch._C._functorch.is_batchedtensor(t)


def require_token_ids(name: str, tokens: object, vocab: int) -> Tensor:
    """Raise unless ``tokens`` is an integer tensor (B, T) of ids 0..V-1 with V = ``vocab``."""
    require_tensor(name, tokens, "integer", f"(B, T) of token ids 0..V-1 = 0..{vocab - 1}")
    if tokens.dim() != 2:
        raise ValueError(
            f"{name} must be token ids of shape (B, T); got {tokens.dim()}-D {name} "
            f"of shape {format_shape(tokens)}"
        )
    if tokens.device.type == "meta" or not tokens.numel() or _inside_vmap(tokens):
        return tokens
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= vocab:
        raise ValueError(
            f"{name} must hold token ids 0..V-1 = 0..{vocab - 1} (the vocabulary has V = "
            f"{vocab} rows); got ids {low}..{high}"
        )
    return tokens


def require_same_batch(first: str, a: Tensor, second: str, b: Tensor) -> None:
    """Raise unless two inputs of one call have the same batch size B (their first axis)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{first} and {second} must share the batch size B; got {first} {format_shape(a)} "
            f"and {second} {format_shape(b)}"
        )

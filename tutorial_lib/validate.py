"""Bad input is a teaching moment: the checks every module uses, defined once.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (T_q for queries, T_k for keys and values)
    D    d_model, the width of the residual stream
    H    n_head, the number of heads
    d_k  per-head width of queries and keys
    d_v  per-head width of values
    V    vocabulary size

Every check raises an error that names the argument, what was expected and what was
given, in the letters above:

* ``TypeError`` when the argument is the wrong *kind* of thing: a string for a size,
  ``True`` for a number of heads, a list where a tensor is needed, integer token ids where
  float embeddings are needed;
* ``ValueError`` when it is the right kind with a wrong value: a size of 0, a NaN
  temperature, a tensor of the wrong shape.

Integers are Python ints, NumPy integers and one-element integer tensors (they are all
integers); ``True`` and ``False`` are not sizes. Real numbers are ints and floats of any
of those kinds, and must be finite.

:func:`format_shape` and :func:`check_shape` are the helpers chapter Q1 introduces;
:mod:`tutorial_lib.attention` re-exports them. This module imports only torch, so every
other module may import it.

About 300 lines on purpose: every check of the library in one place, so each error
message is written once and reads the same everywhere.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection

import torch
from torch import Tensor

__all__ = [
    "format_shape",
    "check_shape",
    "check_int",
    "check_real",
    "check_bool",
    "check_choice",
    "check_tensor",
    "to_tensor",
    "check_tokens",
    "check_padding_mask",
    "check_token_ids",
    "broadcast_shape",
    "check_same_batch",
    "check_same_dtype",
]


def _given(value: object) -> str:
    """How a wrong value is shown: its repr and, when that hides it, its type."""
    if isinstance(value, Tensor):
        return f"a {value.dtype} tensor of shape {format_shape(value)}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def format_shape(t: Tensor | tuple[int, ...] | torch.Size) -> str:
    """A tensor's shape (or a shape) as the book writes it: ``(2, 5, 512)``."""
    if isinstance(t, Tensor):
        shape = t.shape
    elif isinstance(t, (tuple, list, torch.Size)):
        shape = t
    else:
        raise TypeError(f"format_shape takes a tensor or a shape (a tuple); got {_given(t)}")
    return "(" + ", ".join(str(s) for s in shape) + ")"


def check_shape(t: Tensor, expected: tuple[int, ...], letters: str | None = None) -> None:
    """Stop a lesson the moment a tensor is not the shape we claim.

    ``check_shape(q, (B, H, T, d_k), "(B, H, T, d_k)")`` raises ``ValueError`` naming the
    expected shape (in the book's letters when given) and the shape found.
    """
    expected = tuple(check_int("a size in expected", s, minimum=0) for s in expected)
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a tensor of shape {format_shape(expected)}; got {_given(t)}")
    if tuple(t.shape) != expected:
        named = f" {letters}" if letters else ""
        raise ValueError(f"expected shape{named} = {format_shape(expected)}; got {format_shape(t)}")


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


def check_int(
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


def check_real(
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


def check_bool(name: str, value: object) -> bool:
    """``value`` as a Python bool (True, False or a NumPy bool), or a TypeError."""
    if _is_bool(value):
        return bool(value)
    raise TypeError(f"{name} must be True or False; got {name}={_given(value)}")


def check_choice(name: str, value: object, options: Collection) -> object:
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


def check_tensor(name: str, value: object, kind: str | None = None, letters: str = "") -> Tensor:
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
    checked as :func:`check_tensor` does; anything else is a TypeError naming ``name``."""
    if not isinstance(value, Tensor):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            shape = f" {letters}" if letters else ""
            raise TypeError(f"{name} must be numbers{shape}; got {name}={_given(value)}") from None
    return check_tensor(name, value, kind, letters)


def check_tokens(x: Tensor, d_model: int, where: str, name: str = "x") -> None:
    """Raise unless ``x`` is a float tensor (B, T, D) with D = d_model.

    ``where`` names the layer in the message, ``name`` the argument.
    """
    letters = f"(B, T, D) with D = d_model = {d_model}"
    check_tensor(name, x, "float", letters)
    if x.dim() != 3 or x.shape[-1] != d_model:
        found = f"so D = {x.shape[-1]}" if x.dim() == 3 else f"which is {x.dim()}-D"
        raise ValueError(
            f"{where} expects {name} of shape {letters}; got {name} of shape "
            f"{format_shape(x)}, {found}"
        )


def check_padding_mask(mask: Tensor | None, x: Tensor, where: str, name: str = "mask") -> None:
    """Raise unless ``mask`` is None or a bool tensor (B, T) matching x (B, T, D)."""
    if mask is None:
        return
    check_tensor(name, mask, "bool", "(B, T), True = real token")
    if tuple(mask.shape) != tuple(x.shape[:2]):
        raise ValueError(
            f"{where}: the padding {name} must have shape (B, T) = {format_shape(x.shape[:2])} "
            f"to match x {format_shape(x)}; got {name} of shape {format_shape(mask)}"
        )


def _inside_vmap(t: Tensor) -> bool:
    """True for one member's view inside ``torch.func.vmap``, whose values cannot be read."""
    return torch._C._functorch.is_batchedtensor(t)


def check_token_ids(name: str, tokens: object, vocab: int) -> Tensor:
    """Raise unless ``tokens`` is an integer tensor (B, T) of ids 0..V-1 with V = ``vocab``."""
    check_tensor(name, tokens, "integer", f"(B, T) of token ids 0..V-1 = 0..{vocab - 1}")
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


def broadcast_shape(*shapes: tuple[int, ...] | torch.Size) -> tuple[int, ...] | None:
    """The shape these shapes broadcast to (NumPy's rules), or None if they do not.

    Plain Python: ``torch.broadcast_shapes`` costs about a millisecond a call, which a
    check run on every attention call cannot afford.
    """
    rank = max((len(shape) for shape in shapes), default=0)
    result = []
    for axis in range(-rank, 0):
        sizes = {shape[axis] for shape in shapes if len(shape) >= -axis} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def check_same_batch(first: str, a: Tensor, second: str, b: Tensor) -> None:
    """Raise unless two inputs of one call have the same batch size B (their first axis)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{first} and {second} must share the batch size B; got {first} {format_shape(a)} "
            f"and {second} {format_shape(b)}"
        )


def check_same_dtype(name: str, t: Tensor, weight: Tensor, where: str) -> None:
    """Raise unless ``t`` has the dtype of the layer's ``weight`` (torch would fail deep inside)."""
    if t.dtype != weight.dtype:
        raise TypeError(
            f"{name} is {t.dtype} but {where}'s weights are {weight.dtype}; convert one to the "
            f"other, e.g. layer.to({t.dtype}) or {name}.to({weight.dtype})"
        )

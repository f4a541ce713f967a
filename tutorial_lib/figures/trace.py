"""Watch a forward pass: every tensor it makes, with its shape and the line of code that made it.

The shape explorers do not restate a module's steps (that would be a second copy that
could drift from the real one): they run the real ``forward`` under a
``torch.overrides.TorchFunctionMode`` and record each tensor an operation returns,
together with the line of ``tutorial_lib`` that called it and the numbered step comment
("# 4. Attention in every head at once.") that line sits under.

Shapes are read in the book's letters by running the same code a second time on
*probe* sizes where every letter has its own prime size (B=2, T=3, H=5, d_k=7, ...), so
that each size names its letter unambiguously (35 can only be H·d_k).
"""

from __future__ import annotations

import linecache
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["TracedTensor", "trace_tensors", "letters_of"]

_LIBRARY = Path(__file__).resolve().parents[1]  # the tutorial_lib folder
_FIGURES = Path(__file__).resolve().parent
_STEP = re.compile(r"^\s*# (\d.*)$")
# Operations that make no new values worth showing: copies for bookkeeping, no-op dropout.
_SKIPPED = {"detach", "dropout", "__get__", "size", "dim", "numel", "is_contiguous", "any"}


@dataclass(frozen=True)
class TracedTensor:
    """One tensor made during a traced call."""

    op: str  # the operation that returned it: "linear", "view", "transpose", ...
    shape: tuple[int, ...]  # its shape
    contiguous: bool  # whether its memory is laid out in shape order
    code: str  # the line of tutorial_lib that called the operation
    step: str  # the numbered step comment that line belongs to, e.g. "4. Attention in ..."
    where: str  # module and line, e.g. "attention.py:231"


def _origin() -> tuple[str, str, str]:
    """(code, step, where) of the innermost tutorial_lib line outside this folder."""
    frame = sys._getframe(2)
    code = where = ""
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        inside = _LIBRARY in path.parents and _FIGURES not in path.parents
        if inside:
            if not code:
                code = linecache.getline(str(path), frame.f_lineno).strip()
                where = f"{path.name}:{frame.f_lineno}"
            step = _step_above(str(path), frame.f_lineno, frame.f_code.co_firstlineno)
            if step:
                return code, step, where
        frame = frame.f_back
    return code, "", where


def _step_above(path: str, line: int, first: int) -> str:
    """The nearest '# N. ...' comment above ``line`` within the function starting at ``first``."""
    for number in range(line - 1, first, -1):
        match = _STEP.match(linecache.getline(path, number))
        if match:
            return match.group(1).strip()
    return ""


class _Recorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.records: list[TracedTensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", str(func)).strip("_")
        if isinstance(result, torch.Tensor) and name not in _SKIPPED:
            code, step, where = _origin()
            if code:
                self.records.append(
                    TracedTensor(
                        name, tuple(result.shape), result.is_contiguous(), code, step, where
                    )
                )
        return result


def trace_tensors(
    fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[Any, list[TracedTensor]]:
    """Call ``fn(*args, **kwargs)`` and record every tensor ``tutorial_lib`` code made.

    Returns the call's result and the records, in the order the tensors were made.
    Works on the meta device too (shapes without numbers), which is how the explorers
    trace the paper's sizes at no cost.
    """
    recorder = _Recorder()
    with recorder:
        result = fn(*args, **kwargs)
    return result, recorder.records


def letters_of(shape: tuple[int, ...], sizes: dict[str, int]) -> str:
    """A probe shape in the book's letters: (2, 5, 3, 7) -> "(B, H, T, d_k)".

    ``sizes`` maps each letter to its probe size; a size that is the product of two
    different letters' sizes reads as "H·d_k". A size that matches nothing is written as a number.
    """
    names = {size: letter for letter, size in sizes.items()}
    for i, (a, size_a) in enumerate(sizes.items()):
        for b, size_b in list(sizes.items())[i + 1 :]:
            names.setdefault(size_a * size_b, f"{a}·{b}")
    return "(" + ", ".join(names.get(n, str(n)) for n in shape) + ")"


def shape_of(letters: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """The inverse of :func:`letters_of` at other sizes: "(B, T, H·d_k)" -> (B, T, H * d_k)."""
    shape = []
    for axis in letters.strip("()").split(", "):
        n = 1
        for factor in axis.split("·"):
            n *= sizes[factor] if factor in sizes else int(factor)
        shape.append(n)
    return tuple(shape)

"""A learner's shape check: stop a lesson the moment a tensor is not the shape we claim.

Dimension letters, fixed book-wide: B batch, T sequence length (T_q, T_k), D = d_model,
H heads, d_k and d_v per-head widths.

Introduced in chapter Q0 (d2l's ``check_shape``).
"""

from __future__ import annotations

from torch import Tensor

from ..validate import format_shape

__all__ = ["check_shape"]


def check_shape(t: Tensor, expected: tuple[int, ...], letters: str | None = None) -> None:
    """Raise ``ValueError`` unless ``t`` has shape ``expected``.

    ``check_shape(q, (B, H, T, d_k), "(B, H, T, d_k)")`` names the expected shape (in the
    book's letters when given) and the shape found.
    """
    if tuple(t.shape) != tuple(expected):
        named = f" {letters}" if letters else ""
        raise ValueError(f"expected shape{named} = {format_shape(expected)}; got {format_shape(t)}")

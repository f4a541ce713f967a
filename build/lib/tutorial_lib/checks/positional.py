"""Self-checks for positions: the sinusoidal encoding (chapter Q3a) and RoPE (chapter Q3b).

Dimension letters: T sequence length, D = d_model, d the width being rotated.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .engine import Mistake, call_learner, compare_and_explain, expect_shape

__all__ = ["check_sinusoidal_encoding", "check_rope"]


def check_sinusoidal_encoding(fn: Callable[[int, int], Tensor]) -> None:
    """Check ``fn(max_len, d_model) -> (max_len, d_model)``, the paper's sinusoidal encoding.

    Even columns 2i hold sin(p / 10000^(2i/D)), odd columns 2i+1 hold the cos of
    the same angle. Catches sin and cos swapped, the two halves side by side
    instead of interleaved, and the exponent i/D instead of 2i/D.
    """
    from ..positional import sinusoidal_encoding

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
    from ..positional import apply_rope

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

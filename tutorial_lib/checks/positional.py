"""Self-checks for positions: the sinusoidal encoding (chapter Q3a) and RoPE (chapter Q3b).

Dimension letters: T sequence length, D = d_model, d the width being rotated.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..positional import apply_rope, sinusoidal_encoding
from .engine import Mistake, call_learner, compare_and_explain, describe, expect_tensor, fail

__all__ = [
    "check_sinusoidal_encoding",
    "check_rope",
    "SINUSOID_SIZES",
    "OTHER_SINUSOID_SIZES",
    "ROPE_CASES",
    "OTHER_ROPE_CASES",
]

# (max_len, d_model) the sinusoid check tries; then other sizes, which a grader tries.
SINUSOID_SIZES = ((12, 8), (5, 16), (40, 6), (1, 2))
OTHER_SINUSOID_SIZES = ((9, 10), (30, 4), (3, 20))
# (shape of x, positions) the RoPE check tries: 3-D and 4-D, positions neither from 0 nor
# contiguous; then other cases, which a grader tries.
ROPE_CASES = (
    ((2, 6, 8), (2, 3, 5, 8, 13, 21)),
    ((2, 3, 5, 4), (7, 1, 0, 30, 4)),
    ((1, 3, 12), (0, 1, 2)),
)
OTHER_ROPE_CASES = (
    ((3, 4, 6), (5, 9, 2, 40)),
    ((1, 2, 3, 10), (0, 3, 1)),
    ((2, 5, 4), (11, 12, 13, 14, 15)),
)


def _sinusoid(
    L: int,
    D: int,
    *,
    base=10000.0,
    first=0,
    exponent=2.0,
    layout="interleaved",
    swap=False,
    sign=-1.0,
) -> Tensor:
    """The encoding with one mistake switched on by a keyword: (L, D), float64."""
    p = torch.arange(first, first + L, dtype=torch.float64)[:, None]
    i = torch.arange(D // 2, dtype=torch.float64)
    angle = p * base ** (sign * exponent * i / D)  # (L, D/2)
    a, b = (angle.cos(), angle.sin()) if swap else (angle.sin(), angle.cos())
    if layout == "halves":
        return torch.cat([a, b], -1)
    return torch.stack([a, b], -1).flatten(-2)


def _sinusoid_mistakes(L: int, D: int) -> list[Mistake]:
    mistakes = [
        Mistake(
            "sin and cos swapped",
            "even columns 2i take sin, odd columns 2i+1 take cos.",
            _sinusoid(L, D, swap=True),
        ),
        Mistake(
            "halves instead of interleaved",
            "the sines fill the first D/2 columns and the "
            "cosines the rest; the paper interleaves them: column 2i is sin, column 2i+1 is "
            "cos of the same angle.",
            _sinusoid(L, D, layout="halves"),
        ),
        Mistake(
            "exponent i/D (the same as base 100)",
            "the frequency of pair i is 1/10000^(2i/D), not 1/10000^(i/D): "
            "i counts pairs, 2i is the dimension.",
            _sinusoid(L, D, exponent=1.0),
        ),
        Mistake(
            "exponent 2·(2i)/D",
            "the exponent used the dimension index 2i where the pair "
            "index i belongs: pair i (columns 2i and 2i+1) has frequency 1/10000^(2i/D).",
            _sinusoid(L, D, exponent=4.0),
        ),
        Mistake(
            "positions start at 1",
            "row p is position p, counting from 0: the first row is "
            "sin(0) = 0 and cos(0) = 1. Use torch.arange(max_len), not arange(1, max_len + 1).",
            _sinusoid(L, D, first=1),
        ),
        Mistake(
            "frequencies growing instead of shrinking",
            "the angle is p / 10000^(2i/D): "
            "divide by the power (or multiply by 10000^(-2i/D)), so later pairs turn slower.",
            _sinusoid(L, D, sign=1.0),
        ),
    ]
    for base in (1000.0, 1e5, 10.0):  # base 100 is the exponent i/D above
        mistakes.append(
            Mistake(
                f"wrong base {base:g}",
                f"the base is 10000 (the paper's); yours behaves like base {base:g}.",
                _sinusoid(L, D, base=base),
            )
        )
    return mistakes


def check_sinusoidal_encoding(
    fn: Callable[[int, int], Tensor], *, sizes: tuple = SINUSOID_SIZES
) -> None:
    """Check ``fn(max_len, d_model) -> (max_len, d_model)``, the paper's sinusoidal encoding.

    Even columns 2i hold sin(p / 10000^(2i/D)), odd columns 2i+1 the cos of the same
    angle, for positions p = 0 .. max_len - 1. Tried for several sizes. Catches sin and cos
    swapped, halves instead of interleaved, the wrong exponent or base, positions from 1,
    growing frequencies, and a transposed (D, max_len) table. ``sizes`` are the (max_len,
    d_model) tried (a grader's hidden test passes OTHER_SINUSOID_SIZES).
    """
    check = "check_sinusoidal_encoding"
    for L, D in sizes:
        call = f"fn({L}, {D})"
        pe = call_learner(check, fn, L, D, call=call, names=("max_len", "d_model"))
        if isinstance(pe, Tensor) and tuple(pe.shape) == (D, L) and L != D:
            fail(
                check,
                f"{call} returned shape (d_model, max_len) = ({D}, {L}); the table has "
                "one row per position: (max_len, d_model). Transpose it.",
            )
        config = describe(max_len=L, d_model=D)
        pe = expect_tensor(check, pe, f"{call}", "(max_len, d_model)", (L, D))
        compare_and_explain(
            check,
            "your encoding",
            pe,
            sinusoidal_encoding(L, D).double(),
            _sinusoid_mistakes(L, D),
            "the paper's formula (Vaswani et al. 2017, section 3.5)",
            config=config,
        )


def _rope_repeat(x: Tensor, positions: Tensor) -> Tensor:
    """RoPE with the frequencies laid out by ``.repeat`` (f0, f1, ..., f0, f1, ...) over
    interleaved pairs: pair i then gets the wrong frequency."""
    d = x.shape[-1]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angle = positions.to(torch.float64)[..., None] * freq.repeat(2)  # (T, d)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2)
    rotated_pairs = torch.stack([-x2, x1], -1).flatten(-2)  # (-x_{2i+1}, x_{2i})
    return x * cos + rotated_pairs * sin


def _rope_mistakes(x: Tensor, positions: Tensor) -> list[Mistake]:
    T = x.shape[-2]
    return [
        Mistake(
            "positions ignored",
            "the rotation used 0, 1, ..., T-1 whatever positions were "
            "passed. Turn each token by its own position: angle = positions[t] * frequency.",
            apply_rope(x, torch.arange(T)),
        ),
        Mistake(
            "rotation the wrong way round",
            "each pair turned by minus the angle: the first "
            "output of a pair is x1 cos - x2 sin, the second x1 sin + x2 cos.",
            apply_rope(x, -positions),
        ),
        Mistake(
            "pairs (i, i + d/2)",
            "that is GPT-NeoX's layout; the RoFormer paper rotates "
            "adjacent pairs (2i, 2i+1). Both work if used consistently, but this check "
            "follows the paper.",
            apply_rope(x, positions, layout="half"),
        ),
        Mistake(
            "frequencies with .repeat",
            "the frequencies were laid out with .repeat(2) "
            "(f0, f1, ..., f0, f1, ...) but the pairs are adjacent (2i, 2i+1): each pair "
            "needs its own frequency twice, .repeat_interleave(2).",
            _rope_repeat(x, positions),
        ),
        Mistake(
            "exponent i/d",
            "pair i turns by position * 10000^(-2i/d), not 10000^(-i/d).",
            apply_rope(x, positions, base=10000.0**0.5),
        ),
        Mistake(
            "positions off by one",
            "the first position passed is the first angle: use the "
            "positions as given, not positions + 1.",
            apply_rope(x, positions + 1),
        ),
    ]


def _check_relative(check: str, fn: Callable, x: Tensor, seed: int) -> None:
    """Scores of rotated q and k must depend only on the offset: shift both positions."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, 4, x.shape[-1], generator=g), torch.randn(1, 4, x.shape[-1], generator=g)
    positions = torch.tensor([0, 3, 4, 9])
    scores = []
    for shift in (0, 17):
        p = positions + shift
        rq = call_learner(check, fn, q, p, call="fn(q, positions)", names=("x", "positions"))
        rk = call_learner(check, fn, k, p, call="fn(k, positions)", names=("x", "positions"))
        scores.append(rq @ rk.transpose(-2, -1))
    if not torch.allclose(scores[0], scores[1], atol=1e-4, rtol=1e-4):
        fail(
            check,
            "your rotated q · k changes when every position moves by the same amount "
            "(17): with RoPE a score depends only on the offset between the two positions. "
            "Each pair must turn by the same frequency for q and k.",
        )


def check_rope(
    fn: Callable[[Tensor, Tensor], Tensor], *, cases: tuple = ROPE_CASES, seed: int = 3
) -> None:
    """Check ``fn(x, positions) -> rotated x`` for x (..., T, d): RoPE, RoFormer's layout.

    Pair (2i, 2i+1) turns by positions * 10000^(-2i/d). Tried on (B, T, d) and (B, H, T, d)
    inputs with positions that neither start at 0 nor are contiguous. Catches positions
    ignored (0..T-1 used), the rotation the wrong way round, the GPT-NeoX pairing
    (i, i + d/2), frequencies laid out with ``.repeat``, the exponent i/d and positions off
    by one; then checks the property that matters: scores depend only on the offset m - n.
    ``cases`` and ``seed`` choose other shapes, positions and draws (a grader's hidden test
    passes OTHER_ROPE_CASES); the defaults are what a learner's call tries.
    """
    check = "check_rope"
    g = torch.Generator().manual_seed(seed)
    tried = [(torch.randn(*shape, generator=g), torch.tensor(p)) for shape, p in cases]
    for x, positions in tried:
        call = "fn(x, positions)"
        out = call_learner(check, fn, x, positions, call=call, names=("x", "positions"))
        letters = "(B, T, d)" if x.dim() == 3 else "(B, H, T, d)"
        config = f"x {tuple(x.shape)} {letters}, positions {positions.tolist()}"
        out = expect_tensor(check, out, f"{call} for {config}", letters, tuple(x.shape))
        compare_and_explain(
            check,
            "your rotated x",
            out,
            apply_rope(x, positions),
            _rope_mistakes(x, positions),
            "apply_rope (RoFormer, Su et al.)",
            config=config,
        )
    _check_relative(check, fn, tried[0][0], seed + 2)

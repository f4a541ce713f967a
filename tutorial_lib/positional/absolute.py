"""Positions added to the token embeddings: sinusoidal (computed) and learned (a table).

Dimension letters, fixed book-wide: B batch, T sequence length (T_q queries, T_k keys),
D = d_model, H = n_head, d_k and d_v per-head widths.

Group 1 of :mod:`tutorial_lib.positional`: :class:`AbsolutePositionalEncoding` maps
x (B, T, D) to x + P[:T]. :func:`sinusoidal_encoding` is the book's one definition of the
Transformer's table; the model of chapter Q5 and the labs use it too.

Introduced in chapter Q3a ("Why add positions?").
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = [
    "sinusoidal_frequencies",
    "sinusoidal_encoding",
    "sinusoidal_shift_matrix",
    "AbsolutePositionalEncoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
]


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> Tensor:
    """omega_i = base^(-2i/D) for pair i = 0 .. D/2 - 1, float64 (D/2,).

    Pair i holds dimensions 2i (sin) and 2i+1 (cos); its wavelength is 2*pi/omega_i. Every
    sinusoid of the book (the encoding, Transformer-XL's R, RoPE's angles) is made here.
    """
    if d_model % 2 or not base > 0:  # an odd width leaves a dimension unpaired; base <= 0 gives NaN
        raise ValueError(f"sinusoids need an even width and base > 0; got {d_model}, base={base}")
    return base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (D/2,)


def _sinusoid(positions: Tensor, d_model: int, base: float) -> Tensor:
    """(N,) positions (any sign, any real) -> (N, D) float64, interleaved sin/cos."""
    angle = positions.to(torch.float64)[:, None] * sinusoidal_frequencies(d_model, base)  # (N, D/2)
    # (N, D/2, 2) -> (N, D): sin at even dimensions, cos at odd ones, as in the paper.
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)


def sinusoidal_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    r"""The Transformer's encoding (Vaswani et al. 2017, section 3.5), shape (max_len, D).

    PE[p, 2i] = sin(p / base^(2i/D)),  PE[p, 2i+1] = cos(p / base^(2i/D)).
    Computed in float64 and returned as float32, so large positions stay exact.
    """
    return _sinusoid(torch.arange(max_len), d_model, base).float()  # (max_len, D)


def sinusoidal_shift_matrix(k: float, d_model: int, base: float = 10000.0) -> Tensor:
    """M_k (D, D), block-diagonal, with PE[p + k] = M_k @ PE[p] for every p. float64.

    Block i rotates the pair (sin(p w_i), cos(p w_i)) by the angle k w_i; it does not depend on p.
    """
    angle = k * sinusoidal_frequencies(d_model, base)  # (D/2,)
    c, s = angle.cos(), angle.sin()
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (D/2, 2, 2)
    return torch.block_diag(*blocks)  # (D, D)


class AbsolutePositionalEncoding(nn.Module):
    """Group 1 interface: ``encoding(T) -> (T, D)``; ``forward(x)`` returns x + encoding(T).

    x: (B, T, D) token embeddings -> (B, T, D). Subclasses define ``encoding``.
    """

    d_model: int

    def encoding(self, T: int) -> Tensor:
        """(T, D): what is added at positions 0 .. T-1. Subclasses define it."""
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_floating_point():  # adding the table to token ids would truncate it, silently
            raise TypeError(f"positions are added to embeddings, not to token ids; got {x.dtype}")
        return x + self.encoding(x.shape[1]).to(x.dtype)  # (B, T, D)


class SinusoidalPositionalEncoding(AbsolutePositionalEncoding):
    """Adds :func:`sinusoidal_encoding` to (B, T, D) embeddings. No parameters; any T works.

    The first ``max_len`` rows are kept in a buffer; longer inputs are computed on the fly.
    """

    def __init__(self, d_model: int, base: float = 10000.0, max_len: int = 1024):
        super().__init__()
        self.d_model, self.base = d_model, base
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def encoding(self, T: int) -> Tensor:
        """(T, D): the rows for positions 0 .. T-1."""
        if T <= self.pe.shape[0]:
            return self.pe[:T]  # (T, D)
        return sinusoidal_encoding(T, self.d_model, self.base).to(self.pe.device)  # (T, D)


class LearnedPositionalEmbedding(AbsolutePositionalEncoding):
    """A (max_len, D) table trained with the model; row p is added at position p.

    Initialised N(0, init_std^2) (0.02, BERT's initializer range). It has no row for
    a position >= max_len, so longer inputs raise ``ValueError``.
    """

    def __init__(self, max_len: int, d_model: int, init_std: float = 0.02):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.table = nn.Parameter(torch.randn(max_len, d_model) * init_std)  # (max_len, D)

    def encoding(self, T: int) -> Tensor:
        """(T, D): the rows for positions 0 .. T-1, which must exist in the table."""
        if T > self.max_len:
            raise ValueError(
                f"a sequence of T={T} tokens needs rows for positions 0..{T - 1}, but this learned "
                f"table has max_len={self.max_len} rows: it has no vector for a later position. "
                "Use max_len >= T, or compute positions (sinusoidal) or relative ones (chapter Q3b)"
            )
        return self.table[:T]  # (T, D)

"""Positional information for attention, grouped by where it acts.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (T_q for queries, T_k for keys and values)
    D    d_model, the width of the residual stream
    H    n_head, the number of heads
    d_k  per-head width of queries and keys
    d_v  per-head width of values

Self-attention on its own cannot tell one order of the tokens from another
(chapter Q3a measures it). Every way of giving it positions acts in one of
three places, and each place has one small interface:

1. **Added to the token embeddings** (absolute):
   :class:`AbsolutePositionalEncoding` maps x (B, T, D) to x + P[:T].
   Variants: :class:`SinusoidalPositionalEncoding`, :class:`LearnedPositionalEmbedding`.
2. **Added to the attention scores** (bias): :class:`ScoreBias` returns a
   tensor broadcastable to the scores (..., T_q, T_k), and may add a term to
   the output. Variants: :class:`ShawRelativePosition`,
   :class:`TransformerXLRelativePosition`, :class:`T5RelativeBias`, :class:`ALiBiBias`.
3. **Rotating q and k** (rotation): :class:`Rotation` makes the scores from
   queries and keys rotated by their positions. Variants: :class:`RoPE`, :class:`ReRoPE`.

Groups 2 and 3 plug into the one place where scores are made,
``ScaledDotProductAttention.get_scores``, through :class:`PositionalAttention`;
:func:`with_positions` puts one into a ``MultiHeadAttention``.

Conventions: query i sits at position T_k - T_q + i (the queries are the last
T_q of T_k positions, as in ``causal_mask``), key j at position j.
``relative_position(T_q, T_k)`` is key position minus query position (T5's
convention); the *distance* i - j used by ALiBi and ReRoPE is its negative.

Introduced in chapters Q3a (absolute encodings) and Q3b (biases and rotations).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .attention import MultiHeadAttention, ScaledDotProductAttention, _shape, attention_scores

__all__ = [
    "sinusoidal_encoding",
    "sinusoidal_frequencies",
    "sinusoidal_shift_matrix",
    "AbsolutePositionalEncoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "relative_position",
    "ScoreBias",
    "ShawRelativePosition",
    "relative_shift",
    "TransformerXLRelativePosition",
    "t5_relative_bucket",
    "T5RelativeBias",
    "alibi_slopes",
    "ALiBiBias",
    "apply_rope",
    "rope_layout_permutation",
    "Rotation",
    "RoPE",
    "rerope_positions",
    "ReRoPE",
    "PositionalAttention",
    "with_positions",
]


def _check_even(name: str, value: int) -> None:
    if not isinstance(value, int) or value <= 0 or value % 2:
        raise ValueError(
            f"{name} must be a positive even integer (dimensions come in (sin, cos) or rotation "
            f"pairs); got {name}={value!r}"
        )


# ---------------------------------------------------------------------------------------
# 1. Added to the token embeddings: absolute encodings
# ---------------------------------------------------------------------------------------


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> Tensor:
    """omega_i = base^(-2i/D) for pair i = 0 .. D/2 - 1, float64 (D/2,).

    Pair i holds dimensions 2i (sin) and 2i+1 (cos); its wavelength is 2*pi/omega_i.
    """
    _check_even("d_model", d_model)
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
    _check_even("d_model", d_model)
    if not isinstance(max_len, int) or max_len < 0:
        raise ValueError(f"max_len must be a non-negative integer; got max_len={max_len!r}")
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
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"expected token embeddings of shape (B, T, D) with D = d_model = {self.d_model}; "
                f"got {_shape(x)}"
            )
        return x + self.encoding(x.shape[1]).to(x.dtype)  # (B, T, D)


class SinusoidalPositionalEncoding(AbsolutePositionalEncoding):
    """Adds :func:`sinusoidal_encoding` to (B, T, D) embeddings. No parameters; any T works.

    The first ``max_len`` rows are kept in a buffer; longer inputs are computed on the fly.
    """

    def __init__(self, d_model: int, base: float = 10000.0, max_len: int = 1024):
        super().__init__()
        _check_even("d_model", d_model)
        self.d_model, self.base = d_model, base
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def encoding(self, T: int) -> Tensor:
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
        if not isinstance(max_len, int) or max_len <= 0:
            raise ValueError(f"max_len must be a positive integer; got max_len={max_len!r}")
        if not isinstance(d_model, int) or d_model <= 0:
            raise ValueError(f"d_model must be a positive integer; got d_model={d_model!r}")
        self.max_len, self.d_model = max_len, d_model
        self.table = nn.Parameter(torch.randn(max_len, d_model) * init_std)  # (max_len, D)

    def encoding(self, T: int) -> Tensor:
        if T > self.max_len:
            raise ValueError(
                f"a sequence of T={T} tokens needs rows for positions 0..{T - 1}, but this "
                f"learned table has max_len={self.max_len} rows (positions 0..{self.max_len - 1}). "
                "A learned table cannot extrapolate: a row exists only for positions seen when "
                "the table was made, and training never said what a later row should hold. "
                "Use max_len >= T, an encoding computed from the position (sinusoidal), or a "
                "relative one (chapter Q3b)."
            )
        return self.table[:T]  # (T, D)


# ---------------------------------------------------------------------------------------
# 2. Added to the attention scores: biases
# ---------------------------------------------------------------------------------------


def relative_position(T_q: int, T_k: int, device=None) -> Tensor:
    """(T_q, T_k) long: key position j minus query position (T_k - T_q + i), T5's convention."""
    if T_q <= 0 or T_k <= 0 or T_q > T_k:
        raise ValueError(
            "relative positions need 0 < T_q <= T_k (queries are the last T_q of T_k "
            f"positions); got T_q={T_q}, T_k={T_k}"
        )
    query = torch.arange(T_k - T_q, T_k, device=device)  # (T_q,)
    key = torch.arange(T_k, device=device)  # (T_k,)
    return key[None, :] - query[:, None]  # (T_q, T_k)


class ScoreBias(nn.Module):
    """Group 2 interface: scores = scale * q k^T + ``forward(q, k, scale)``.

    ``forward(q (..., T_q, d_k), k (..., T_k, d_k), scale) -> bias`` broadcastable
    to (..., T_q, T_k). ``value_term(weights (..., T_q, T_k))`` may return a
    (..., T_q, d_v) term added to the output (only Shaw et al. use it).
    """

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        raise NotImplementedError

    def value_term(self, weights: Tensor) -> Tensor | None:
        return None


class ShawRelativePosition(ScoreBias):
    r"""Shaw, Uszkoreit and Vaswani (2018): learned vectors per clipped relative position.

    e_ij = q_i . (k_j + a^K_ij) * scale,   z_i = sum_j w_ij (v_j + a^V_ij),
    with a_ij = table[clip(j - i, -max_relative_position, max_relative_position)].
    The 2K+1 vectors are shared by all heads, as in the paper.
    """

    def __init__(self, d_k: int, d_v: int, max_relative_position: int, init_std: float = 0.02):
        super().__init__()
        if not isinstance(max_relative_position, int) or max_relative_position < 0:
            raise ValueError(
                f"max_relative_position must be an integer >= 0; got {max_relative_position!r}"
            )
        self.K = max_relative_position
        self.a_k = nn.Parameter(torch.randn(2 * self.K + 1, d_k) * init_std)  # (2K+1, d_k)
        self.a_v = nn.Parameter(torch.randn(2 * self.K + 1, d_v) * init_std)  # (2K+1, d_v)

    def index(self, T_q: int, T_k: int, device=None) -> Tensor:
        """(T_q, T_k) row of the table used for each pair: clip(j - i, -K, K) + K."""
        return relative_position(T_q, T_k, device).clamp(-self.K, self.K) + self.K

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        T_q, T_k = q.shape[-2], k.shape[-2]
        index = self.index(T_q, T_k, q.device)  # (T_q, T_k)
        # Dot every query with the 2K+1 vectors once, then pick the one each key needs.
        per_distance = q @ self.a_k.T  # (..., T_q, 2K+1)
        index = index.expand(*per_distance.shape[:-1], T_k)  # (..., T_q, T_k)
        return per_distance.gather(-1, index) * scale  # (..., T_q, T_k)

    def value_term(self, weights: Tensor) -> Tensor:
        T_q, T_k = weights.shape[-2:]
        index = self.index(T_q, T_k, weights.device).expand(weights.shape)  # (..., T_q, T_k)
        # Sum the weights that fall on each clipped distance, then mix the a^V vectors.
        per_distance = weights.new_zeros(*weights.shape[:-1], 2 * self.K + 1)
        per_distance = per_distance.scatter_add(-1, index, weights)  # (..., T_q, 2K+1)
        return per_distance @ self.a_v  # (..., T_q, d_v)


def relative_shift(full: Tensor, T_k: int) -> Tensor:
    """Transformer-XL's relative shift, done with a pad and a reshape instead of a gather.

    full: (..., T_q, T_q + T_k - 1); column c holds relative distance
    T_k - 1 - c (largest first). Returns (..., T_q, T_k) whose (i, j) entry is
    the column for distance (T_k - T_q + i) - j.
    """
    *lead, T_q, L = full.shape
    if L != T_q + T_k - 1:
        raise ValueError(
            f"expected the last axis to hold T_q + T_k - 1 = {T_q + T_k - 1} distances; "
            f"got {_shape(full)}"
        )
    # Row i must start at column T_q - 1 - i: with rows of length L + 1 laid end to end,
    # reading the flat data from T_q - 1 in rows of length L moves the start one left per row.
    padded = nn.functional.pad(full, (0, 1))  # (..., T_q, L + 1)
    flat = padded.flatten(-2)[..., T_q - 1 : T_q - 1 + T_q * L]  # (..., T_q * L)
    return flat.reshape(*lead, T_q, L)[..., :T_k]  # (..., T_q, T_k)


class TransformerXLRelativePosition(ScoreBias):
    r"""Transformer-XL / XLNet (Dai et al. 2019): four terms, sinusoidal R_{i-j}.

    The score splits into four terms::

        A_ij = q_i.k_j           (a, content-content)
             + q_i.W_R R_{i-j}   (b, content-position)
             + u.k_j             (c, global content bias)
             + v.W_R R_{i-j}     (d, global position bias)

    The usual score gives (a); this bias returns scale * (b + c + d), with (b) + (d)
    computed for every distance once and moved into place with :func:`relative_shift`
    (``position_terms`` returns that part alone).
    q, k: (B, H, T, d_k); u, v: (H, d_k); W_R: (d_pos) -> (H * d_k).
    """

    def __init__(self, n_head: int, d_k: int, d_pos: int | None = None, base: float = 10000.0):
        super().__init__()
        self.n_head, self.d_k = n_head, d_k
        self.d_pos = d_pos or n_head * d_k
        _check_even("d_pos", self.d_pos)
        self.base = base
        self.w_r = nn.Linear(self.d_pos, n_head * d_k, bias=False)
        self.u = nn.Parameter(torch.zeros(n_head, d_k))  # (H, d_k)
        self.v = nn.Parameter(torch.zeros(n_head, d_k))  # (H, d_k)

    def _check(self, q: Tensor, k: Tensor) -> None:
        for name, t in (("q", q), ("k", k)):
            if t.dim() < 3 or t.shape[-3] != self.n_head or t.shape[-1] != self.d_k:
                raise ValueError(
                    f"{name} must be (..., H, T, d_k) with H={self.n_head}, d_k={self.d_k}; "
                    f"got {_shape(t)}"
                )

    def projected(self, distances: Tensor) -> Tensor:
        """W_R R_d for each distance d: (N,) -> (H, N, d_k)."""
        r = _sinusoid(distances, self.d_pos, self.base).to(self.w_r.weight.dtype)  # (N, d_pos)
        r = self.w_r(r).view(-1, self.n_head, self.d_k)  # (N, H, d_k)
        return r.transpose(0, 1)  # (H, N, d_k)

    def position_terms(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        """scale * ((b) + (d)), the part of the score that depends on i - j: (..., H, T_q, T_k)."""
        self._check(q, k)
        T_q, T_k = q.shape[-2], k.shape[-2]
        distances = torch.arange(T_k - 1, -T_q, -1, device=q.device)  # (T_q + T_k - 1,)
        r = self.projected(distances)  # (H, T_q + T_k - 1, d_k)
        position = (q + self.v[:, None]) @ r.transpose(-2, -1)  # (..., H, T_q, T_q + T_k - 1)
        return relative_shift(position, T_k) * scale  # (..., H, T_q, T_k)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        position = self.position_terms(q, k, scale)  # (b) + (d), checks the shapes first
        content_bias = (self.u[:, None] @ k.transpose(-2, -1)).to(q.dtype)  # (c): (..., H, 1, T_k)
        return position + content_bias * scale  # (..., H, T_q, T_k)

    def four_terms(self, q: Tensor, k: Tensor) -> dict[str, Tensor]:
        """The four unscaled terms computed directly, pair by pair: each (..., H, T_q, T_k)."""
        self._check(q, k)
        T_q, T_k = q.shape[-2], k.shape[-2]
        distance = -relative_position(T_q, T_k, q.device)  # (T_q, T_k): i - j
        r = self.projected(distance.flatten()).unflatten(1, (T_q, T_k))  # (H, T_q, T_k, d_k)
        return {
            "a": q @ k.transpose(-2, -1),
            "b": torch.einsum("...hid,hijd->...hij", q, r),
            "c": torch.einsum("hd,...hjd->...hj", self.u, k)
            .unsqueeze(-2)
            .expand(*k.shape[:-2], T_q, T_k),
            "d": torch.einsum("hd,hijd->hij", self.v, r).expand(*q.shape[:-2], T_q, T_k),
        }


def t5_relative_bucket(
    relative_position: Tensor,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> Tensor:
    """T5's bucket for each relative position (key position minus query position).

    Bidirectional: half the buckets for keys before or at the query, half (offset
    num_buckets/2) for keys after it. Within a half of n buckets, distances below
    n/2 get their own bucket; larger ones share log-spaced buckets up to
    max_distance, and everything further saturates in the last bucket.
    Unidirectional: keys after the query all fall in bucket 0.
    Returns a long tensor of the same shape, values in [0, num_buckets).
    """
    if not isinstance(num_buckets, int) or num_buckets < (4 if bidirectional else 2):
        raise ValueError(
            f"num_buckets must be an integer >= {4 if bidirectional else 2}; got {num_buckets!r}"
        )
    relative_position = torch.as_tensor(relative_position)
    if relative_position.is_floating_point():
        raise ValueError(f"relative positions must be integers; got {relative_position.dtype}")
    bucket = torch.zeros_like(relative_position, dtype=torch.long)
    n = num_buckets
    if bidirectional:
        n //= 2
        bucket = bucket + (relative_position > 0).long() * n  # keys after the query
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)  # keys after the query count as distance 0
    exact = n // 2
    if max_distance <= exact:
        raise ValueError(
            f"max_distance must exceed the {exact} exactly-bucketed distances (num_buckets="
            f"{num_buckets}, bidirectional={bidirectional}); got max_distance={max_distance}"
        )
    # Log-spaced above `exact`: distance exact * (max_distance/exact)^(m/(n-exact)) opens bucket
    # exact + m. float32, as in T5, so results agree with it bit for bit.
    safe = distance.clamp(min=1).float()
    log_bucket = (
        exact + (torch.log(safe / exact) / math.log(max_distance / exact) * (n - exact)).long()
    )
    log_bucket = log_bucket.clamp(max=n - 1)  # saturate
    return bucket + torch.where(distance < exact, distance, log_bucket)


class T5RelativeBias(ScoreBias):
    """Raffel et al. (2020): a learned bias per head and bucket, added to the scores.

    bias[h, i, j] = table[t5_relative_bucket(j - i), h], shape (H, T_q, T_k).
    Set ``bidirectional=False`` for causal attention, as T5's decoder does.
    """

    def __init__(
        self,
        n_head: int,
        bidirectional: bool = True,
        num_buckets: int = 32,
        max_distance: int = 128,
        init_std: float = 0.02,
    ):
        super().__init__()
        self.bidirectional, self.num_buckets, self.max_distance = (
            bidirectional,
            num_buckets,
            max_distance,
        )
        self.table = nn.Parameter(torch.randn(num_buckets, n_head) * init_std)  # (buckets, H)

    def buckets(self, T_q: int, T_k: int, device=None) -> Tensor:
        rel = relative_position(T_q, T_k, device)  # (T_q, T_k)
        return t5_relative_bucket(rel, self.bidirectional, self.num_buckets, self.max_distance)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        buckets = self.buckets(q.shape[-2], k.shape[-2], q.device)  # (T_q, T_k)
        return self.table[buckets].permute(2, 0, 1).to(q.dtype)  # (H, T_q, T_k)


def alibi_slopes(n_head: int) -> Tensor:
    """Press et al. (2022): one slope per head, (H,) float32.

    For H a power of two: the geometric sequence 2^(-8/H), 2^(-16/H), ..., 2^(-8).
    Otherwise: the slopes for the largest power of two P < H, then every other
    slope of the 2P sequence, until there are H.
    """
    if not isinstance(n_head, int) or n_head <= 0:
        raise ValueError(f"n_head must be a positive integer; got n_head={n_head!r}")

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    p = 2 ** math.floor(math.log2(n_head))
    slopes = power_of_two(p)
    if p < n_head:
        slopes += power_of_two(2 * p)[0::2][: n_head - p]
    return torch.tensor(slopes, dtype=torch.float32)  # (H,)


class ALiBiBias(ScoreBias):
    """Press et al. (2022): bias -slope_h * (i - j), no parameters.

    ``causal=True`` (the paper's setting): positive for future keys, which the causal
    mask removes. ``causal=False`` uses -slope_h * abs(i - j), a common symmetric variant.
    """

    def __init__(self, n_head: int, causal: bool = True):
        super().__init__()
        self.causal = causal
        self.register_buffer("slopes", alibi_slopes(n_head), persistent=False)  # (H,)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        distance = -relative_position(q.shape[-2], k.shape[-2], q.device)  # (T_q, T_k): i - j
        if not self.causal:
            distance = distance.abs()
        return -self.slopes[:, None, None] * distance.to(q.dtype)  # (H, T_q, T_k)


# ---------------------------------------------------------------------------------------
# 3. Rotating q and k: RoPE and ReRoPE
# ---------------------------------------------------------------------------------------


def apply_rope(
    x: Tensor, positions: Tensor, base: float = 10000.0, layout: str = "interleaved"
) -> Tensor:
    r"""Rotate each dimension pair of x by its position (Su et al., RoFormer).

    x: (..., T, d), d even; positions: (T,) or broadcastable to x.shape[:-1], any real.
    Pair i turns by the angle positions * base^(-2i/d).
    layout="interleaved": pairs (2i, 2i+1), as in the RoFormer paper.
    layout="half": pairs (i, i + d/2), as in GPT-NeoX and Hugging Face's LLaMA code;
    :func:`rope_layout_permutation` maps one onto the other.
    """
    d = x.shape[-1]
    _check_even("the last dimension d of x", d)
    if layout not in ("interleaved", "half"):
        raise ValueError(f"layout must be 'interleaved' or 'half'; got {layout!r}")
    positions = torch.as_tensor(positions, device=x.device)
    try:
        torch.broadcast_shapes(positions.shape, x.shape[:-1])
    except RuntimeError:
        raise ValueError(
            f"positions of shape {_shape(positions)} do not broadcast to x's (..., T) = "
            f"{tuple(x.shape[:-1])}"
        ) from None
    angle = positions.to(torch.float64)[..., None] * sinusoidal_frequencies(d, base).to(x.device)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # (..., T, d/2)
    if layout == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # (..., T, d/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., T, d)


def rope_layout_permutation(d: int) -> Tensor:
    """Index p with x_half[..., p] in the interleaved layout: [0, d/2, 1, d/2 + 1, ...].

    apply_rope(x[..., p], pos) == apply_rope(x, pos, layout="half")[..., p]; applying
    p to the rows of W_q and W_k turns checkpoints of one layout into the other.
    """
    _check_even("d", d)
    return torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=-1).flatten()


class Rotation(nn.Module):
    """Group 3 interface: ``forward(q (..., T_q, d_k), k (..., T_k, d_k), scale) -> scores``.

    The scores are made from q and k rotated by their positions, so a
    rotation replaces the plain q k^T rather than adding to it.
    """

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        raise NotImplementedError


def _positions(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    T_q, T_k = q.shape[-2], k.shape[-2]
    if T_q > T_k:
        raise ValueError(f"queries are the last T_q of T_k positions; got T_q={T_q} > T_k={T_k}")
    return torch.arange(T_k - T_q, T_k, device=q.device), torch.arange(T_k, device=q.device)


class RoPE(Rotation):
    """scores_ij = scale * <R_i q_i, R_j k_j> = scale * q_i^T R_{j-i} k_j: only j - i matters."""

    def __init__(self, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.base, self.layout = base, layout

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        q_pos, k_pos = _positions(q, k)
        q = apply_rope(q, q_pos, self.base, self.layout)  # (..., T_q, d_k)
        k = apply_rope(k, k_pos, self.base, self.layout)  # (..., T_k, d_k)
        return attention_scores(q, k, scale)  # (..., T_q, T_k)


def rerope_positions(distance: Tensor, window: int, leaky: float | None = None) -> Tensor:
    """The relative position ReRoPE uses for a distance i - j (Su, 2023).

    distance below ``window``: unchanged. From ``window`` on: ``window`` (ReRoPE), or
    window + (distance - window) / leaky (Leaky ReRoPE, slope 1/leaky).
    """
    distance = torch.as_tensor(distance)
    far = torch.full_like(distance, window, dtype=torch.float64)
    if leaky is not None:
        far = window + (distance - window) / leaky
    return torch.where(distance < window, distance.to(torch.float64), far)


class ReRoPE(Rotation):
    """RoPE with the relative position clipped at ``window`` (Su, 2023), for causal attention.

    Two passes, as in Su's implementation: scores1 from q and k rotated by their own
    positions (distance i - j); scores2 from q rotated by ``window`` and k unrotated
    (distance exactly ``window``) or, leaky, q by i/leaky + window(1 - 1/leaky) and k by
    j/leaky. Each pair takes scores1 if i - j < window, else scores2.
    """

    def __init__(self, window: int, leaky: float | None = None, base: float = 10000.0):
        super().__init__()
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive integer; got window={window!r}")
        if leaky is not None and leaky < 1:
            raise ValueError(f"leaky (the k of slope 1/k) must be >= 1 or None; got {leaky!r}")
        self.window, self.leaky, self.base = window, leaky, base

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        q_pos, k_pos = _positions(q, k)
        near = attention_scores(
            apply_rope(q, q_pos, self.base), apply_rope(k, k_pos, self.base), scale
        )  # (..., T_q, T_k)
        if self.leaky is None:
            q2 = apply_rope(q, torch.full_like(q_pos, self.window), self.base)
            k2 = k
        else:
            w, s = self.window, 1.0 / self.leaky
            q2 = apply_rope(q, q_pos * s + w * (1 - s), self.base)
            k2 = apply_rope(k, k_pos * s, self.base)
        far = attention_scores(q2, k2, scale)  # (..., T_q, T_k)
        distance = q_pos[:, None] - k_pos[None, :]  # (T_q, T_k)
        return torch.where(distance < self.window, near, far)


# ---------------------------------------------------------------------------------------
# Plugging groups 2 and 3 into attention
# ---------------------------------------------------------------------------------------


class PositionalAttention(ScaledDotProductAttention):
    """Scaled dot-product attention whose ``get_scores`` takes a rotation and/or a bias.

    scores = (rotation(q, k, 1/temperature) or q k^T / temperature) + bias(q, k, 1/temperature);
    output = weights @ v (+ bias.value_term(weights)). Shapes as in the parent class.
    """

    def __init__(
        self,
        temperature: float,
        attn_dropout: float = 0.1,
        bias: ScoreBias | None = None,
        rotation: Rotation | None = None,
    ):
        super().__init__(temperature, attn_dropout)
        self.bias = bias
        self.rotation = rotation

    def get_scores(self, q: Tensor, k: Tensor) -> Tensor:
        scale = 1.0 / self.temperature
        if self.rotation is not None:
            scores = self.rotation(q, k, scale)  # (..., T_q, T_k)
        else:
            scores = super().get_scores(q, k)  # (..., T_q, T_k)
        if self.bias is not None:
            scores = scores + self.bias(q, k, scale)
        return scores

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        out, weights = super().forward(q, k, v, mask)  # (..., T_q, d_v), (..., T_q, T_k)
        if self.bias is not None:
            extra = self.bias.value_term(weights)
            if extra is not None:
                out = out + extra  # (..., T_q, d_v)
        return out, weights


def with_positions(
    mha: MultiHeadAttention, bias: ScoreBias | None = None, rotation: Rotation | None = None
) -> MultiHeadAttention:
    """Swap ``mha.attention`` for a :class:`PositionalAttention` (same temperature, dropout)."""
    old = mha.attention
    mha.attention = PositionalAttention(old.temperature, old.dropout.p, bias, rotation)
    return mha

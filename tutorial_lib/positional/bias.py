"""Positions added to the attention scores: Shaw, Transformer-XL, T5 buckets, ALiBi (chapter Q3b).

Letters: B batch, T length (T_q queries, T_k keys), D = d_model, H = n_head, d_k and d_v.
Group 2 of :mod:`tutorial_lib.positional`: a :class:`ScoreBias` returns a tensor broadcastable
to the scores (..., T_q, T_k) and may add a term to the output. ``relative_position(T_q, T_k)``
is key position minus query position (T5's convention); ALiBi's distance i - j is its negative.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..validate import format_shape
from .absolute import _sinusoid

__all__ = [
    "relative_position",
    "ScoreBias",
    "ShawRelativePosition",
    "relative_shift",
    "TransformerXLRelativePosition",
    "t5_relative_bucket",
    "T5RelativeBias",
    "alibi_slopes",
    "ALiBiBias",
]


def relative_position(T_q: int, T_k: int, device=None) -> Tensor:
    """(T_q, T_k) long: key position j minus query position (T_k - T_q + i), T5's convention."""
    if T_q > T_k:
        raise ValueError(f"queries are the last T_q of T_k positions; got T_q={T_q} > T_k={T_k}")
    query = torch.arange(T_k - T_q, T_k, device=device)  # (T_q,)
    key = torch.arange(T_k, device=device)  # (T_k,)
    return key[None, :] - query[:, None]  # (T_q, T_k)


def _require_heads(bias: nn.Module, q: Tensor) -> None:
    """A bias per head, (H, T_q, T_k), needs q (..., H, T_q, d_k) with its H: without the head
    axis, or with another H, it would broadcast over the batch instead, silently."""
    if q.dim() < 3 or q.shape[-3] != bias.n_head:
        raise ValueError(
            f"{type(bias).__name__} was made for H = n_head = {bias.n_head} heads: q must be "
            f"(..., H, T, d_k); got q {format_shape(q)}"
        )


class ScoreBias(nn.Module):
    """Group 2 interface: scores = scale * q k^T + ``forward(q (..., T_q, d_k), k (..., T_k,
    d_k), scale)``, a bias broadcastable to (..., T_q, T_k). ``value_term(weights)`` may return a
    (..., T_q, d_v) term added to the output (only Shaw et al. use it)."""

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        raise NotImplementedError

    def value_term(self, weights: Tensor) -> Tensor | None:
        """A (..., T_q, d_v) term added to the output, or None (the default: none)."""
        return None


class ShawRelativePosition(ScoreBias):
    r"""Shaw, Uszkoreit and Vaswani (2018): learned vectors per clipped relative position.
    e_ij = q_i . (k_j + a^K_ij) * scale, z_i = sum_j w_ij (v_j + a^V_ij), a_ij = table[clip(j - i,
    -K, K)] with K = max_relative_position; the 2K+1 vectors are shared by all heads."""

    def __init__(self, d_k: int, d_v: int, max_relative_position: int, init_std: float = 0.02):
        super().__init__()
        self.d_k, self.d_v, self.K = d_k, d_v, max_relative_position
        self.a_k = nn.Parameter(torch.randn(2 * self.K + 1, d_k) * init_std)  # (2K+1, d_k)
        self.a_v = nn.Parameter(torch.randn(2 * self.K + 1, d_v) * init_std)  # (2K+1, d_v)

    def index(self, T_q: int, T_k: int, device=None) -> Tensor:
        """(T_q, T_k) row of the table used for each pair: clip(j - i, -K, K) + K."""
        return relative_position(T_q, T_k, device).clamp(-self.K, self.K) + self.K

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        T_q, T_k = q.shape[-2], k.shape[-2]
        index = self.index(T_q, T_k, q.device)  # (T_q, T_k)
        # Dot every query with the 2K+1 vectors once, then pick the one each key needs.
        per_distance = q @ self.a_k.T.to(q.dtype)  # (..., T_q, 2K+1)
        index = index.expand(*per_distance.shape[:-1], T_k)  # (..., T_q, T_k)
        return per_distance.gather(-1, index) * scale  # (..., T_q, T_k)

    def value_term(self, weights: Tensor) -> Tensor:
        """weights (..., T_q, T_k) -> sum_j w_ij a^V_ij, (..., T_q, d_v)."""
        T_q, T_k = weights.shape[-2:]
        index = self.index(T_q, T_k, weights.device).expand(weights.shape)  # (..., T_q, T_k)
        # Sum the weights that fall on each clipped distance, then mix the a^V vectors.
        per_distance = weights.new_zeros(*weights.shape[:-1], 2 * self.K + 1)
        per_distance = per_distance.scatter_add(-1, index, weights)  # (..., T_q, 2K+1)
        return per_distance @ self.a_v.to(weights.dtype)  # (..., T_q, d_v)


def relative_shift(full: Tensor, T_k: int) -> Tensor:
    """Transformer-XL's relative shift, done with a pad and a reshape instead of a gather:
    full (..., T_q, T_q + T_k - 1), whose column c holds distance T_k - 1 - c (largest first),
    -> (..., T_q, T_k) whose (i, j) entry is the column for distance (T_k - T_q + i) - j."""
    *lead, T_q, L = full.shape
    if L != T_q + T_k - 1:  # a wrong T_k would shift every row, silently
        raise ValueError(
            f"expected the last axis to hold T_q + T_k - 1 = {T_q + T_k - 1} distances; "
            f"got {format_shape(full)}"
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
        self.n_head, self.d_k, self.base = n_head, d_k, base
        self.d_pos = d_pos or n_head * d_k  # even: sinusoids come in (sin, cos) pairs
        self.w_r = nn.Linear(self.d_pos, n_head * d_k, bias=False)
        self.u = nn.Parameter(torch.zeros(n_head, d_k))  # (H, d_k)
        self.v = nn.Parameter(torch.zeros(n_head, d_k))  # (H, d_k)

    def projected(self, distances: Tensor) -> Tensor:
        """W_R R_d for each distance d: (N,) -> (H, N, d_k)."""
        r = _sinusoid(distances, self.d_pos, self.base).to(self.w_r.weight.dtype)  # (N, d_pos)
        r = self.w_r(r).view(-1, self.n_head, self.d_k)  # (N, H, d_k)
        return r.transpose(0, 1)  # (H, N, d_k)

    def position_terms(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        """scale * ((b) + (d)), the part of the score that depends on i - j: (..., H, T_q, T_k)."""
        _require_heads(self, q)
        T_q, T_k = q.shape[-2], k.shape[-2]
        if T_q > T_k:
            raise ValueError(
                f"queries are the last T_q of T_k positions; got T_q={T_q} > T_k={T_k}"
            )
        distances = torch.arange(T_k - 1, -T_q, -1, device=q.device)  # (T_q + T_k - 1,)
        r = self.projected(distances)  # (H, T_q + T_k - 1, d_k)
        position = (q + self.v[:, None].to(q.dtype)) @ r.to(q.dtype).transpose(
            -2, -1
        )  # (..., H, T_q, T_q + T_k - 1)
        return relative_shift(position, T_k) * scale  # (..., H, T_q, T_k)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        position = self.position_terms(q, k, scale)  # (b) + (d)
        content_bias = self.u[:, None].to(k.dtype) @ k.transpose(-2, -1)  # (c): (..., H, 1, T_k)
        return position + content_bias * scale  # (..., H, T_q, T_k)

    def four_terms(self, q: Tensor, k: Tensor) -> dict[str, Tensor]:
        """The four unscaled terms computed directly, pair by pair: each (..., H, T_q, T_k)."""
        T_q, T_k = q.shape[-2], k.shape[-2]
        distance = -relative_position(T_q, T_k, q.device)  # (T_q, T_k): i - j
        r = (
            self.projected(distance.flatten()).unflatten(1, (T_q, T_k)).to(q.dtype)
        )  # (H, T_q, T_k, d_k)
        u, v = self.u.to(q.dtype), self.v.to(q.dtype)  # (H, d_k) each
        return {
            "a": q @ k.transpose(-2, -1),
            "b": torch.einsum("...hid,hijd->...hij", q, r),
            "c": torch.einsum("hd,...hjd->...hj", u, k)
            .unsqueeze(-2)
            .expand(*k.shape[:-2], T_q, T_k),
            "d": torch.einsum("hd,hijd->hij", v, r).expand(*q.shape[:-2], T_q, T_k),
        }


def t5_relative_bucket(
    relative_position: Tensor,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> Tensor:
    """T5's bucket for each relative position (key position minus query position), a long
    tensor of the same shape with values in [0, num_buckets). Bidirectional: half the buckets
    for keys before or at the query, half (offset num_buckets/2) for keys after it; within a
    half of n buckets, distances below n/2 get their own bucket, larger ones share log-spaced
    buckets up to max_distance, and further ones the last bucket. Unidirectional: keys after
    the query all fall in bucket 0."""
    _require_buckets(bidirectional, num_buckets, max_distance)
    relative_position = torch.as_tensor(relative_position)
    bucket = torch.zeros_like(relative_position, dtype=torch.long)
    n = num_buckets
    if bidirectional:
        n //= 2
        bucket = bucket + (relative_position > 0).long() * n  # keys after the query
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)  # keys after the query count as distance 0
    exact = n // 2
    # Log-spaced above `exact`: distance exact * (max_distance/exact)^(m/(n-exact)) opens bucket
    # exact + m. float32, as in T5, so results agree with it bit for bit.
    safe = distance.clamp(min=1).float()
    log_bucket = (
        exact + (torch.log(safe / exact) / math.log(max_distance / exact) * (n - exact)).long()
    )
    log_bucket = log_bucket.clamp(max=n - 1)  # saturate
    return bucket + torch.where(distance < exact, distance, log_bucket)


def _require_buckets(bidirectional: bool, num_buckets: int, max_distance: int) -> None:
    """Raise unless the log-spaced buckets exist: an exact bucket, and max_distance past them."""
    exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    if exact < 1 or max_distance <= exact:
        raise ValueError(
            f"T5's buckets need num_buckets >= {4 if bidirectional else 2} (bidirectional="
            f"{bidirectional}) and max_distance above the {exact} exactly-bucketed distances; got "
            f"num_buckets={num_buckets}, max_distance={max_distance}"
        )


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
        _require_buckets(bidirectional, num_buckets, max_distance)
        self.n_head, self.bidirectional = n_head, bidirectional
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.table = nn.Parameter(torch.randn(num_buckets, n_head) * init_std)  # (buckets, H)

    def buckets(self, T_q: int, T_k: int, device=None) -> Tensor:
        """(T_q, T_k) long: the bucket of each (query, key) pair."""
        rel = relative_position(T_q, T_k, device)  # (T_q, T_k)
        return t5_relative_bucket(rel, self.bidirectional, self.num_buckets, self.max_distance)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        _require_heads(self, q)
        buckets = self.buckets(q.shape[-2], k.shape[-2], q.device)  # (T_q, T_k)
        return self.table[buckets].permute(2, 0, 1).to(q.dtype)  # (H, T_q, T_k)


def alibi_slopes(n_head: int) -> Tensor:
    """Press et al. (2022): one slope per head, (H,) float32. For H a power of two the
    geometric sequence 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise the slopes for the largest
    power of two P < H, then every other slope of the 2P sequence, until there are H."""

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
        self.n_head, self.causal = n_head, causal
        self.register_buffer("slopes", alibi_slopes(n_head), persistent=False)  # (H,)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        _require_heads(self, q)
        distance = -relative_position(q.shape[-2], k.shape[-2], q.device)  # (T_q, T_k): i - j
        if not self.causal:
            distance = distance.abs()
        # In q's dtype: float16 and bfloat16 scores stay in their precision (slopes are float32).
        return (-self.slopes[:, None, None] * distance).to(q.dtype)  # (H, T_q, T_k)

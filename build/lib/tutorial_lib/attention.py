"""Scaled dot-product attention and multi-head attention.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (T_q for queries, T_k for keys and values)
    D    d_model, the width of the residual stream
    H    n_head, the number of heads
    d_k  per-head width of queries and keys
    d_v  per-head width of values

Mask convention: boolean, True = may attend, as in
``torch.nn.functional.scaled_dot_product_attention``.

Introduced in chapter Q1 ("Why does each head work in a lower dimension?").

Over 300 lines on purpose: this is the one place where scores are made and masks are
defined, and every other module builds on it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = [
    "format_shape",
    "check_shape",
    "attention_scores",
    "masked_softmax",
    "scaled_dot_product_attention",
    "ScaledDotProductAttention",
    "MultiHeadAttention",
    "causal_mask",
    "padding_mask",
]


def format_shape(t: Tensor | tuple[int, ...] | torch.Size) -> str:
    """A tensor's shape (or a shape) as the book writes it: ``(2, 5, 512)``."""
    shape = t.shape if isinstance(t, Tensor) else tuple(t)
    return "(" + ", ".join(str(s) for s in shape) + ")"


def check_shape(t: Tensor, expected: tuple[int, ...], letters: str | None = None) -> None:
    """Stop a lesson the moment a tensor is not the shape we claim.

    ``check_shape(q, (B, H, T, d_k), "(B, H, T, d_k)")`` raises ``ValueError`` naming the
    expected shape (in the book's letters when given) and the shape found.
    """
    if not isinstance(t, Tensor):
        raise ValueError(
            f"expected a tensor of shape {format_shape(expected)}; got {type(t).__name__}"
        )
    if tuple(t.shape) != tuple(expected):
        named = f" {letters}" if letters else ""
        raise ValueError(f"expected shape{named} = {format_shape(expected)}; got {format_shape(t)}")


def _check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., T, d), e.g. (B, H, T, d_k); "
                f"got {name} of shape {format_shape(t)}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "q and k must share their last dimension d_k (a score is a dot product of a "
            f"query with a key); got q (..., T_q, d_k={q.shape[-1]}) and "
            f"k (..., T_k, d_k={k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            "k and v must have the same length T_k (one value per key); got "
            f"k (..., T_k={k.shape[-2]}, d_k) and v (..., T_k={v.shape[-2]}, d_v)"
        )
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "the leading dimensions of q, k and v (e.g. B, H) must match or broadcast; got "
            f"q {format_shape(q)}, k {format_shape(k)}, v {format_shape(v)}"
        ) from None


def attention_scores(q: Tensor, k: Tensor, scale: float | None = None) -> Tensor:
    """The one place where attention scores are made: ``scale * q @ k^T``.

    q: (..., T_q, d_k), k: (..., T_k, d_k) -> scores (..., T_q, T_k).
    ``scale`` defaults to 1/sqrt(d_k) (chapter Q2 says why).
    """
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return (q @ k.transpose(-2, -1)) * scale  # (..., T_q, T_k)


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the keys (last axis), with positions where ``mask`` is False removed.

    scores: (..., T_q, T_k); mask: bool, broadcastable to scores, True = may attend.
    A query whose row is entirely masked gets all-zero weights (it attends to
    nothing and so receives nothing), not the NaN that a plain softmax over
    a row of -inf would give.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be boolean (True = may attend); got dtype {mask.dtype}. "
            "For an additive bias, add it to the scores instead."
        )
    try:
        shape = torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        shape = None
    if shape != scores.shape:
        raise ValueError(
            f"mask of shape {format_shape(mask)} does not broadcast to the scores' shape "
            f"{format_shape(scores)} (..., T_q, T_k); a padding mask is usually (B, 1, 1, T_k) "
            "and a causal mask (T_q, T_k)"
        )
    any_allowed = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    # Rows with nothing allowed get finite scores, so softmax stays NaN-free; they are zeroed below.
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~any_allowed, 0.0)
    return torch.softmax(scores, dim=-1) * any_allowed


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, returning the weights too.

    Args:
        q: (..., T_q, d_k) queries, usually (B, H, T_q, d_k).
        k: (..., T_k, d_k) keys.
        v: (..., T_k, d_v) values.
        mask: bool, broadcastable to (..., T_q, T_k); True = may attend.
        scale: multiplies the scores; defaults to 1/sqrt(d_k).

    Returns:
        output (..., T_q, d_v) and weights (..., T_q, T_k). A fully masked
        query row has zero weights and a zero output.
    """
    _check_qkv(q, k, v)
    scores = attention_scores(q, k, scale)  # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)  # (..., T_q, T_k)
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


class ScaledDotProductAttention(nn.Module):
    """Module form with the seed code's interface: ``temperature`` divides the scores.

    ``forward(q, k, v, mask=None) -> (output, attn)``; shapes as in
    :func:`scaled_dot_product_attention`. Dropout acts on the weights, as in
    the Transformer paper. Subclasses change how scores are made by
    overriding :meth:`get_scores` (the positional-encoding chapters do).
    The last weights are kept in ``self.attn`` for plotting.
    """

    def __init__(self, temperature: float, attn_dropout: float = 0.1):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive (usually sqrt(d_k)); got {temperature}")
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)
        self.attn: Tensor | None = None

    def get_scores(self, q: Tensor, k: Tensor) -> Tensor:
        """q (..., T_q, d_k), k (..., T_k, d_k) -> scores (..., T_q, T_k)."""
        return attention_scores(q, k, scale=1.0 / self.temperature)

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        _check_qkv(q, k, v)
        scores = self.get_scores(q, k)  # (..., T_q, T_k)
        weights = self.dropout(masked_softmax(scores, mask))  # (..., T_q, T_k)
        self.attn = weights.detach()
        return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the seed code's interface (post-LayerNorm, residual inside).

    MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    ``forward(q, k, v, mask=None) -> (output, attn)``:
        q: (B, T_q, D), k and v: (B, T_k, D);
        mask: bool, (B, T_q, T_k) or (B, 1, T_k) or anything that broadcasts
        to (B, T_q, T_k); True = may attend. It is shared by every head.
        output: LayerNorm(q + dropout(W^O concat(heads))), (B, T_q, D);
        attn: (B, H, T_q, T_k).

    The H per-head projections W_i^Q (D x d_k) are stored side by side as one
    Linear ``w_qs`` of shape (H*d_k, D): one big matrix multiply instead of H
    small ones, which chapter Q1 shows gives the same numbers.
    """

    def __init__(self, n_head: int, d_model: int, d_k: int, d_v: int, dropout: float = 0.1):
        super().__init__()
        for name, value in (("n_head", n_head), ("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
        self.n_head = n_head
        self.d_model = d_model
        self.d_k = d_k
        self.d_v = d_v

        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)

        self.attention = ScaledDotProductAttention(temperature=d_k**0.5, attn_dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def _check_inputs(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> None:
        D = self.d_model
        for name, t in (("q", q), ("k", k), ("v", v)):
            if t.dim() != 3:
                raise ValueError(
                    f"{name} must be 3-D (B, T, D) with D = d_model = {D}; "
                    f"got {t.dim()}-D {name} of shape {format_shape(t)}"
                )
            if t.shape[-1] != D:
                raise ValueError(
                    f"{name} must have last dimension D = d_model = {D}; "
                    f"got {name} of shape {format_shape(t)}"
                )
        if not (q.shape[0] == k.shape[0] == v.shape[0]):
            raise ValueError(
                "q, k and v must share the batch size B; got "
                f"q {format_shape(q)}, k {format_shape(k)}, v {format_shape(v)}"
            )
        if k.shape[1] != v.shape[1]:
            raise ValueError(
                "k and v must have the same length T_k; got "
                f"k {format_shape(k)} and v {format_shape(v)}"
            )
        if mask is not None:
            B, T_q, T_k = q.shape[0], q.shape[1], k.shape[1]
            try:
                ok = torch.broadcast_shapes(mask.shape, (B, T_q, T_k)) == (B, T_q, T_k)
            except RuntimeError:
                ok = False
            if not ok or mask.dim() > 3:
                raise ValueError(
                    f"mask must broadcast to (B, T_q, T_k) = ({B}, {T_q}, {T_k}), e.g. "
                    f"(B, 1, T_k) for padding or (T_q, T_k) for a causal mask; "
                    f"got mask of shape {format_shape(mask)}"
                )

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """q (B, T_q, D), k and v (B, T_k, D), mask as in the class docstring ->
        output (B, T_q, D), attn (B, H, T_q, T_k)."""
        self._check_inputs(q, k, v, mask)
        k, v = self.project_kv(k, v)  # (B, H, T_k, d_k), (B, H, T_k, d_v)
        return self.attend(q, k, v, mask)

    def project_kv(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Steps 1 and 2 for keys and values: k (B, T_k, D), v (B, T_k, D) ->
        k (B, H, T_k, d_k), v (B, H, T_k, d_v).

        A decoder that caches keys and values (chapter Q5) calls this once per new token.
        """
        B, T_k, H = k.size(0), k.size(1), self.n_head
        # 1. Project, then read the last axis as H heads of width d_k (or d_v).
        k = self.w_ks(k).view(B, T_k, H, self.d_k)  # (B, T_k, H, d_k)
        v = self.w_vs(v).view(B, T_k, H, self.d_v)  # (B, T_k, H, d_v)
        # 2. Put heads next to the batch so each head attends on its own.
        return k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T_k, d_k), (B, H, T_k, d_v)

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Steps 1 to 6 for the queries q (B, T_q, D), given keys k (B, H, T_k, d_k) and
        values v (B, H, T_k, d_v) already projected by :meth:`project_kv`.

        Returns output (B, T_q, D) and attn (B, H, T_q, T_k).
        """
        B, T_q, H, d_v = q.size(0), q.size(1), self.n_head, self.d_v
        residual = q

        # 1 and 2 for the queries: project, split into heads, heads next to the batch.
        q = self.w_qs(q).view(B, T_q, H, self.d_k).transpose(1, 2)  # (B, H, T_q, d_k)

        # 3. One mask for every head.
        if mask is not None:
            if mask.dim() == 2:
                mask = mask.unsqueeze(0)  # (1, T_q, T_k)
            mask = mask.unsqueeze(1)  # (B, 1, T_q, T_k) or (B, 1, 1, T_k)

        # 4. Attention in every head at once.
        out, attn = self.attention(q, k, v, mask=mask)  # (B, H, T_q, d_v), (B, H, T_q, T_k)

        # 5. Concatenate the heads and mix them with W^O.
        out = out.transpose(1, 2).contiguous().view(B, T_q, H * d_v)  # (B, T_q, H*d_v)
        out = self.dropout(self.fc(out))  # (B, T_q, D)

        # 6. Residual, then LayerNorm (post-LN, as in the paper and the seed code).
        out = self.layer_norm(out + residual)  # (B, T_q, D)
        return out, attn


def causal_mask(T_q: int, T_k: int | None = None, device=None) -> Tensor:
    """(T_q, T_k) bool, True where query i may attend to key j, i.e. j <= i.

    With T_k > T_q (the queries are the last T_q positions, as when decoding
    with a cache) query i sits at position T_k - T_q + i.
    """
    T_k = T_q if T_k is None else T_k
    if T_q <= 0 or T_k <= 0 or T_k < T_q:
        raise ValueError(
            f"causal_mask needs 0 < T_q <= T_k (queries are the last T_q of T_k positions); "
            f"got T_q={T_q}, T_k={T_k}"
        )
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def padding_mask(lengths: Tensor | list[int], T: int) -> Tensor:
    """(B, 1, T) bool, True at the real (non-padding) tokens of each sequence.

    The shape broadcasts over queries for :class:`MultiHeadAttention`; add a
    head axis (``mask[:, None]``, giving (B, 1, 1, T)) for the functional form.
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,); got shape {format_shape(lengths)}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"every length must be between 0 and T={T}; got {lengths.tolist()}")
    return (torch.arange(T) < lengths[:, None]).unsqueeze(1)  # (B, 1, T)

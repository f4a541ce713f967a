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

About 400 lines on purpose: this is the one place where scores are made and masks are
defined and checked (so that no mask is ever misread), and every other module builds on it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .validate import (
    broadcast_shape,
    check_int,
    check_real,
    check_same_dtype,
    check_shape,
    check_tensor,
    check_tokens,
    format_shape,
    to_tensor,
)

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
    "check_mask",
]


def _check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t, "float", "(..., T, d), e.g. (B, H, T, d_k)")
        if t.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., T, d), e.g. (B, H, T, d_k); "
                f"got {name} of shape {format_shape(t)}"
            )
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"q, k and v must share one dtype; got q {q.dtype}, k {k.dtype}, v {v.dtype}"
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
    if broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2]) is None:
        raise ValueError(
            "the leading dimensions of q, k and v (e.g. B, H) must match or broadcast; got "
            f"q {format_shape(q)}, k {format_shape(k)}, v {format_shape(v)}"
        )


def _ambiguous_mask(mask: Tensor, B: int, rank: int) -> ValueError:
    """The error for a 2-D mask that could be (T_q, T_k) or a (B, T_k) padding mask."""
    ones = ", ".join(["1"] * (rank - 2))
    nones = ", ".join(["None"] * (rank - 2))
    return ValueError(
        f"a 2-D mask is read as (T_q, T_k), one map shared by every sequence; here B = T_q = {B}, "
        f"so a (B, T_k) padding mask would have the same shape {format_shape(mask)} and be "
        f"misread. Give the mask the scores' rank {rank}: mask[{nones}] ({ones}, T_q, T_k) for "
        f"a map shared by the batch, or padding[:, {nones}] (B, {ones}, T_k) for a padding mask"
    )


def check_mask(mask: Tensor, scores_shape: tuple[int, ...] | torch.Size) -> None:
    """Raise unless ``mask`` is a bool mask that reads unambiguously against these scores.

    scores: (..., T_q, T_k). The mask has the scores' rank, with each axis equal to the
    scores' or 1 (so nothing broadcasts the scores into a bigger shape), or it is a
    2-D (T_q, T_k) map shared by every leading index. A 2-D mask is refused when the
    batch size B (the first axis) equals T_q: it could then be a (B, T_k) padding mask.
    """
    check_tensor("mask", mask, "bool", "(..., T_q, T_k), True = may attend")
    shape = tuple(scores_shape)
    rank = len(shape)
    fits = mask.dim() in (rank, 2) and mask.dim() <= rank
    if fits:
        tail = shape[rank - mask.dim() :]
        fits = all(m in (1, s) for m, s in zip(mask.shape, tail, strict=True))
    if not fits:
        raise ValueError(
            f"mask of shape {format_shape(mask)} does not fit the scores' shape "
            f"{format_shape(shape)} (..., T_q, T_k): give it the scores' rank, each axis equal "
            "or 1, or make it 2-D (T_q, T_k). A padding mask is usually (B, 1, 1, T_k) for "
            "(B, H, T_q, T_k) scores and (B, 1, T_k) for (B, T_q, T_k) scores; a causal mask "
            "(T_q, T_k)"
        )
    if mask.dim() == 2 < rank and shape[0] == shape[-2] == mask.shape[0] > 1:
        raise _ambiguous_mask(mask, shape[0], rank)


def attention_scores(q: Tensor, k: Tensor, scale: float | None = None) -> Tensor:
    """The one place where attention scores are made: ``scale * q @ k^T``.

    q: (..., T_q, d_k), k: (..., T_k, d_k) -> scores (..., T_q, T_k).
    ``scale`` defaults to 1/sqrt(d_k) (chapter Q2 says why).
    """
    _check_qkv(q, k, k)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else check_real("scale", scale)
    return (q @ k.transpose(-2, -1)) * scale  # (..., T_q, T_k)


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the keys (last axis), with positions where ``mask`` is False removed.

    scores: (..., T_q, T_k); mask: bool, True = may attend, as :func:`check_mask` allows:
    the scores' rank (each axis equal or 1), or 2-D (T_q, T_k).
    A query whose row is entirely masked gets all-zero weights (it attends to
    nothing and so receives nothing), not the NaN that a plain softmax over
    a row of -inf would give.
    """
    check_tensor("scores", scores, "float", "(..., T_q, T_k)")
    if scores.dim() < 1:
        raise ValueError(
            "scores must have at least one axis, the keys (..., T_k); got a 0-D tensor"
        )
    if mask is None:
        return torch.softmax(scores, dim=-1)
    check_mask(mask, scores.shape)
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
        mask: bool, True = may attend: the scores' rank, e.g. (B, 1, 1, T_k) for padding
            with (B, H, T_q, T_k) scores, or 2-D (T_q, T_k); see :func:`check_mask`.
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
        self.temperature = check_real(
            "temperature", temperature, above=0, why="(usually sqrt(d_k))"
        )
        self.dropout = nn.Dropout(check_real("attn_dropout", attn_dropout, minimum=0, maximum=1))
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


def _mha_mask(mask: Tensor | None, B: int, T_q: int, T_k: int) -> Tensor | None:
    """``mask`` for :class:`MultiHeadAttention` as a 3-D (B or 1, T_q or 1, T_k) tensor."""
    if mask is None:
        return None
    check_tensor("mask", mask, "bool", "(B, T_q, T_k) or (T_q, T_k), True = may attend")
    if mask.dim() == 2 and mask.shape[-1] == T_k and mask.shape[0] == B != T_q:
        raise ValueError(
            f"a 2-D mask is read as (T_q, T_k) = ({T_q}, {T_k}), shared by every sequence; got "
            f"mask of shape {format_shape(mask)}, which looks like a (B, T_k) padding mask: pass "
            "it as key_padding_mask=, or as mask[:, None] (B, 1, T_k)"
        )
    full = (B, T_q, T_k)
    fits = mask.dim() in (2, 3) and all(
        m in (1, s) for m, s in zip(mask.shape, full[3 - mask.dim() :], strict=True)
    )
    if not fits:
        raise ValueError(
            f"mask must broadcast to (B, T_q, T_k) = ({B}, {T_q}, {T_k}) with the same rank: "
            "3-D, e.g. (B, 1, T_k) for padding, or 2-D (T_q, T_k) for a causal mask; "
            f"got mask of shape {format_shape(mask)}"
        )
    if mask.dim() == 2 and B == T_q == mask.shape[0] > 1:
        raise _ambiguous_mask(mask, B, 3)
    return mask if mask.dim() == 3 else mask.unsqueeze(0)  # (B or 1, T_q or 1, T_k)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the seed code's interface (post-LayerNorm, residual inside).

    MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    ``forward(q, k, v, mask=None, key_padding_mask=None) -> (output, attn)``:
        q: (B, T_q, D), k and v: (B, T_k, D);
        mask: bool, True = may attend: (B, T_q, T_k), (B, 1, T_k) for padding, or a
        2-D (T_q, T_k) map shared by every sequence (a causal mask). A 2-D mask is never
        read as (B, T_k): it is refused when B = T_q, where the two cannot be told apart;
        key_padding_mask: bool (B, T_k), True = a real key, as ``torch.nn.MultiheadAttention``
        takes it (where True means padding instead). Both masks are shared by every head
        and combined with AND.
        output: LayerNorm(q + dropout(W^O concat(heads))), (B, T_q, D);
        attn: (B, H, T_q, T_k).

    The H per-head projections W_i^Q (D x d_k) are stored side by side as one
    Linear ``w_qs`` of shape (H*d_k, D): one big matrix multiply instead of H
    small ones, which chapter Q1 shows gives the same numbers.
    """

    def __init__(self, n_head: int, d_model: int, d_k: int, d_v: int, dropout: float = 0.1):
        super().__init__()
        self.n_head = n_head = check_int("n_head", n_head, why="(H, the number of heads)")
        self.d_model = d_model = check_int("d_model", d_model, why="(D)")
        self.d_k = d_k = check_int("d_k", d_k)
        self.d_v = d_v = check_int("d_v", d_v)
        dropout = check_real("dropout", dropout, minimum=0, maximum=1)

        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)

        self.attention = ScaledDotProductAttention(temperature=d_k**0.5, attn_dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def _check_tokens(self, name: str, t: Tensor) -> None:
        check_tokens(t, self.d_model, "MultiHeadAttention", name)
        check_same_dtype(name, t, self.w_qs.weight, "MultiHeadAttention")

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """q (B, T_q, D), k and v (B, T_k, D), masks as in the class docstring ->
        output (B, T_q, D), attn (B, H, T_q, T_k)."""
        for name, t in (("q", q), ("k", k), ("v", v)):
            self._check_tokens(name, t)
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
        B, T_q, T_k = q.shape[0], q.shape[1], k.shape[1]
        mask = _mha_mask(mask, B, T_q, T_k)  # (B or 1, T_q or 1, T_k)
        if key_padding_mask is not None:
            check_tensor("key_padding_mask", key_padding_mask, "bool", "(B, T_k), True = real")
            if tuple(key_padding_mask.shape) != (B, T_k):
                raise ValueError(
                    f"key_padding_mask must be (B, T_k) = ({B}, {T_k}), True at real keys; "
                    f"got key_padding_mask of shape {format_shape(key_padding_mask)}"
                )
            keys = key_padding_mask.unsqueeze(1)  # (B, 1, T_k)
            mask = keys if mask is None else mask & keys
        k, v = self.project_kv(k, v)  # (B, H, T_k, d_k), (B, H, T_k, d_v)
        return self.attend(q, k, v, mask)

    def project_kv(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Steps 1 and 2 for keys and values: k (B, T_k, D), v (B, T_k, D) ->
        k (B, H, T_k, d_k), v (B, H, T_k, d_v).

        A decoder that caches keys and values (chapter Q5) calls this once per new token.
        """
        self._check_tokens("k", k)
        self._check_tokens("v", v)
        if k.shape[:2] != v.shape[:2]:
            raise ValueError(
                f"k and v must share (B, T_k); got k {format_shape(k)} and v {format_shape(v)}"
            )
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
        values v (B, H, T_k, d_v) already projected by :meth:`project_kv`; mask as in
        :meth:`forward`.

        Returns output (B, T_q, D) and attn (B, H, T_q, T_k).
        """
        self._check_tokens("q", q)
        B, T_q, H, d_v = q.size(0), q.size(1), self.n_head, self.d_v
        for name, t, d in (("k", k, self.d_k), ("v", v, d_v)):
            check_tensor(name, t, "float", "(B, H, T_k, d), projected by project_kv")
            if t.dim() != 4 or t.shape[0] != B or t.shape[1] != H or t.shape[3] != d:
                raise ValueError(
                    f"attend takes {name} already projected by project_kv: (B, H, T_k, "
                    f"{'d_k' if name == 'k' else 'd_v'}) = ({B}, {H}, T_k, {d}); "
                    f"got {name} of shape {format_shape(t)}"
                )
        if k.shape[2] != v.shape[2]:
            raise ValueError(
                f"k and v must share T_k; got k {format_shape(k)}, v {format_shape(v)}"
            )
        mask = _mha_mask(mask, B, T_q, k.shape[2])
        residual = q

        # 1 and 2 for the queries: project, split into heads, heads next to the batch.
        q = self.w_qs(q).view(B, T_q, H, self.d_k).transpose(1, 2)  # (B, H, T_q, d_k)

        # 3. One mask for every head.
        if mask is not None:
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
    T_q = check_int("T_q", T_q, minimum=0)
    T_k = T_q if T_k is None else check_int("T_k", T_k, minimum=0)
    if T_k < T_q:
        raise ValueError(
            f"causal_mask needs T_q <= T_k (queries are the last T_q of T_k positions); "
            f"got T_q={T_q}, T_k={T_k}"
        )
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def padding_mask(lengths: Tensor | list[int], T: int) -> Tensor:
    """(B, 1, T) bool, True at the real (non-padding) tokens of each sequence.

    The shape broadcasts over queries for :class:`MultiHeadAttention`; add a
    head axis (``mask[:, None]``, giving (B, 1, 1, T)) for the functional form.
    """
    T = check_int("T", T, minimum=0)
    lengths = to_tensor("lengths", lengths, "integer", "(B,), one length per sequence")
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,); got shape {format_shape(lengths)}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"every length must be between 0 and T={T}; got {lengths.tolist()}")
    return (torch.arange(T) < lengths[:, None]).unsqueeze(1)  # (B, 1, T)

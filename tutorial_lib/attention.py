"""Scaled dot-product attention and the one attention layer every model of the book uses
(chapter Q1). Letters: B batch, T length (T_q queries, T_k keys), D = d_model, H = n_head query
heads sharing H_kv = n_kv_head key/value heads (G = H / H_kv), d_k and d_v per head.

A *temperature* divides the scores, a *scale* multiplies them: sqrt(d_k) and 1/sqrt(d_k) in the
Transformer (chapter Q2 says why). Masks are bool, True = may attend (``tutorial_lib.masks``).
:class:`Attention` has no residual or norm inside: the layers that use it show both in their
``forward``; :class:`MultiHeadAttention` is the seed code's interface built on it. Scores are
made in one place, :meth:`ScaledDotProductAttention.get_scores`, where chapter Q3b's positional
variants plug in (:mod:`tutorial_lib.positional`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .masks import causal_mask, padding_mask
from .validate import format_shape

__all__ = [
    "format_shape",
    "attention_scores",
    "require_mask",
    "masked_softmax",
    "scaled_dot_product_attention",
    "ScaledDotProductAttention",
    "KVCache",
    "Attention",
    "MultiHeadAttention",
    "causal_mask",
    "padding_mask",
]


def attention_scores(q: Tensor, k: Tensor, scale: float | None = None) -> Tensor:
    """``scale * q @ k^T`` (scale 1/sqrt(d_k) by default): q (..., T_q, d_k), k (..., T_k, d_k)
    -> scores (..., T_q, T_k)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return (q @ k.transpose(-2, -1)) * scale  # (..., T_q, T_k)


def require_mask(mask: Tensor, shape: tuple[int, ...] | torch.Size) -> None:
    """Raise unless ``mask`` reads one way only against scores of this shape (..., T_q, T_k):
    bool, of their rank with each axis equal or 1 (never making the scores bigger), or 2-D
    (T_q, T_k) unless B (the first axis) = T_q, where a (B, T_k) padding mask looks the same."""
    rank, fits = len(shape), mask.dtype == torch.bool and mask.dim() in (2, len(shape))
    for m, s in zip(mask.shape[::-1], shape[::-1], strict=False):  # from T_k backwards
        fits = fits and m in (1, s)
    misread = mask.dim() == 2 < rank and shape[0] == shape[-2] == mask.shape[0] > 1  # B = T_q
    if not fits or misread:
        raise ValueError(
            f"a {mask.dtype} mask {format_shape(mask)} does not read one way against scores "
            f"{format_shape(shape)} (..., T_q, T_k): make it bool, of their rank, each axis equal "
            f"or 1 (padding: padding[:, {'None, ' * (rank - 3)}None]), or 2-D (T_q, T_k) unless "
            "B = T_q, where a (B, T_k) padding mask has that shape too and would be misread"
        )


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax of scores (..., T_q, T_k) over the keys, without those where ``mask`` (as
    :func:`require_mask` allows) is False. A query that may read nothing gets all-zero weights,
    not the NaN of a softmax over a row of -inf."""
    if mask is not None:
        require_mask(mask, scores.shape)
        any_allowed = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
        # Rows with nothing allowed keep their finite scores, so softmax stays NaN-free; they are
        # zeroed below. (Worked out on the small mask: one pass over the scores, not two.)
        scores = scores.masked_fill(~mask & any_allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights if mask is None else torch.where(any_allowed, weights, 0.0)


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, scale: float | None = None
) -> tuple[Tensor, Tensor]:
    r"""Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, returning the weights too.

    q (..., T_q, d_k), usually (B, H, T_q, d_k); k (..., T_k, d_k); v (..., T_k, d_v); mask
    bool, True = may attend, e.g. (B, 1, 1, T_k) for padding, or (T_q, T_k) (see
    :func:`require_mask`); scale multiplies the scores (1/sqrt(d_k) by default) -> output
    (..., T_q, d_v), weights (..., T_q, T_k). A query that may read nothing outputs zeros.
    """
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            "attention takes q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); got "
            f"q {format_shape(q)}, k {format_shape(k)}, v {format_shape(v)}"
        )
    weights = masked_softmax(attention_scores(q, k, scale), mask)  # (..., T_q, T_k)
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


class ScaledDotProductAttention(nn.Module):
    """Module form with the seed code's interface: ``temperature`` divides the scores.

    ``forward(q, k, v, mask=None) -> (output, weights)``, shapes as in
    :func:`scaled_dot_product_attention`. ``attn_dropout`` zeroes weights while training, as the
    seed code does: tensor2tensor's ``attention_dropout`` (0 in ``transformer_base_v1``, the
    paper's configuration; 0.1 from ``transformer_base_v2``), not the paper's, whose section 5.4
    drops sub-layer outputs and embedding sums. Subclasses change how scores are made in
    :meth:`get_scores` (chapter Q3b's do). The last weights are kept in ``self.weights``.
    """

    def __init__(self, temperature: float, attn_dropout: float = 0.1):
        super().__init__()
        if not temperature > 0:  # NaN fails this too: a NaN makes every weight NaN
            raise ValueError(f"temperature divides the scores: it must be > 0; got {temperature}")
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)
        self.weights: Tensor | None = None

    def get_scores(self, q: Tensor, k: Tensor) -> Tensor:
        """q (..., T_q, d_k), k (..., T_k, d_k) -> scores (..., T_q, T_k)."""
        return attention_scores(q, k, scale=1.0 / self.temperature)

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        scores = self.get_scores(q, k)  # (..., T_q, T_k)
        weights = self.dropout(masked_softmax(scores, mask))  # (..., T_q, T_k)
        self.weights = weights.detach()
        return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


@dataclass
class KVCache:
    """The keys k (B, H_kv, t, d_k) and values v (B, H_kv, t, d_v) an :class:`Attention` has
    seen so far, as :meth:`Attention.project_kv` makes them: before any rotation (one turns them
    as the scores are made, at each step's length), one per key/value head (H / H_kv times
    fewer numbers than one per query head)."""

    k: Tensor | None = None
    v: Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add new positions k (B, H_kv, T, d_k), v (B, H_kv, T, d_v); return all of them."""
        if self.k is not None:
            k, v = torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)  # (B, H_kv, t, d)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index: Tensor) -> None:
        """Row b takes row ``index[b]``'s past (beam search moves hypotheses onto parents)."""
        self.k, self.v = self.k[index], self.v[index]


class Attention(nn.Module):
    r"""Attention with H query heads sharing H_kv key/value heads; no residual, no norm inside:
    out = W^O concat(head_1, ..., head_H), head_h = softmax(q_h k_g^T / sqrt(d_k)) v_g,
    where query head h reads key/value head g = h // G, G = H / H_kv. ``n_kv_head`` None (or
    ``n_head``): multi-head attention (Vaswani et al. 2017); 1: multi-query attention (Shazeer
    2019); in between: grouped-query attention (Ainslie et al. 2023). d_k, d_v default to D / H.
    Projections ``w_q`` (D -> H d_k), ``w_k`` (D -> H_kv d_k), ``w_v`` (D -> H_kv d_v), ``w_o``
    (H d_v -> D), bias-free as in the seed code; ``attention`` makes the scores and weights
    (:func:`tutorial_lib.positional.with_positions` swaps it); ``dropout`` acts on the weights.
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        n_kv_head: int | None = None,
        d_k: int | None = None,
        d_v: int | None = None,
        *,
        dropout: float = 0.0,
    ):
        super().__init__()
        n_kv_head = n_head if n_kv_head is None else n_kv_head
        if n_head % n_kv_head:  # every key/value head serves a group of G query heads
            raise ValueError(f"n_head = {n_head} must be a multiple of n_kv_head = {n_kv_head}")
        if d_model % n_head and None in (d_k, d_v):
            raise ValueError(f"D = {d_model} does not split into H = {n_head} heads; pass d_k, d_v")
        self.d_model, self.n_head, self.n_kv_head = d_model, n_head, n_kv_head
        self.d_k = d_model // n_head if d_k is None else d_k
        self.d_v = d_model // n_head if d_v is None else d_v
        self.w_q = nn.Linear(d_model, n_head * self.d_k, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_head * self.d_k, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_head * self.d_v, bias=False)
        self.w_o = nn.Linear(n_head * self.d_v, d_model, bias=False)
        self.attention = ScaledDotProductAttention(self.d_k**0.5, attn_dropout=dropout)

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor]:
        """x (B, T_q, D), keys and values from context (B, T_k, D) (None: x) -> out (B, T_q, D),
        weights (B, H, T_q, T_k). mask, bool and shared by the heads: (B, T_q, T_k), (B, 1, T_k)
        or (T_q, T_k) (not when B = T_q: see :func:`require_mask`). cache: context's keys and
        values join it and the queries read every position it holds."""
        context = x if context is None else context
        self._require_inputs(x, context, context, mask, 0 if cache is None else len(cache))
        k, v = self.project_kv(context)  # (B, H_kv, T_k, d_k), (B, H_kv, T_k, d_v)
        if cache is not None:
            k, v = cache.append(k, v)  # every position so far
        return self.attend(x, k, v, mask)

    def _require_inputs(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, past: int = 0):
        """Raise unless q (B, T_q, D), k and v (B, T_k, D) and a mask (B, T_q, T_k) fit."""
        if k.shape != v.shape or not q.shape[::2] == k.shape[::2] == (len(q), self.d_model):
            raise ValueError(
                f"{type(self).__name__} takes queries (B, T_q, D), keys and values (B, T_k, D), D "
                f"= {self.d_model}; got {format_shape(q)}, {format_shape(k)}, {format_shape(v)}"
            )
        if mask is not None:
            require_mask(mask, (len(q), q.shape[1], past + k.shape[1]))

    def project_kv(self, k: Tensor, v: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Steps 1 and 2 for keys and values: k (B, T_k, D) and v (B, T_k, D) (None: k) ->
        k (B, H_kv, T_k, d_k), v (B, H_kv, T_k, d_v), what a :class:`KVCache` keeps."""
        v = k if v is None else v
        B, T_k = k.shape[0], k.shape[1]
        # 1. Project, then read the last axis as H_kv heads of width d_k (or d_v).
        k = self.w_k(k).view(B, T_k, self.n_kv_head, self.d_k)  # (B, T_k, H_kv, d_k)
        v = self.w_v(v).view(B, T_k, self.n_kv_head, self.d_v)  # (B, T_k, H_kv, d_v)
        # 2. Put heads next to the batch so each head attends on its own.
        return k.transpose(1, 2), v.transpose(1, 2)  # (B, H_kv, T_k, d_k), (B, H_kv, T_k, d_v)

    def attend(
        self, x: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Steps 1 to 5 for the queries of x (B, T_q, D); k, v from :meth:`project_kv`; a checked
        mask -> out (B, T_q, D), weights (B, H, T_q, T_k)."""
        B, T_q, H = x.shape[0], x.shape[1], self.n_head
        # 1 and 2 for the queries: project, split into heads, heads next to the batch.
        q = self.w_q(x).view(B, T_q, H, self.d_k).transpose(1, 2)  # (B, H, T_q, d_k)
        # 3. One mask for every head; each key/value head serves the G query heads of its group.
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, T_q, T_k) or (B, 1, 1, T_k); (T_q, T_k) broadcasts
        if self.n_kv_head != H:  # query head h reads key/value head h // G
            k = k.repeat_interleave(H // self.n_kv_head, dim=1)  # (B, H, T_k, d_k)
            v = v.repeat_interleave(H // self.n_kv_head, dim=1)  # (B, H, T_k, d_v)
        # 4. Attention in every head at once.
        out, weights = self.attention(q, k, v, mask=mask)  # (B, H, T_q, d_v), (B, H, T_q, T_k)
        # 5. Concatenate the heads and mix them with W^O.
        out = out.transpose(1, 2).contiguous().view(B, T_q, H * self.d_v)  # (B, T_q, H*d_v)
        return self.w_o(out), weights  # (B, T_q, D), (B, H, T_q, T_k)


_SEED_NAMES = {"w_q": "w_qs", "w_k": "w_ks", "w_v": "w_vs", "w_o": "fc"}


class MultiHeadAttention(Attention):
    """The seed code's multi-head attention: :class:`Attention` with the residual and a
    LayerNorm inside (post-LN). MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O.
    ``forward(q (B, T_q, D), k (B, T_k, D), v (B, T_k, D), mask=None, real_keys=None)`` ->
    output LayerNorm(q + dropout(W^O concat(heads))) (B, T_q, D), weights (B, H, T_q, T_k).
    mask as :meth:`Attention.forward` takes it; real_keys bool (B, T_k), True at the keys a
    query may read (PyTorch's ``key_padding_mask`` means the opposite), ANDed with mask.
    ``w_qs``, ``w_ks``, ``w_vs``, ``fc`` are the seed's names for ``w_q``, ``w_k``, ``w_v``,
    ``w_o``; ``w_qs`` (H*d_k, D) holds the H per-head W_i^Q side by side (chapter Q1).
    """

    def __init__(self, n_head: int, d_model: int, d_k: int, d_v: int, dropout: float = 0.1):
        super().__init__(d_model, n_head, d_k=d_k, d_v=d_v, dropout=dropout)
        for ours, seed in _SEED_NAMES.items():  # the seed's names, so its weights load as they are
            self.add_module(seed, self._modules.pop(ours))
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    # Attention's names read the seed's modules (properties: a plain alias would register twice).
    w_q = property(lambda self: self.w_qs)
    w_k = property(lambda self: self.w_ks)
    w_v = property(lambda self: self.w_vs)
    w_o = property(lambda self: self.fc)

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None = None,
        real_keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """The seed's call, q (B, T_q, D), k and v (B, T_k, D): see the class docstring."""
        self._require_inputs(q, k, v, mask)
        if real_keys is not None:
            require_mask(real_keys, k.shape[:2])  # (B, T_k), True at the keys a query may read
            keys = real_keys.unsqueeze(1)  # (B, 1, T_k)
            mask = keys if mask is None else mask & keys
        residual = q
        k, v = self.project_kv(k, v)  # (B, H, T_k, d_k), (B, H, T_k, d_v)
        out, weights = self.attend(q, k, v, mask)  # (B, T_q, D), (B, H, T_q, T_k)

        # 6. Residual, then LayerNorm (post-LN, as in the paper and the seed code).
        return self.layer_norm(self.dropout(out) + residual), weights  # (B, T_q, D)

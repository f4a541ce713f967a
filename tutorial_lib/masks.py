"""Attention masks: which keys each query may read.

Dimension letters, fixed book-wide: B batch, T sequence length (T_q for queries, T_k for
keys and values), T_src and T_tgt for the two sides of an encoder-decoder.

Convention: boolean, **True = may attend**, as in
``torch.nn.functional.scaled_dot_product_attention``. (PyTorch's ``nn.MultiheadAttention``
takes a ``key_padding_mask`` in which True means *ignore*: the opposite.) A mask broadcasts
against the scores (..., T_q, T_k); :func:`tutorial_lib.attention.require_mask` says which
shapes read one way only.

* :func:`causal_mask` (T_q, T_k): query i reads keys j <= i, never a later one;
* :func:`padding_mask` (B, 1, T): True at the real (not padding) tokens of each sequence;
* :func:`source_mask` and :func:`target_mask`: the two masks of chapter Q5's encoder-decoder,
  made from token ids.

Introduced in chapters Q1 (causal) and Q5 (padding, source and target).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["causal_mask", "padding_mask", "source_mask", "target_mask"]


def causal_mask(T_q: int, T_k: int | None = None, device=None) -> Tensor:
    """(T_q, T_k) bool, True where query i may attend to key j, i.e. j <= i.

    With T_k > T_q (the queries are the last T_q positions, as when decoding with a cache)
    query i sits at position T_k - T_q + i.
    """
    T_k = T_q if T_k is None else T_k
    if T_k < T_q:  # the queries are the last T_q of T_k positions
        raise ValueError(f"causal_mask needs T_q <= T_k; got T_q={T_q}, T_k={T_k}")
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def padding_mask(lengths: Tensor | list[int], T: int) -> Tensor:
    """(B, 1, T) bool, True at the first ``lengths[b]`` (the real) tokens of each sequence.

    The shape broadcasts over the queries of (B, T_q, T) scores, as
    :class:`tutorial_lib.attention.MultiHeadAttention` takes a mask; add a head axis
    (``mask[:, None]``, giving (B, 1, 1, T)) for the functional form.
    """
    lengths = torch.as_tensor(lengths)  # (B,)
    return (torch.arange(T, device=lengths.device) < lengths[:, None]).unsqueeze(1)  # (B, 1, T)


def source_mask(src: Tensor, pad_id: int) -> Tensor:
    """src (B, T_src) token ids -> (B, 1, T_src) bool, True at real tokens.

    Used for encoder self-attention and for cross-attention: no query may read a padding key.
    """
    return (src != pad_id).unsqueeze(1)  # (B, 1, T_src)


def target_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """tgt (B, T_tgt) token ids -> (B, T_tgt, T_tgt) bool: causal AND not padding.

    Query i may read key j when j <= i (no peeking at later tokens) and j is a real token.
    """
    keys = (tgt != pad_id).unsqueeze(1)  # (B, 1, T_tgt)
    return causal_mask(tgt.shape[1], device=tgt.device) & keys  # (B, T_tgt, T_tgt)

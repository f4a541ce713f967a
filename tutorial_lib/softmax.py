"""Why attention scores are scaled: softmax sharpness, its Jacobian, random dot products.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (T_q for queries, T_k for keys and values)
    d_k  per-head width of queries and keys
    d_v  per-head width of values

A *row* below is one query's scores or weights over the T keys; functions act
on the last axis and keep every leading axis (..., T).

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
from torch import Tensor

from . import seeds

__all__ = [
    "SCALINGS",
    "score_scale",
    "random_dot_products",
    "softmax_entropy",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "sharpness",
    "MAX_JACOBIAN_NORM",
]

# The factor that multiplies q·k, by name. "none" is the unscaled dot product.
SCALINGS = {
    "none": lambda d_k: 1.0,
    "1/√d_k": lambda d_k: 1.0 / math.sqrt(d_k),
    "1/d_k": lambda d_k: 1.0 / d_k,
}

# ||J||_F of softmax is largest, 1/2, for two keys sharing the weight equally.
MAX_JACOBIAN_NORM = 0.5


def score_scale(d_k: int, scaling: str) -> float:
    """The number that multiplies q·k for ``scaling`` in ``SCALINGS`` at width d_k."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {list(SCALINGS)}; got {scaling!r}")
    return SCALINGS[scaling](d_k)


def random_dot_products(d_k: int, T: int, n_query: int = 64, seed: int = 0) -> Tensor:
    """Unscaled scores q·k for random q, k with i.i.d. N(0, 1) entries: (n_query, T).

    Each of the n_query queries (n_query, d_k) meets the same T keys (T, d_k), as
    the queries of one sequence do. Seeded and cached: the explorer's frames for
    one (d_k, T) share these numbers, so toggling the scaling rescales the very
    same scores. Treat the result as read-only.
    """
    return _dot_products(d_k, T, n_query, seed, seeds.book_seed())


@lru_cache(maxsize=64)
def _dot_products(d_k: int, T: int, n_query: int, seed: int, book_seed: int) -> Tensor:
    # The book seed is part of the cache key: a new BOOK_SEED must not reuse old draws.
    generator = seeds.generator("dot_products", seed)
    q = torch.randn(n_query, d_k, generator=generator)  # (n_query, d_k)
    k = torch.randn(T, d_k, generator=generator)  # (T, d_k)
    return q @ k.T  # (n_query, T)


def softmax_entropy(weights: Tensor) -> Tensor:
    """Entropy in nats of each row of weights (..., T) -> (...).

    0 for a one-hot row, log T for a uniform one; 0·log 0 counts as 0, and so does its
    gradient (log is taken of 1 where a weight is 0, so no inf enters the backward pass).
    """
    logs = torch.where(weights > 0, weights, torch.ones_like(weights)).log()  # 0 where p = 0
    return -(weights * logs).sum(-1)


def softmax_jacobian(weights: Tensor) -> Tensor:
    """d softmax(s) / d s for each row: diag(p) - p p^T, from weights p (..., T) -> (..., T, T)."""
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)


def softmax_jacobian_norm(weights: Tensor) -> Tensor:
    """Frobenius norm of each row's softmax Jacobian, without building it: (..., T) -> (...).

    ||diag(p) - p p^T||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2. It bounds how
    much of an upstream gradient reaches the scores: near 0 both for a one-hot
    row (saturated) and for a long uniform row (about 1/sqrt(T)); at most 1/2.
    """
    p2 = (weights**2).sum(-1)
    p3 = (weights**3).sum(-1)
    return (p2 - 2 * p3 + p2**2).clamp_min(0).sqrt()


def sharpness(scores: Tensor) -> dict[str, Tensor]:
    """How peaked softmax makes each row of scores (..., T): a dict of (...) tensors.

    ``entropy`` (nats), ``entropy_fraction`` (entropy / log T: 1 = uniform, 0 = one-hot),
    ``max_weight`` (the row's largest weight) and ``jacobian_norm`` (||J||_F).
    Reduce them as the question needs: the median describes a typical query,
    the mean is pulled up by the few rows that are still near a tie.
    """
    weights = torch.softmax(scores, dim=-1)  # (..., T)
    T = scores.shape[-1]
    entropy = softmax_entropy(weights)  # (...)
    return {
        "entropy": entropy,
        "entropy_fraction": entropy / math.log(T) if T > 1 else torch.zeros_like(entropy),
        "max_weight": weights.max(dim=-1).values,
        "jacobian_norm": softmax_jacobian_norm(weights),
    }

"""Self-check for a learner's LayerNorm (chapter Q4).

Dimension letters: B batch, T sequence length, D = d_model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .engine import Mistake, call_learner, compare_and_explain, expect_shape

__all__ = ["check_layer_norm"]


def check_layer_norm(fn: Callable[..., Tensor]) -> None:
    """Check ``fn(x, gamma, beta, eps=1e-5) -> y`` for x (B, T, D), gamma and beta (D,).

    Each token is normalised over its D features with the biased variance, then
    scaled by gamma and shifted by beta. Catches normalising over the wrong axis
    (BatchNorm's or the whole sequence's), the unbiased variance, eps outside the
    square root, and gamma/beta left out.
    """
    check = "check_layer_norm"
    g = torch.Generator().manual_seed(2)
    Bn, T, D = 3, 4, 6
    x = 2.0 + 3.0 * torch.randn(Bn, T, D, generator=g)
    gamma, beta = 1 + torch.rand(D, generator=g), torch.randn(D, generator=g)
    eps = 1e-1  # large, so where eps goes shows in the result
    y = call_learner(
        check,
        fn,
        x,
        gamma,
        beta,
        eps=eps,
        call="fn(x, gamma, beta, eps=0.1)",
        names=("x", "gamma", "beta"),
    )
    expect_shape(check, y, (Bn, T, D), "the output", "(B, T, D)")

    def norm(dims, unbiased=False, eps_inside=True):
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, keepdim=True, unbiased=unbiased)
        z = (x - mean) / (var + eps).sqrt() if eps_inside else (x - mean) / (var.sqrt() + eps)
        return z * gamma + beta

    expected = torch.nn.functional.layer_norm(x, (D,), gamma, beta, eps)
    mistakes = [
        Mistake(
            "statistics over the batch and positions (BatchNorm's axes)",
            "each feature was normalised over all B*T tokens. LayerNorm normalises each "
            "token over its own D features: mean and variance over dim=-1.",
            norm((0, 1)),
        ),
        Mistake(
            "statistics over the whole sequence",
            "each sequence was normalised over all its T*D numbers. LayerNorm keeps one "
            "mean and variance per token: over dim=-1 only.",
            norm((1, 2)),
        ),
        Mistake(
            "unbiased variance",
            "the variance divides by D - 1; LayerNorm (and nn.LayerNorm) divides by D: "
            "use var(dim=-1, unbiased=False).",
            norm(-1, unbiased=True),
        ),
        Mistake(
            "eps outside the square root",
            "eps was added to the standard deviation; it belongs inside: "
            "(x - mean) / sqrt(var + eps).",
            norm(-1, eps_inside=False),
        ),
        Mistake(
            "gamma and beta left out",
            "the normalised tokens were returned as they are: multiply by gamma and add beta.",
            (norm(-1) - beta) / gamma,
        ),
    ]
    compare_and_explain(
        check,
        "your output",
        y.detach(),
        expected,
        mistakes,
        "nn.functional.layer_norm over the last axis",
    )

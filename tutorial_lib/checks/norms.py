"""Self-check for a learner's LayerNorm (chapter Q4).

Dimension letters: B batch, T sequence length, D = d_model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .engine import Mistake, call_learner, compare_and_explain, describe, expect_tensor

__all__ = ["check_layer_norm", "CONFIGS", "OTHER_CONFIGS"]

# (B, T, D, eps): B, T and D all different so a statistic over the wrong axis shows, and
# eps large enough that where it goes (or whether it is used) shows in the result.
CONFIGS = ((3, 4, 6, 0.1), (2, 5, 3, 0.5), (1, 2, 8, 1e-5))
OTHER_CONFIGS = ((2, 3, 5, 0.2), (4, 2, 7, 1e-3), (1, 6, 4, 1.0))  # what a grader tries


def _norm(x, gamma, beta, eps, dims=(-1,), unbiased=False, eps_inside=True, centre=True):
    mean = x.mean(dims, keepdim=True) if centre else torch.zeros_like(x)
    if centre:
        var = x.var(dims, keepdim=True, unbiased=unbiased)
    else:
        var = x.pow(2).mean(dims, keepdim=True)  # RMSNorm's mean square
    z = (x - mean) / (var + eps).sqrt() if eps_inside else (x - mean) / (var.sqrt() + eps)
    return z * gamma + beta


def _mistakes(x: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> list[Mistake]:
    def n(**kw):
        return _norm(x, gamma, beta, eps, **kw)

    mistakes = [
        Mistake(
            "statistics over the batch and positions (BatchNorm's axes)",
            "each feature was "
            "normalised over all B*T tokens. LayerNorm normalises each token over its own D "
            "features: mean and variance over dim=-1.",
            n(dims=(0, 1)),
        ),
        Mistake(
            "statistics over the batch",
            "each number was normalised against the same "
            "position of the other sequences (dim=0). LayerNorm uses one token's D features: "
            "dim=-1.",
            n(dims=(0,)),
        ),
        Mistake(
            "statistics over the positions",
            "each feature was normalised over the T tokens "
            "of its sequence (dim=1). LayerNorm uses one token's D features: dim=-1.",
            n(dims=(1,)),
        ),
        Mistake(
            "statistics over the whole sequence",
            "each sequence was normalised over all its "
            "T*D numbers. LayerNorm keeps one mean and variance per token: dim=-1 only.",
            n(dims=(1, 2)),
        ),
        Mistake(
            "unbiased variance",
            "the variance divides by D - 1; LayerNorm (and nn.LayerNorm) "
            "divides by D: use var(dim=-1, unbiased=False).",
            n(unbiased=True),
        ),
        Mistake(
            "eps outside the square root",
            "eps was added to the standard deviation; it "
            "belongs inside: (x - mean) / sqrt(var + eps).",
            n(eps_inside=False),
        ),
        Mistake(
            "eps left out or ignored",
            f"the call passed eps = {eps:g}, but your output is what no eps (or a tiny fixed "
            "one) gives: use the argument, inside the root: (x - mean) / sqrt(var + eps).",
            _norm(x, gamma, beta, 0.0),
        ),
        Mistake(
            "no mean subtracted (that is RMSNorm)",
            "the token was divided by its root mean "
            "square without subtracting its mean first: that is RMSNorm. LayerNorm centres: "
            "(x - mean) / sqrt(var + eps).",
            n(centre=False),
        ),
        Mistake(
            "gamma and beta left out",
            "the normalised tokens were returned as they are: multiply by gamma and add beta.",
            _norm(x, 1.0, 0.0, eps),
        ),
        Mistake(
            "gamma and beta swapped",
            "gamma scales and beta shifts: z * gamma + beta, not z * beta + gamma.",
            _norm(x, beta, gamma, eps),
        ),
        Mistake(
            "beta left out", "the shift is missing: z * gamma + beta.", _norm(x, gamma, 0.0, eps)
        ),
        Mistake(
            "gamma left out", "the scale is missing: z * gamma + beta.", _norm(x, 1.0, beta, eps)
        ),
        Mistake(
            "residual added",
            "x was added back; LayerNorm alone returns z * gamma + beta "
            "(the residual belongs to the layer around it).",
            x + n(),
        ),
    ]
    return mistakes


def check_layer_norm(fn: Callable[..., Tensor], *, configs: tuple = CONFIGS, seed: int = 2) -> None:
    """Check ``fn(x, gamma, beta, eps=1e-5) -> y`` for x (B, T, D), gamma and beta (D,).

    Each token is normalised over its D features with the biased variance, then scaled
    by gamma and shifted by beta. Tried for several (B, T, D) and eps. Catches
    statistics over the wrong axes, the unbiased variance, eps outside the square root,
    left out or ignored, RMSNorm in place of LayerNorm, gamma and beta left out or
    swapped, and a residual added. ``configs`` and ``seed`` choose other sizes and draws (a
    grader's hidden test passes OTHER_CONFIGS); the defaults are what a learner's call tries.
    """
    check = "check_layer_norm"
    g = torch.Generator().manual_seed(seed)
    for Bn, T, D, eps in configs:
        x = 2.0 + 3.0 * torch.randn(Bn, T, D, generator=g)
        gamma, beta = 1 + torch.rand(D, generator=g), torch.randn(D, generator=g)
        call = f"fn(x, gamma, beta, eps={eps:g})"
        y = call_learner(
            check, fn, x, gamma, beta, eps=eps, call=call, names=("x", "gamma", "beta")
        )
        config = describe(B=Bn, T=T, D=D, eps=f"{eps:g}")
        y = expect_tensor(check, y, f"the output (for {config})", "(B, T, D)", (Bn, T, D))
        expected = torch.nn.functional.layer_norm(x, (D,), gamma, beta, eps)
        compare_and_explain(
            check,
            "your output",
            y,
            expected,
            _mistakes(x, gamma, beta, eps),
            "nn.functional.layer_norm over the last axis",
            config=config,
        )

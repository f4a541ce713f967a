"""Normalisation layers for (B, T, D) activations, written from scratch.

Dimension letters, fixed book-wide:
    B    batch size (sequences in the batch)
    T    sequence length (padded to the longest sequence in the batch)
    D    d_model, the width of the residual stream (the "features")

Padding-mask convention: ``mask`` is bool of shape (B, T), True = a real token,
False = padding. (Attention masks in :mod:`tutorial_lib.attention` use the same
sense: True = counts.)

Which numbers share one statistic::

    LayerNorm  one mean and variance per token (b, t), over its D features   -> B*T statistics
    RMSNorm    one mean square per token (b, t), over its D features         -> B*T statistics
    BatchNorm  one mean and variance per feature d, over every token of the  -> D statistics
               batch (over real tokens only when a mask is given)

Introduced in chapter Q4 ("LayerNorm or BatchNorm?").
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .validate import format_shape

__all__ = ["LayerNorm", "BatchNorm", "RMSNorm"]


def _compute_dtype(x: Tensor) -> torch.dtype:
    """Statistics of float16 and bfloat16 tokens are taken in float32 (a square of 300 already
    overflows float16); the result goes back to the input's dtype."""
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


def _require_eps(eps: float) -> float:
    if not eps >= 0:  # NaN fails this too: a negative eps makes the square root of a small var NaN
        raise ValueError(f"eps is added to a variance before its square root: eps >= 0; got {eps}")
    return eps


class LayerNorm(nn.Module):
    r"""LayerNorm over the feature axis, one token at a time (Ba et al., 2016).

    y[b, t] = (x[b, t] - mean_d x[b, t, d]) / sqrt(var_d x[b, t, d] + eps) * weight + bias,
    with the biased variance (divide by D), as ``nn.LayerNorm(D)``.

    ``forward(x, mask=None)``: x (B, T, D) -> (B, T, D). ``mask`` (B, T) is
    ignored: a token's output depends on that token alone, so padding can never leak into a
    real token's statistics. (eps = 0 is allowed, as in PyTorch: a constant token is then 0/0.)
    """

    def __init__(self, d_model: int, eps: float = 1e-5, elementwise_affine: bool = True):
        super().__init__()
        self.d_model, self.eps = d_model, _require_eps(eps)
        self.weight = nn.Parameter(torch.ones(d_model)) if elementwise_affine else None
        self.bias = nn.Parameter(torch.zeros(d_model)) if elementwise_affine else None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) or None (ignored) -> (B, T, D), x's dtype."""
        h = x.to(_compute_dtype(x))
        mean = h.mean(dim=-1, keepdim=True)  # (B, T, 1): one mean per token
        var = h.var(dim=-1, unbiased=False, keepdim=True)  # (B, T, 1)
        x_hat = (h - mean) / torch.sqrt(var + self.eps)  # (B, T, D)
        if self.weight is not None:
            x_hat = x_hat * self.weight.to(h.dtype) + self.bias.to(h.dtype)
        return x_hat.to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class RMSNorm(nn.Module):
    r"""RMSNorm (Zhang & Sennrich, 2019): LayerNorm without the mean.

    y[b, t] = x[b, t] / sqrt(mean_d x[b, t, d]^2 + eps) * weight.

    No centring and no bias, so ``RMSNorm(x @ Q) = RMSNorm(x) @ Q`` for any
    orthogonal Q (D x D) when weight is all ones: the property SliceGPT uses.

    ``forward(x, mask=None)``: x (B, T, D) -> (B, T, D); ``mask`` is ignored, as in
    :class:`LayerNorm`.
    """

    def __init__(self, d_model: int, eps: float = 1e-6, elementwise_affine: bool = True):
        super().__init__()
        self.d_model, self.eps = d_model, _require_eps(eps)
        self.weight = nn.Parameter(torch.ones(d_model)) if elementwise_affine else None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) or None (ignored) -> (B, T, D), x's dtype."""
        h = x.to(_compute_dtype(x))
        mean_square = h.pow(2).mean(dim=-1, keepdim=True)  # (B, T, 1): one per token
        x_hat = h * torch.rsqrt(mean_square + self.eps)  # (B, T, D)
        if self.weight is not None:
            x_hat = x_hat * self.weight.to(h.dtype)
        return x_hat.to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class BatchNorm(nn.Module):
    r"""BatchNorm over (B, T, D) tokens (Ioffe & Szegedy, 2015): one statistic per feature.

    Training: for every feature d, the mean and (biased) variance over all B*T
    tokens, or over the real tokens only when ``mask`` is given; the running
    statistics move towards them by ``momentum`` (the running variance uses the
    unbiased estimate, as PyTorch does). Evaluation: the running statistics.

    Without a mask this is exactly ``nn.BatchNorm1d(D)`` applied to
    ``x.transpose(1, 2)`` (B, D, T); with a mask it is ``nn.BatchNorm1d(D)``
    applied to the real tokens alone, ``x[mask]`` (N, D). Padded positions
    are normalised with the same statistics but never enter them, so their
    values (even NaN or inf) cannot change a real token's output, nor its gradient:
    their outputs are computed from detached statistics, weight and bias, so the
    backward pass never multiplies 0 by a padded NaN.

    ``forward(x, mask=None)``: x (B, T, D), mask bool (B, T), True = real token.

    Args:
        d_model: D, the number of features.
        momentum: weight of the newest batch in the running statistics; None
            means a plain average over every batch seen so far.
        eps: added to the variance before the square root.
        affine: learn a per-feature scale (weight) and shift (bias).
        track_running_stats: keep running statistics for evaluation; without
            them, evaluation uses the batch's own statistics too.
    """

    def __init__(
        self,
        d_model: int,
        momentum: float | None = 0.1,
        eps: float = 1e-5,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        super().__init__()
        self.d_model, self.eps = d_model, _require_eps(eps)
        self.momentum, self.track_running_stats = momentum, track_running_stats
        self.weight = nn.Parameter(torch.ones(d_model)) if affine else None
        self.bias = nn.Parameter(torch.zeros(d_model)) if affine else None
        if self.track_running_stats:
            self.register_buffer("running_mean", torch.zeros(d_model))
            self.register_buffer("running_var", torch.ones(d_model))
            self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def batch_statistics(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor, int]:
        """Per-feature mean (D,), biased variance (D,) and the number N of tokens used.

        In float32 for float16 and bfloat16 tokens, else in x's dtype.
        """
        self._require_inputs(x, mask)
        x = x.to(_compute_dtype(x))
        if mask is None:
            n = x.shape[0] * x.shape[1]
            mean = x.mean(dim=(0, 1))  # (D,)
            var = x.var(dim=(0, 1), unbiased=False)  # (D,)
            return mean, var, n
        n = int(mask.sum())
        keep = mask.unsqueeze(-1)  # (B, T, 1)
        # where(), not multiply, and before any arithmetic: a padded value may be anything,
        # even NaN, and 0 * NaN is NaN (in the forward pass and in the backward pass).
        real = torch.where(keep, x, 0.0)  # (B, T, D), padding replaced by 0
        mean = real.sum(dim=(0, 1)) / n  # (D,)
        var = torch.where(keep, (real - mean) ** 2, 0.0).sum(dim=(0, 1)) / n  # (D,)
        return mean, var, n

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) True = real token, or None -> (B, T, D), x's dtype."""
        use_batch = self.training or not self.track_running_stats
        if use_batch:
            mean, var, n = self.batch_statistics(x, mask)
            if n < 2 and (self.training or n == 0):  # 0 tokens: 0/0; 1 token: a variance of 0
                raise ValueError(
                    "BatchNorm needs more than one (real) token per feature to estimate a variance "
                    f"from the batch; got x of shape {format_shape(x)} with {n} real token(s)"
                )
            if self.training and self.track_running_stats:
                self._update_running_statistics(mean, var, n)
        else:
            self._require_inputs(x, mask)
            mean, var = self.running_mean, self.running_var
        h = x.to(_compute_dtype(x))
        mean, var = mean.to(h.dtype), var.to(h.dtype)
        if mask is None:
            return self._normalise(h, mean, var).to(x.dtype)
        keep = mask.unsqueeze(-1)  # (B, T, 1)
        # Real tokens: padded entries replaced by 0 first, so the backward pass sees finite numbers.
        real = self._normalise(torch.where(keep, h, 0.0), mean, var)  # (B, T, D)
        # Padding: the same formula, cut off from the statistics and the parameters.
        weight = None if self.weight is None else self.weight.detach()
        bias = None if self.bias is None else self.bias.detach()
        padded = self._normalise(h, mean.detach(), var.detach(), weight, bias)  # (B, T, D)
        return torch.where(keep, real, padded).to(x.dtype)

    def _require_inputs(self, x: Tensor, mask: Tensor | None) -> None:
        """x (B, T, D) tokens and a bool mask (B, T): a (N, D) x or a (B, 1) mask would not fail
        but would mix the statistics of other axes."""
        if (
            x.dim() != 3
            or x.shape[-1] != self.d_model
            or not (mask is None or (mask.dtype == torch.bool and mask.shape == x.shape[:2]))
        ):
            raise ValueError(
                f"BatchNorm takes tokens x (B, T, D) with D = {self.d_model} and a bool padding "
                f"mask (B, T), True = real token; got x {format_shape(x)} and mask "
                f"{None if mask is None else format_shape(mask)}"
            )

    def _normalise(self, h: Tensor, mean: Tensor, var: Tensor, weight=..., bias=...) -> Tensor:
        """(h - mean) / sqrt(var + eps), then the affine map if any: h (B, T, D) -> (B, T, D)."""
        weight = self.weight if weight is ... else weight
        bias = self.bias if bias is ... else bias
        x_hat = (h - mean) / torch.sqrt(var + self.eps)  # broadcast over B and T
        if weight is None:
            return x_hat
        return x_hat * weight.to(h.dtype) + bias.to(h.dtype)

    @torch.no_grad()
    def _update_running_statistics(self, mean: Tensor, var: Tensor, n: int) -> None:
        self.num_batches_tracked += 1
        if self.momentum is None:  # cumulative average over every batch so far
            factor = 1.0 / float(self.num_batches_tracked)
        else:
            factor = self.momentum
        unbiased = var * n / (n - 1)  # (D,): the running variance estimates the population's
        # copy_(lerp(...)) rather than lerp_: the same numbers, and vmap has a rule for it.
        self.running_mean.copy_(
            self.running_mean.lerp(mean.detach().to(self.running_mean.dtype), factor)
        )
        self.running_var.copy_(
            self.running_var.lerp(unbiased.detach().to(self.running_var.dtype), factor)
        )

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, momentum={self.momentum}, eps={self.eps}"

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

from .attention import format_shape

__all__ = ["LayerNorm", "BatchNorm", "RMSNorm", "check_tokens", "check_padding_mask"]


def check_tokens(x: Tensor, d_model: int, layer: str) -> None:
    """Raise ValueError unless x is (B, T, D) with D = d_model."""
    if not isinstance(x, Tensor):
        raise ValueError(f"{layer} expects a tensor (B, T, D); got {type(x).__name__}")
    if x.dim() != 3:
        raise ValueError(
            f"{layer} expects x of shape (B, T, D) with D = d_model = {d_model}; "
            f"got {x.dim()}-D x of shape {format_shape(x)}"
        )
    if x.shape[-1] != d_model:
        raise ValueError(
            f"{layer} expects the last dimension D = d_model = {d_model}; got x of shape "
            f"{format_shape(x)}, so D = {x.shape[-1]}"
        )


def check_padding_mask(mask: Tensor | None, x: Tensor, layer: str) -> None:
    """Raise ValueError unless mask is None or bool (B, T) matching x (B, T, D)."""
    if mask is None:
        return
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        dtype = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(
            f"{layer}: the padding mask must be a bool tensor (B, T), True = real token; "
            f"got {dtype}"
        )
    if tuple(mask.shape) != tuple(x.shape[:2]):
        raise ValueError(
            f"{layer}: the padding mask must have shape (B, T) = {tuple(x.shape[:2])} to match "
            f"x {format_shape(x)}; got mask of shape {format_shape(mask)}"
        )


class LayerNorm(nn.Module):
    r"""LayerNorm over the feature axis, one token at a time (Ba et al., 2016).

    y[b, t] = (x[b, t] - mean_d x[b, t, d]) / sqrt(var_d x[b, t, d] + eps) * weight + bias,
    with the biased variance (divide by D), as ``nn.LayerNorm(D)``.

    ``forward(x, mask=None)``: x (B, T, D) -> (B, T, D). ``mask`` (B, T) is
    checked and then ignored: a token's output depends on that token alone,
    so padding can never leak into a real token's statistics.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, elementwise_affine: bool = True):
        super().__init__()
        if not isinstance(d_model, int) or d_model <= 0:
            raise ValueError(f"d_model must be a positive integer; got {d_model!r}")
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model)) if elementwise_affine else None
        self.bias = nn.Parameter(torch.zeros(d_model)) if elementwise_affine else None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) or None (checked, then ignored) -> (B, T, D)."""
        check_tokens(x, self.d_model, "LayerNorm")
        check_padding_mask(mask, x, "LayerNorm")
        mean = x.mean(dim=-1, keepdim=True)  # (B, T, 1): one mean per token
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # (B, T, 1)
        x_hat = (x - mean) / torch.sqrt(var + self.eps)  # (B, T, D)
        if self.weight is None:
            return x_hat
        return x_hat * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class RMSNorm(nn.Module):
    r"""RMSNorm (Zhang & Sennrich, 2019): LayerNorm without the mean.

    y[b, t] = x[b, t] / sqrt(mean_d x[b, t, d]^2 + eps) * weight.

    No centring and no bias, so ``RMSNorm(x @ Q) = RMSNorm(x) @ Q`` for any
    orthogonal Q (D x D) when weight is all ones: the property SliceGPT uses.

    ``forward(x, mask=None)``: x (B, T, D) -> (B, T, D); ``mask`` is checked and
    ignored, as in :class:`LayerNorm`.
    """

    def __init__(self, d_model: int, eps: float = 1e-6, elementwise_affine: bool = True):
        super().__init__()
        if not isinstance(d_model, int) or d_model <= 0:
            raise ValueError(f"d_model must be a positive integer; got {d_model!r}")
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model)) if elementwise_affine else None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) or None (checked, then ignored) -> (B, T, D)."""
        check_tokens(x, self.d_model, "RMSNorm")
        check_padding_mask(mask, x, "RMSNorm")
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (B, T, 1): one per token
        x_hat = x * torch.rsqrt(mean_square + self.eps)  # (B, T, D)
        return x_hat if self.weight is None else x_hat * self.weight

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
    values (even NaN) cannot change a real token's output.

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
        if not isinstance(d_model, int) or d_model <= 0:
            raise ValueError(f"d_model must be a positive integer; got {d_model!r}")
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be in [0, 1] or None; got {momentum}")
        self.d_model = d_model
        self.momentum = momentum
        self.eps = eps
        self.track_running_stats = track_running_stats
        self.weight = nn.Parameter(torch.ones(d_model)) if affine else None
        self.bias = nn.Parameter(torch.zeros(d_model)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", torch.zeros(d_model))
            self.register_buffer("running_var", torch.ones(d_model))
            self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def batch_statistics(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor, int]:
        """Per-feature mean (D,), biased variance (D,) and the number N of tokens used."""
        check_tokens(x, self.d_model, "BatchNorm")
        check_padding_mask(mask, x, "BatchNorm")
        if mask is None:
            n = x.shape[0] * x.shape[1]
            mean = x.mean(dim=(0, 1))  # (D,)
            var = x.var(dim=(0, 1), unbiased=False)  # (D,)
            return mean, var, n
        n = int(mask.sum())
        if n == 0:
            raise ValueError("BatchNorm: the padding mask marks no real token (mask is all False)")
        keep = mask.unsqueeze(-1)  # (B, T, 1)
        # where(), not multiply, and before any arithmetic: a padded value may be anything,
        # even NaN, and 0 * NaN is NaN (in the forward pass and in the backward pass).
        real = torch.where(keep, x, 0.0)  # (B, T, D), padding replaced by 0
        mean = real.sum(dim=(0, 1)) / n  # (D,)
        var = torch.where(keep, (real - mean) ** 2, 0.0).sum(dim=(0, 1)) / n  # (D,)
        return mean, var, n

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) True = real token, or None -> (B, T, D)."""
        use_batch = self.training or not self.track_running_stats
        if use_batch:
            mean, var, n = self.batch_statistics(x, mask)
            if self.training and n < 2:
                raise ValueError(
                    "BatchNorm needs more than one (real) token per feature when training, "
                    f"to estimate a variance; got x of shape {format_shape(x)} "
                    f"with {n} real token(s)"
                )
            if self.training and self.track_running_stats:
                self._update_running_statistics(mean, var, n)
        else:
            check_tokens(x, self.d_model, "BatchNorm")
            check_padding_mask(mask, x, "BatchNorm")
            mean, var = self.running_mean, self.running_var
        x_hat = (x - mean) / torch.sqrt(var + self.eps)  # (B, T, D), broadcast over B and T
        if self.weight is None:
            return x_hat
        return x_hat * self.weight + self.bias

    @torch.no_grad()
    def _update_running_statistics(self, mean: Tensor, var: Tensor, n: int) -> None:
        self.num_batches_tracked += 1
        if self.momentum is None:  # cumulative average over every batch so far
            factor = 1.0 / float(self.num_batches_tracked)
        else:
            factor = self.momentum
        unbiased = var * n / (n - 1)  # (D,): the running variance estimates the population's
        self.running_mean.lerp_(mean.detach(), factor)
        self.running_var.lerp_(unbiased.detach(), factor)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, momentum={self.momentum}, eps={self.eps}"

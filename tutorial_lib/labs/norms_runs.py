"""Chapter Q4's runs over many seeds: tiny encoders (:mod:`tutorial_lib.labs.norms`) trained
side by side as one :class:`~tutorial_lib.labs.seed_ensemble.Ensemble`, and the gradients of
fresh deep stacks at initialisation.

Dimension letters as in :mod:`tutorial_lib.labs.norms` (B, T, D, H), plus
    E    runs (members of the ensemble), each with its own seed

Members may differ in their norm and in its placement: the ensemble runs each kind as its
own group. Inputs: tokens (E, B, T), one batch per run, and one padding mask (B, T) that
every run shares (``shared=(mask,)``): the runs' sentences have the same lengths and their
own tokens, so that every run's tensors have one shape.

Introduced in chapter Q4 ("LayerNorm or BatchNorm?").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..training import fit
from .norms import TinyEncoder, ffn_gradient_norms
from .seed_ensemble import Ensemble

__all__ = ["train_runs", "InitGradients", "init_gradients"]


def train_runs(
    ensemble: Ensemble,
    batches: Iterable[Any],
    loss_fn: Callable[[Ensemble, Any], Tensor],
    *,
    steps: int,
    lr: float,
    warmup: int | list[int] = 0,
) -> Tensor:
    """Train every run with Adam, one step per batch: :func:`tutorial_lib.training.fit` with
    one loss per run. ``loss_fn(ensemble, batch)`` returns the runs' losses, shape (E,);
    their sum is minimised, so each run gets the gradient of its own loss only and trains
    as if alone. Returns each run's loss on each batch, before the step learns from it,
    (steps, E). ``warmup``: steps of linear warm-up, for every run or one count per run. The
    ensemble is left in eval mode."""
    losses: list[Tensor] = []
    stream: Iterator[Any] = iter(batches)

    def one_step(model, batch):
        per_run = loss_fn(model, batch)  # (E,)
        losses.append(per_run.detach())
        return per_run.sum()

    fit(ensemble, stream, one_step, steps=steps, lr=lr, warmup=warmup)
    for _ in stream:  # nothing is left; this lets a progress line close
        pass
    return torch.stack(losses)  # (steps, E)


@dataclass
class InitGradients:
    """One backward pass per model at initialisation, stacked over the E models."""

    grads: Tensor  # (E, L): ||dL/dW_2|| of every layer's feed-forward block, bottom layer first
    stream_rms: Tensor  # (E,): RMS of the residual stream leaving the last layer
    stream: Tensor  # (E, B, T, D): that stream, what a Pre-LN stack's final norm divides
    stream_grad: Tensor  # (E, B, T, D): dL/dx of every token of it
    hidden: Tensor  # (E, B, T, d_ff): what the top layer's W_2 reads


def init_gradients(models: list[TinyEncoder], tokens: Tensor, target: Tensor) -> InitGradients:
    """Each model's feed-forward gradients and residual stream at initialisation.

    L is model e's mean cross-entropy of ``tokens[e]`` (B, T) against ``target[e]`` (B, T),
    one class id per token. The models run one after the other: a single backward pass each,
    no training, so a loop costs little, and each is an ordinary module its hooks can read.
    """
    found: dict[str, list[Tensor]] = {key: [] for key in ("grads", "x", "dx", "h")}
    seen: dict[str, Tensor] = {}  # what the hooks see of the model running now

    def keep_stream(module, args, out):  # the stream leaving the last layer
        out.retain_grad()  # so that backward leaves each token's dL/dx on it
        seen["x"] = out

    for model, x_tokens, y in zip(models, tokens, target, strict=True):
        hooks = [
            model.layers[-1].register_forward_hook(keep_stream),
            model.layers[-1].ffn.w_2.register_forward_hook(
                lambda module, args, out: seen.update(h=args[0].detach())
            ),
        ]
        try:
            logits = model(x_tokens)  # (B, T, C)
        finally:
            for hook in hooks:
                hook.remove()
        model.zero_grad(set_to_none=True)
        F.cross_entropy(logits.flatten(0, 1), y.flatten()).backward()
        found["grads"].append(torch.tensor(ffn_gradient_norms(model)))
        found["x"].append(seen["x"].detach())
        found["dx"].append(seen["x"].grad)
        found["h"].append(seen["h"])
    x = torch.stack(found["x"])  # (E, B, T, D)
    return InitGradients(
        grads=torch.stack(found["grads"]),
        stream_rms=x.pow(2).mean(dim=(1, 2, 3)).sqrt(),
        stream=x,
        stream_grad=torch.stack(found["dx"]),
        hidden=torch.stack(found["h"]),
    )

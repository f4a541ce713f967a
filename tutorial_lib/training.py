"""Training: the one loop every experiment in the book uses, and teacher forcing for Q5.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src source length,
T_tgt target length, D width, H heads, V vocabulary.

* :func:`fit` is the loop: Adam, an optional linear warm-up, fresh batches, a callback
  that may stop early. The labs and :func:`train` build on it.
* Teacher forcing: the decoder reads the *true* answer shifted right by one
  (BOS, y_1 .. y_T) and is scored on every next token (y_1 .. y_T, EOS) at once; the causal
  mask keeps position t from reading y_t itself. Decoding is in :mod:`tutorial_lib.decoding`.

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import seeds
from .data import PAD, batches, make_batch, teacher_forcing
from .decoding import sequence_accuracy, teacher_forced_accuracy
from .model import Transformer


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run tiny models on one CPU thread: at this size thread hand-offs cost more than they save.

    On a busy machine a second thread can make a small forward and backward pass many
    times slower; one thread also gives the same bits on every run.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = [
    "one_thread",
    "fit",
    "teacher_forcing_loss",
    "TrainResult",
    "train",
]


def fit(
    model: nn.Module,
    batches: Iterator[Any],
    loss_fn: Callable[[nn.Module, Any], Tensor | tuple[Tensor, Any]],
    *,
    steps: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    warmup: int | Sequence[int] = 0,
    on_step: Callable[[int, float, Any], bool | None] | None = None,
) -> list[float]:
    """Train ``model`` with Adam on ``steps`` batches; returns the loss of every step.

    ``loss_fn(model, batch)`` returns the loss, or (loss, extra) to hand ``extra`` (say, the
    logits) to ``on_step(step, loss, extra)``, which is called after every update (step
    counts from 1) and stops training by returning True. For an ensemble
    (:class:`tutorial_lib.labs.seed_ensemble.Ensemble`) it may instead return the members
    that are done: they leave (``model.retire``) and training ends once none is left.
    ``warmup`` > 0 ramps the rate linearly over that many steps (Post-LN Transformers need
    it: full-size steps on fresh weights can diverge); for an ensemble it may be one count per
    member, each member's rate ramping on its own (``model.scale_update`` shrinks the steps of
    those below the largest rate). The model is left in eval mode.
    """
    # fused: one kernel updates every tensor (the same Adam; a per-tensor loop costs more here).
    # PyTorch has it on the CPU from 2.4; the package allows 2.1, which would refuse it.
    fused = torch.__version__ >= (2, 4)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, betas=betas, eps=eps, fused=fused)
    schedule, per_member = None, not isinstance(warmup, int)
    if warmup and not per_member:
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: min(1.0, (s + 1) / warmup)
        )
    losses: list[float] = []
    for step in range(1, steps + 1):
        model.train()
        try:
            batch = next(batches)
        except StopIteration:
            raise ValueError(f"batches ran out after {step - 1} of steps = {steps} steps") from None
        result = loss_fn(model, batch)
        loss, extra = result if isinstance(result, tuple) else (result, None)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        before = None
        if per_member:  # each member's own ramp; the optimiser takes the largest rate
            ramp = {e: min(1.0, step / warmup[e]) if warmup[e] else 1.0 for e in model.active}
            top = max(ramp.values())
            for group in optimiser.param_groups:
                group["lr"] = lr * top
            if min(ramp.values()) < top:
                before = [p.detach().clone() for p in model.parameters()]
        optimiser.step()
        if before is not None:
            model.scale_update(before, {e: r / top for e, r in ramp.items()})
        if schedule is not None:
            schedule.step()
        losses.append(loss.item())
        done = None if on_step is None else on_step(step, losses[-1], extra)
        if done is True or (done and not model.retire(done, optimiser)):
            break
    model.eval()
    return losses


def teacher_forcing_loss(model: Transformer, src: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor]:
    """Cross-entropy of every next token given the true earlier ones.

    src (B, T_src), tgt (B, T) -> mean loss over real (non-PAD) target positions, and the
    logits (B, T+1, V).
    """
    dec_in, dec_target = teacher_forcing(tgt)  # (B, T+1), (B, T+1)
    logits = model(src, dec_in)  # (B, T+1, V)
    # (B, V, T+1): cross_entropy takes the classes on the second axis (and on CPU it is several
    # times faster there than over a short last axis).
    loss = F.cross_entropy(logits.transpose(1, 2), dec_target, ignore_index=PAD)
    return loss, logits


@dataclass
class TrainResult:
    """What one training run measured."""

    steps: int  # optimiser steps taken
    seconds: float  # wall-clock time of the training loop, evaluations included
    losses: list[float]  # teacher-forced loss per step
    batch_accuracy: list[float]  # per step: sequences of the fresh batch right at every position
    checks: list[tuple[int, float, float]]  # (step, seconds so far, test sequence accuracy)
    reached: bool  # whether the target accuracy was reached on the test set


def _batch_exact(logits: Tensor, tgt: Tensor) -> float:
    """Teacher-forced exact-match rate of a batch from logits it already has (B, T+1, V)."""
    dec_target = teacher_forcing(tgt)[1]  # (B, T+1)
    right = (logits.argmax(-1) == dec_target) | (dec_target == PAD)
    return right.all(dim=1).float().mean().item()


def train(
    model: Transformer,
    task: str = "reverse",
    *,
    length: int = 16,
    n_symbols: int = 10,
    batch_size: int = 64,
    lr: float = 5e-3,
    warmup: int = 50,
    max_steps: int = 2000,
    eval_every: int | None = None,
    test_set: tuple[Tensor, Tensor] | None = None,
    target_accuracy: float | None = 1.0,
    seed: int = 0,
    **batch_kwargs,
) -> TrainResult:
    """Adam with the paper's betas, a linear warm-up, then a constant rate; fresh batches.

    Each fresh batch is unseen until its step, so the share of its sequences predicted right
    at every position (before the update) is a free held-out estimate. When it reaches
    ``target_accuracy`` (at most every 5 steps), and every ``eval_every`` steps if given,
    the model is checked on ``test_set`` (default: 1000 sequences from another seed) by
    :func:`.teacher_forced_accuracy`, one forward pass, which for a causal decoder is greedy
    decoding's verdict (greedy decoding confirms it for a decoder that sees the future); first
    on a quarter of the set, where most checks fail (their recorded accuracy is that
    quarter's). Training stops when the whole set reaches the target. Evaluation time counts
    in ``seconds``. ``lr`` is the rate after warm-up; 5e-3 suits the chapter's small model.
    ``target_accuracy=None`` never stops early: all ``max_steps`` run, and the test set is
    checked every ``eval_every`` steps and at the end.
    """
    target = 2.0 if target_accuracy is None else target_accuracy  # no accuracy reaches 2
    seeds.manual_seed("train", seed)
    if test_set is None:
        test_set = make_batch(task, 1000, length, n_symbols, seed=seed + 10_000, **batch_kwargs)
    stream = batches(task, batch_size, length, n_symbols, seed=seed, **batch_kwargs)
    batch_accuracy: list[float] = []
    checks: list[tuple[int, float, float]] = []
    last = {"step": 0, "check": 0}
    start = time.perf_counter()

    def loss_fn(model, batch):
        src, tgt = batch
        loss, logits = teacher_forcing_loss(model, src, tgt)
        return loss, (logits.detach(), tgt)

    def on_step(step, _loss, extra):
        last["step"] = step
        batch_accuracy.append(_batch_exact(*extra))
        periodic = eval_every is not None and step % eval_every == 0
        # A perfect batch earns a test check, but not on every step: checks cost time too.
        promising = batch_accuracy[-1] >= target and step - last["check"] >= 5
        if not (promising or periodic or step == max_steps):
            return False
        last["check"] = step
        quarter = [t[: len(t) // 4] for t in test_set] if target <= 1 else test_set
        accuracy = teacher_forced_accuracy(model, *quarter)
        if accuracy >= target and quarter is not test_set:
            accuracy = teacher_forced_accuracy(model, *test_set)
        if accuracy >= target and not model.config.causal:
            accuracy = sequence_accuracy(model, *test_set)
        checks.append((step, time.perf_counter() - start, accuracy))
        return accuracy >= target

    losses = fit(
        model,
        stream,
        loss_fn,
        steps=max_steps,
        lr=lr,
        betas=(0.9, 0.98),
        eps=1e-9,
        warmup=warmup,
        on_step=on_step,
    )
    reached = bool(checks) and checks[-1][2] >= target
    return TrainResult(
        last["step"], time.perf_counter() - start, losses, batch_accuracy, checks, reached
    )

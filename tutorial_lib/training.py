"""Training with teacher forcing; greedy decoding, with and without a KV cache.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src source length,
T_tgt target length, D width, H heads, V vocabulary.

* Training (teacher forcing): the decoder reads the *true* answer shifted right by one
  (BOS, y_1 .. y_T) and is scored on every next token (y_1 .. y_T, EOS) at once; the causal
  mask keeps position t from reading y_t itself.
* Inference (autoregressive): the decoder reads its *own* previous outputs, one step at a
  time, until EOS.

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from .data import BOS, EOS, PAD, batches, make_batch, teacher_forcing
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
    "teacher_forcing_loss",
    "greedy_decode",
    "greedy_decode_cached",
    "teacher_forced_accuracy",
    "sequence_accuracy",
    "TrainResult",
    "train",
]


def teacher_forcing_loss(model: Transformer, src: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor]:
    """Cross-entropy of every next token given the true earlier ones.

    src (B, T_src), tgt (B, T) -> mean loss over real (non-PAD) target positions, and the
    logits (B, T+1, V).
    """
    dec_in, dec_target = teacher_forcing(tgt)  # (B, T+1), (B, T+1)
    logits = model(src, dec_in)  # (B, T+1, V)
    loss = F.cross_entropy(logits.flatten(0, 1), dec_target.flatten(), ignore_index=PAD)
    return loss, logits


def _finish(out: Tensor) -> Tensor:
    """Replace everything after each row's first EOS with PAD. out (B, T) -> (B, T)."""
    after_eos = (out == EOS).long().cumsum(dim=1) - (out == EOS).long() > 0  # (B, T)
    return out.masked_fill(after_eos, PAD)


@torch.no_grad()
def greedy_decode(model: Transformer, src: Tensor, max_len: int) -> tuple[Tensor, Tensor]:
    """Greedy decoding by full recomputation: at step t, run the decoder on all t tokens.

    src (B, T_src) -> tokens (B, max_len) (EOS included, PAD after it) and the logits of
    each step's newest position (B, max_len, V). Simple, and O(t) work per step repeated.
    """
    model.eval()
    memory, src_mask = model.encode(src)
    B = src.shape[0]
    dec_in = torch.full((B, 1), BOS)  # (B, 1)
    step_logits = []
    for _ in range(max_len):
        logits = model.decode(dec_in, memory, src_mask)[:, -1:]  # (B, 1, V): newest position
        step_logits.append(logits)
        dec_in = torch.cat([dec_in, logits.argmax(-1)], dim=1)  # (B, t+1)
    return _finish(dec_in[:, 1:]), torch.cat(step_logits, dim=1)


@dataclass
class Decoded:
    """Greedy output with a KV cache. tokens (B, T_out); logits (B, T_out, V);
    cross (T_out entries, each a list over layers of (B, H, T_src)): what each step read."""

    tokens: Tensor
    logits: Tensor
    cross: list[list[Tensor]] = field(default_factory=list)


@torch.no_grad()
def greedy_decode_cached(model: Transformer, src: Tensor, max_len: int) -> Decoded:
    """Greedy decoding with a KV cache: each step runs the decoder on the newest token only.

    Every layer keeps the keys and values of earlier positions (they cannot change: the causal
    mask means position j never reads anything after j) and the cross-attention keys and values
    of the memory (computed once). Gives the same logits as :func:`greedy_decode`.
    """
    if not model.config.causal:
        raise ValueError(
            "a KV cache reproduces full recomputation only for a causal decoder (config.causal="
            "True): without the mask, earlier positions would change as later ones arrive"
        )
    model.eval()
    memory, src_mask = model.encode(src)
    caches = model.decoder.start_cache(memory)
    B = src.shape[0]
    token = torch.full((B, 1), BOS)  # (B, 1)
    tokens, step_logits, cross = [], [], []
    for t in range(max_len):
        logits, cross_w = model.decoder.step(token, t, caches, src_mask)  # (B, 1, V)
        token = logits.argmax(-1)  # (B, 1)
        tokens.append(token)
        step_logits.append(logits)
        cross.append([w[:, :, 0] for w in cross_w])  # per layer (B, H, T_src)
        if bool((torch.cat(tokens, dim=1) == EOS).any(dim=1).all()):
            break  # every row has ended
    return Decoded(_finish(torch.cat(tokens, dim=1)), torch.cat(step_logits, dim=1), cross)


@torch.no_grad()
def teacher_forced_accuracy(model: Transformer, src: Tensor, tgt: Tensor) -> float:
    """Fraction of rows whose teacher-forced argmax is right at every position (one forward).

    For a causal decoder this equals greedy sequence accuracy: if every next-token guess is
    right given the true prefix, greedy decoding feeds itself exactly that prefix, step after
    step; and at the first wrong guess greedy decoding goes wrong too. A test checks it.
    """
    model.eval()
    dec_in, dec_target = teacher_forcing(tgt)  # (B, T+1), (B, T+1)
    guess = model(src, dec_in).argmax(-1)  # (B, T+1)
    right = (guess == dec_target) | (dec_target == PAD)  # (B, T+1)
    return right.all(dim=1).float().mean().item()


def sequence_accuracy(model: Transformer, src: Tensor, tgt: Tensor) -> float:
    """Fraction of rows whose greedy output is exactly the target followed by EOS."""
    expected = teacher_forcing(tgt)[1]  # (B, T+1): the answer, then EOS, then PAD
    if model.config.causal:
        out = greedy_decode_cached(model, src, expected.shape[1]).tokens
    else:
        out = greedy_decode(model, src, expected.shape[1])[0]
    if out.shape[1] < expected.shape[1]:
        out = F.pad(out, (0, expected.shape[1] - out.shape[1]), value=PAD)
    return (out == expected).all(dim=1).float().mean().item()


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
    target_accuracy: float = 1.0,
    seed: int = 0,
    **batch_kwargs,
) -> TrainResult:
    """Adam with the paper's betas, a linear warm-up, then a constant rate; fresh batches.

    Each fresh batch is unseen until its step, so the share of its sequences predicted right
    at every position (before the update) is a free held-out estimate. When it reaches
    ``target_accuracy`` (at most every 5 steps), and every ``eval_every`` steps if given,
    the model is checked on ``test_set`` (default: 1000 sequences from another seed), first
    with the cheap :func:`teacher_forced_accuracy`, then, if that reaches the target, with
    greedy decoding; training stops when greedy decoding reaches it. Evaluation time counts
    in ``seconds``. ``lr`` is the rate after warm-up; 5e-3 suits the chapter's small model.
    """
    torch.manual_seed(seed)
    if test_set is None:
        test_set = make_batch(task, 1000, length, n_symbols, seed=seed + 10_000, **batch_kwargs)
    stream = batches(task, batch_size, length, n_symbols, seed=seed, **batch_kwargs)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    # Post-LN Transformers need a warm-up: full-size steps on fresh weights can diverge.
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / warmup))
    losses, batch_accuracy, checks = [], [], []
    start = time.perf_counter()
    reached = False
    step = last_check = 0
    for step in range(1, max_steps + 1):
        model.train()
        src, tgt = next(stream)
        loss, logits = teacher_forcing_loss(model, src, tgt)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        schedule.step()
        losses.append(loss.item())
        batch_accuracy.append(_batch_exact(logits.detach(), tgt))
        periodic = eval_every is not None and step % eval_every == 0
        # A perfect batch earns a test check, but not on every step: checks cost time too.
        promising = batch_accuracy[-1] >= target_accuracy and step - last_check >= 5
        if promising or periodic or step == max_steps:
            last_check = step
            # The cheap check (one forward pass) equals greedy accuracy; greedy confirms it.
            accuracy = teacher_forced_accuracy(model, *test_set)
            if accuracy >= target_accuracy:
                accuracy = sequence_accuracy(model, *test_set)
            checks.append((step, time.perf_counter() - start, accuracy))
            if accuracy >= target_accuracy:
                reached = True
                break
    model.eval()
    return TrainResult(step, time.perf_counter() - start, losses, batch_accuracy, checks, reached)

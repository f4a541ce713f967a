"""Decoding a trained Transformer: greedy, by full recomputation or with a KV cache.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src source length,
T_tgt target length, D width, H heads, V vocabulary.

At inference the decoder reads its *own* previous outputs, one step at a time, until EOS
(in training it reads the true answer instead: :mod:`tutorial_lib.training`).

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from .data import BOS, EOS, PAD, teacher_forcing
from .model import Transformer
from .validate import check_int, check_same_batch, check_tensor

__all__ = [
    "greedy_decode",
    "Decoded",
    "greedy_decode_cached",
    "teacher_forced_accuracy",
    "sequence_accuracy",
]


def _check_decoding(model: Transformer, src: Tensor, max_len: int) -> int:
    """max_len as an int after checking the model, and that its positions reach that far."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a Transformer; got {type(model).__name__}")
    max_len = check_int("max_len", max_len, why="(decoding steps)")
    if max_len > model.config.max_len:
        raise ValueError(
            f"max_len = {max_len} decoding steps need {max_len} positions, but the model's "
            f"config.max_len = {model.config.max_len}"
        )
    check_tensor("src", src, "integer", "(B, T_src) token ids")
    return max_len


def _finish(out: Tensor) -> Tensor:
    """Replace everything after each row's first EOS with PAD. out (B, T) -> (B, T)."""
    after_eos = (out == EOS).long().cumsum(dim=1) - (out == EOS).long() > 0  # (B, T)
    return out.masked_fill(after_eos, PAD)


@torch.no_grad()
def greedy_decode(model: Transformer, src: Tensor, max_len: int) -> tuple[Tensor, Tensor]:
    """Greedy decoding by full recomputation: at step t, run the decoder on all t tokens.

    src (B, T_src) -> tokens (B, max_len) (EOS included, PAD after it) and the logits of
    each step's newest position (B, max_len, V). Simple, and O(t) work per step repeated.
    Every token the model emits is fed back as it is: a PAD it writes is read as padding
    (masked), exactly as :meth:`tutorial_lib.model.Transformer.decode` reads any PAD in its input.
    """
    max_len = _check_decoding(model, src, max_len)
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
    of the memory (computed once); a PAD the model emits is masked in the cache as
    recomputation masks it. Gives the same tokens and, to rounding, the same logits as
    :func:`greedy_decode` for every step it takes; it stops early once every row has ended,
    where :func:`greedy_decode` goes on to ``max_len`` (the extra columns are all PAD).
    """
    max_len = _check_decoding(model, src, max_len)
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
    check_same_batch("src", src, "tgt", tgt)
    model.eval()
    dec_in, dec_target = teacher_forcing(tgt)  # (B, T+1), (B, T+1)
    guess = model(src, dec_in).argmax(-1)  # (B, T+1)
    right = (guess == dec_target) | (dec_target == PAD)  # (B, T+1)
    return right.all(dim=1).float().mean().item()


def sequence_accuracy(model: Transformer, src: Tensor, tgt: Tensor) -> float:
    """Fraction of rows whose greedy output is exactly the target followed by EOS."""
    check_tensor("src", src, "integer", "(B, T_src) token ids")
    check_same_batch("src", src, "tgt", tgt)
    expected = teacher_forcing(tgt)[1]  # (B, T+1): the answer, then EOS, then PAD
    if model.config.causal:
        out = greedy_decode_cached(model, src, expected.shape[1]).tokens
    else:
        out = greedy_decode(model, src, expected.shape[1])[0]
    if out.shape[1] < expected.shape[1]:
        out = F.pad(out, (0, expected.shape[1] - out.shape[1]), value=PAD)
    return (out == expected).all(dim=1).float().mean().item()

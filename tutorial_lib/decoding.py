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

__all__ = [
    "greedy_decode",
    "Decoded",
    "greedy_decode_cached",
    "teacher_forced_accuracy",
    "sequence_accuracy",
]


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


def length_penalty(length: int | Tensor, alpha: float) -> float | Tensor:
    """GNMT's length penalty lp(Y) = ((5 + len(Y)) / 6) ** alpha (Wu et al. 2016, section 7).

    Beam search ranks finished hypotheses by log P(Y | X) / lp(Y). A log-probability only
    falls as tokens are added, so without the penalty (alpha = 0) short outputs are
    favoured; the paper's setting is alpha = 0.6. len(Y) counts the generated tokens, EOS
    included.
    """
    return ((5 + length) / 6) ** alpha


@dataclass
class Beam:
    """The best hypothesis beam search found for each source row.

    tokens (B, max_len): EOS included, PAD after it (a row that never wrote EOS is cut at
    max_len); scores (B,): log P / lp, what the search maximises; log_probs (B,);
    lengths (B,): generated tokens, EOS included.
    """

    tokens: Tensor
    scores: Tensor
    log_probs: Tensor
    lengths: Tensor


@torch.no_grad()
def beam_search(
    model: Transformer, src: Tensor, max_len: int, beam_size: int = 4, alpha: float = 0.6
) -> Beam:
    """Beam search with GNMT's length penalty, as the paper decodes (beam 4, alpha = 0.6).

    Each step extends every live hypothesis by every token and keeps the ``beam_size`` best
    by log-probability; a hypothesis that writes EOS among those best is finished and scored
    log P / lp(len(Y)). At ``max_len`` the live ones are finished as they stand. The search stops
    early once no live hypothesis can still beat the best finished one: its log-probability
    can only fall and, for alpha >= 0, lp can grow at most to lp(max_len). With a beam as
    large as the number of possible outputs nothing is ever dropped, so the result is the
    exact best under the same score (a test checks this against brute force). Runs on the
    KV cache of :func:`greedy_decode_cached`; src (B, T_src).
    """
    if not model.config.causal or not alpha >= 0:
        raise ValueError(
            "beam search decodes with a KV cache, which needs config.causal=True, and stops early "
            f"on a bound that needs alpha >= 0; got causal={model.config.causal}, alpha={alpha}"
        )
    model.eval()
    B, k = src.shape[0], beam_size
    memory, src_mask = model.encode(src)  # (B, T_src, D), (B, 1, T_src)
    memory = memory.repeat_interleave(k, dim=0)  # (B*k, T_src, D): one copy per beam
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*k, 1, T_src)
    caches = model.decoder.start_cache(memory)
    dtype = memory.dtype  # scores in the model's precision
    alive_logp = torch.full((B, k), float("-inf"), dtype=dtype)  # (B, k); only beam 0 at first
    alive_logp[:, 0] = 0.0
    alive_tokens = torch.zeros(B, k, 0, dtype=torch.long)  # (B, k, t)
    best = Beam(
        torch.full((B, max_len), PAD),
        torch.full((B,), float("-inf"), dtype=dtype),
        torch.full((B,), float("-inf"), dtype=dtype),
        torch.zeros(B, dtype=torch.long),
    )
    rows = torch.arange(B)[:, None]  # (B, 1), to index per source
    token = torch.full((B * k, 1), BOS)  # (B*k, 1)
    for t in range(max_len):
        logits, _ = model.decoder.step(token, t, caches, src_mask)  # (B*k, 1, V)
        V = logits.shape[-1]
        candidates = alive_logp[..., None] + F.log_softmax(logits[:, 0], dim=-1).view(B, k, V)
        top_logp, top = candidates.view(B, k * V).topk(min(2 * k, k * V), dim=1)  # (B, 2k)
        origin, new = top // V, top % V  # which beam it extends, with which token
        length = t + 1
        # Finished: EOS among the k best (at max_len, every one of the k best).
        ends = (new == EOS) | (length == max_len)
        finished = ends & (torch.arange(top.shape[1]) < k) & top_logp.isfinite()  # (B, 2k)
        scores = torch.where(finished, top_logp / length_penalty(length, alpha), float("-inf"))
        score, pick = scores.max(dim=1)  # (B,): the best newly finished per source
        better = score > best.scores  # (B,)
        if better.any():
            chosen = torch.cat(
                [alive_tokens[rows[:, 0], origin[rows[:, 0], pick]], new[rows[:, 0], pick, None]],
                dim=1,
            )  # (B, t+1)
            filled = F.pad(chosen, (0, max_len - length), value=PAD)  # (B, max_len)
            best.tokens[better] = filled[better]
            best.scores[better] = score[better]
            best.log_probs[better] = top_logp[rows[:, 0], pick][better]
            best.lengths[better] = length
        # Live: the k best that did not end (there are at least k of them among 2k).
        live_logp = torch.where(ends, float("-inf"), top_logp)
        alive_logp, keep = live_logp.topk(k, dim=1)  # (B, k)
        origin, new = origin.gather(1, keep), new.gather(1, keep)  # (B, k)
        alive_tokens = torch.cat([alive_tokens[rows, origin], new[..., None]], dim=2)
        index = (rows * k + origin).flatten()  # (B*k,): each new beam's parent row
        for cache in caches:
            cache.reorder(index)  # keys, values and which of them are padding, together
        token = new.reshape(B * k, 1)
        bound = alive_logp.max(dim=1).values / length_penalty(max_len, alpha)  # (B,)
        if bool((best.scores >= bound).all()):
            break  # no live hypothesis can still win
    return best


__all__ += ["length_penalty", "Beam", "beam_search"]

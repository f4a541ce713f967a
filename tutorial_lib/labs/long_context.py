"""Chapter Q7's experiment: one RoPE model trained at length L, read at 1x to 8x L by every
method of :mod:`tutorial_lib.positional.scaling`, with and without a short fine-tune at 2L.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k); Q the positions read
at the end of a sequence; E the members of an ensemble (one per task and seed).

Train once, read many ways: the models are trained once with plain RoPE (every task and seed
side by side as one ``tutorial_lib.labs.seed_ensemble.Ensemble``); each method is then
only another rotation for the same weights. The model has one attention layer, so the last Q
positions of a long input need only their own queries: reading them costs Q x T scores, not
T x T. This module holds the setting (tasks, config, model, training); the reading and the
whole experiment are in :mod:`.long_context_reading`, the figures in
:mod:`tutorial_lib.figures.long_context`. The book and ``make bench`` run the same code.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .. import positional, seeds
from ..attention import Attention, causal_mask
from ..positional import Rotation, with_positions
from ..training import fit, one_thread
from ..validate import require_choice, require_int, require_real
from .extrapolation import IGNORE, lag_copy_batch
from .seed_ensemble import Ensemble

__all__ = [
    "CHAPTER_METHODS",
    "DILUTION_METHODS",
    "STATIC_METHODS",
    "TASKS",
    "VOCAB",
    "needle_batch",
    "LongContextConfig",
    "Reader",
    "rotation_for",
    "train_readers",
    "finetune_readers",
]

# What the chapter compares, rows of tutorial_lib.positional.VARIANTS in its order.
CHAPTER_METHODS = ("rope", "interpolation", "ntk", "yarn", "rerope", "leaky-rerope")
# One set of frequencies (NTK-by-parts) with nothing, YaRN's temperature, or log-n on the scores.
DILUTION_METHODS = ("by-parts", "yarn", "logn")
# Methods set for one scale in advance: the chapter reads them at L set for 8L too.
STATIC_METHODS = ("interpolation", "ntk", "yarn")
TASKS = ("lag", "needle")
FILLERS, NEEDLES = 10, 6  # needle: filler tokens 0..9, needles 10..15; lag uses 0..9
VOCAB = FILLERS + NEEDLES


def needle_batch(n: int, T: int, generator: torch.Generator, last: int = 1):
    """Filler tokens with one needle at a position uniform in [0, T - last); the target at every
    later position is the needle, none at or before it. tokens (n, T), target (n, T)."""
    n, T, last = require_int("n", n), require_int("T", T), require_int("last", last)
    if last >= T:
        raise ValueError(f"the needle must sit before the last {last} of T = {T} positions")
    tokens = torch.randint(0, FILLERS, (n, T), generator=generator)
    where = torch.randint(0, T - last, (n,), generator=generator)  # (n,)
    needle = FILLERS + torch.randint(0, NEEDLES, (n,), generator=generator)  # (n,)
    tokens[torch.arange(n), where] = needle
    after = torch.arange(T) > where[:, None]  # (n, T)
    return tokens, torch.where(after, needle[:, None], IGNORE)


@dataclass
class LongContextConfig:
    """The chapter's setting; ``make bench`` runs a larger one."""

    train_len: int = 256  # L: pairs turn from 41 times to 1/80 of a turn within it (d_k = 16)
    scales: tuple[int, ...] = (1, 2, 4, 8)  # read at s * L
    d_model: int = 32  # D
    n_head: int = 2  # H; d_k = D / H = 16: eight pairs, as many as fit on the book's figures
    queries: int = 32  # Q: the last positions of a long sequence that are read and scored
    short_len: int = 32  # short sequences, scored at every position (see train_readers)
    batch: int = 8  # long sequences per step and member
    short_batch: int = 16  # short sequences per step and member
    steps: int = 150
    lr: float = 0.02
    finetune_scale: int = 2  # the fine-tune reads 2L with every method set for s = 2
    finetune_steps: int = 20  # the same for every method
    finetune_lr: float = 0.01
    finetune_batch: int = 4  # long sequences per step and member (and twice as many short ones)
    lag: int = 3  # lag task: the answer at t is the token at t - lag
    rerope_window: int = 64  # w < L: ReRoPE never meets an offset beyond what training saw
    eval_batch: int = 8  # test sequences per length and member, the same for every method
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    tasks: tuple[str, ...] = TASKS
    methods: tuple[str, ...] = CHAPTER_METHODS

    def __post_init__(self):
        for name, minimum in (("train_len", 8), ("d_model", 2), ("n_head", 1), ("queries", 1),
                              ("short_len", 2), ("batch", 1), ("short_batch", 0), ("steps", 1),
                              ("finetune_scale", 1), ("finetune_steps", 0), ("finetune_batch", 1),
                              ("lag", 1), ("rerope_window", 1), ("eval_batch", 1)):  # fmt: skip
            setattr(self, name, require_int(name, getattr(self, name), minimum))
        self.lr = require_real("lr", self.lr, minimum=0)
        self.finetune_lr = require_real("finetune_lr", self.finetune_lr, minimum=0)
        if self.d_model % self.n_head or (self.d_model // self.n_head) % 2:
            raise ValueError(
                f"RoPE turns pairs: d_k = d_model / n_head must be a whole even number; got "
                f"d_model = {self.d_model}, n_head = {self.n_head}"
            )
        if not (self.lag < self.short_len and self.queries < self.train_len):
            raise ValueError(
                f"need lag < short_len and queries < train_len; got lag = {self.lag}, "
                f"short_len = {self.short_len}, queries = {self.queries}, L = {self.train_len}"
            )
        if not self.rerope_window < self.train_len - 1:
            raise ValueError(f"rerope_window must be below L - 1; got {self.rerope_window}")
        for name, check in (("scales", lambda v: require_int("scales", v)),
                            ("seeds", lambda v: require_int("seeds", v, None)),
                            ("tasks", lambda v: require_choice("tasks", v, TASKS)),
                            ("methods", lambda v: positional.variant(v).name)):  # fmt: skip
            values = getattr(self, name)
            if isinstance(values, str) or not values:
                raise ValueError(f"{name} must be a non-empty tuple; got {name}={values!r}")
            setattr(self, name, tuple(check(v) for v in values))

    @property
    def eval_lens(self) -> tuple[int, ...]:
        return tuple(s * self.train_len for s in self.scales)


def rotation_for(method: str, cfg: LongContextConfig, scale: float) -> Rotation:
    """The registry's rotation ``method`` for a model trained on L positions, set for s."""
    row = positional.variant(method)
    if row.acts != "rotation":
        raise ValueError(f"{method!r} does not rotate q and k; Q7 reads RoPE models only")
    settings = positional.Settings(
        cfg.d_model, cfg.n_head, rerope_window=cfg.rerope_window, train_len=cfg.train_len,
        rope_scale=float(scale),
    )  # fmt: skip
    return row.make(settings)


class Reader(nn.Module):
    """A causal one-layer Transformer that reads the last Q positions of its input.

    tokens (B, T) -> logits (R, B, Q, V) and weights (R, B, H, Q, T), one of each per rotation
    in ``rotations`` (default: its own): the keys and values are projected once for all.
    """

    def __init__(self, cfg: LongContextConfig):
        super().__init__()
        D, self.queries = cfg.d_model, cfg.queries
        self.embed = nn.Embedding(VOCAB, D)
        self.norm_in = nn.LayerNorm(D)  # q and k of one scale whatever the token
        self.attention = with_positions(Attention(D, cfg.n_head), rotation=positional.RoPE())
        self.norm_out = nn.LayerNorm(D)
        self.readout = nn.Linear(D, VOCAB)

    def forward(self, tokens: Tensor, rotations: list[Rotation] | None = None):
        T = tokens.shape[-1]
        Q = min(self.queries, T)
        scores_maker = self.attention.attention  # the PositionalAttention inside
        kept = scores_maker.rotation
        x = self.embed(tokens)  # (B, T, D)
        h = self.norm_in(x)
        k, v = self.attention.project_kv(h)  # (B, H, T, d_k), (B, H, T, d_v)
        mask = causal_mask(Q, T, device=tokens.device)[None]  # (1, Q, T): the batch axis explicit
        logits, weights = [], []
        try:
            for rotation in [kept] if rotations is None else rotations:
                scores_maker.rotation = rotation
                out, w = self.attention.attend(h[:, -Q:], k, v, mask)  # (B, Q, D), (B, H, Q, T)
                logits.append(self.readout(self.norm_out(x[:, -Q:] + out)))  # (B, Q, V)
                weights.append(w)
        finally:
            scores_maker.rotation = kept
        return torch.stack(logits), torch.stack(weights)  # (R, B, Q, V), (R, B, H, Q, T)


def _batch(task: str, n: int, T: int, generator: torch.Generator, cfg: LongContextConfig):
    """tokens (n, T) and the targets of the positions a Reader reads, (n, min(Q, T))."""
    if task == "lag":
        tokens, target = lag_copy_batch(n, T, generator, lag=cfg.lag, vocab=FILLERS)
    else:
        tokens, target = needle_batch(n, T, generator, last=cfg.queries if T > cfg.queries else 1)
    return tokens, target[:, -min(cfg.queries, T) :]


def _stream(cfg, members, key, steps, long_len, batch):
    """Every member's batches for ``steps`` steps, drawn up front: ``batch`` long sequences and
    short ones in the training's proportion, tokens and targets, each (E, steps, n, ...)."""
    parts = []
    short = cfg.short_batch * batch // cfg.batch
    for n, T in ((batch, long_len), (short, cfg.short_len)):
        drawn = [_batch(task, steps * n, T, seeds.generator("long-context", key, task, T, seed),
                        cfg) for task, seed in members]  # fmt: skip
        parts += [torch.stack([d[i] for d in drawn]).view(len(members), steps, n, -1)
                  for i in (0, 1)]  # fmt: skip
    return ((part[:, step] for part in parts) for step in range(steps))


def _loss(ensemble: Ensemble, batch) -> Tensor:
    """Every member's mean loss over its scored positions, long and short, summed over members."""
    total = 0.0
    for tokens, target in (batch[:2], batch[2:]):
        if tokens.shape[1] == 0:
            continue
        logits = ensemble(tokens)[0][:, 0]  # (E, B, Q, V)
        loss = nn.functional.cross_entropy(
            logits.flatten(0, 2), target.flatten(), ignore_index=IGNORE, reduction="none"
        ).view(target.shape)  # (E, B, Q)
        total = total + (loss.sum(dim=(1, 2)) / (target != IGNORE).sum(dim=(1, 2))).sum()
    return total


def train_readers(cfg: LongContextConfig) -> list[Reader]:
    """One Reader per (task, seed), trained together with plain RoPE at length L.

    Each step gives every member ``batch`` sequences of length L, read at their last Q
    positions, and ``short_batch`` sequences of ``short_len``, read everywhere: at the start
    a query's weight on the one key it needs is 1/T, so short inputs, as pre-training corpora
    have, make the lag task learnable in a few hundred steps.
    """
    members = [(task, seed) for task in cfg.tasks for seed in cfg.seeds]
    models = []
    for task, seed in members:
        seeds.manual_seed("long-context", "init", task, seed)
        models.append(Reader(cfg))
    with one_thread():
        ensemble = Ensemble(models)
        stream = _stream(cfg, members, "data", cfg.steps, cfg.train_len, cfg.batch)
        batches = (tuple(b) for b in stream)
        fit(ensemble, batches, _loss, steps=cfg.steps, lr=cfg.lr)
        ensemble.unstack(models)
    return models


def finetune_readers(models: list[Reader], method: str, cfg: LongContextConfig) -> list[Reader]:
    """Copies of ``models`` with ``method`` set for s = finetune_scale, trained for
    ``finetune_steps`` on sequences of s * L (and short ones), the same data for every method."""
    members = [(task, seed) for task in cfg.tasks for seed in cfg.seeds]
    tuned = [copy.deepcopy(model) for model in models]
    for model in tuned:
        model.attention.attention.rotation = rotation_for(method, cfg, cfg.finetune_scale)
    if cfg.finetune_steps:
        long_len = cfg.finetune_scale * cfg.train_len
        with one_thread():
            ensemble = Ensemble(tuned)
            stream = _stream(
                cfg, members, "finetune", cfg.finetune_steps, long_len, cfg.finetune_batch
            )
            fit(ensemble, (tuple(b) for b in stream), _loss, steps=cfg.finetune_steps,
                lr=cfg.finetune_lr)  # fmt: skip
            ensemble.unstack(tuned)
    return tuned

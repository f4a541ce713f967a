"""Chapter Q1's experiment: does a task that needs two offsets at once want two heads?

Dimension letters, fixed book-wide:
    R    copies of the model trained together (an ensemble axis; one seed per copy)
    B    batch size
    T    sequence length (``LENGTH``); T_q = T - 2 scored query positions
    D    d_model (``WIDTH``)
    H    n_head; d_k = d_v = D / H
    V    vocabulary (``VOCAB``, the digits 0..9)

The task: each token x_t is a digit and the target at t is (x_{t-1} - x_{t-2}) mod 10, so a
model must read one step back *and* two steps back, and know which is which. Positions 0
and 1 have no two earlier tokens and are not scored. The model (:class:`TinyAttentionModel`)
is an embedding plus learned positions, one :class:`~tutorial_lib.attention.MultiHeadAttention`
layer in which every position sees only earlier ones, and a small MLP.

A claim about what training finds needs many seeds, and a Python loop over seeds is slow, so
:func:`train_heads` trains R independent copies (each with its own weights, its own n_head
and its own data) as one :class:`~tutorial_lib.labs.seed_ensemble.Ensemble`. Adam updates
every number on its own and the loss is a sum over copies, so each copy trains as it would
alone (the tests check it against :func:`tutorial_lib.training.fit` on one copy).

Introduced in chapter Q1 ("Why does each head work in a lower dimension?").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import seeds
from ..attention import MultiHeadAttention, causal_mask
from ..training import fit
from ..validate import format_shape, require_int, require_token_ids
from .seed_ensemble import Ensemble

__all__ = [
    "VOCAB",
    "LENGTH",
    "WIDTH",
    "HIDDEN",
    "FIRST_SCORED",
    "difference_batch",
    "TinyAttentionModel",
    "scored_loss",
    "HeadsResult",
    "train_heads",
]

VOCAB, LENGTH, WIDTH = 10, 6, 32
HIDDEN = 4 * WIDTH  # the MLP's hidden width
FIRST_SCORED = 2  # positions 0 and 1 have no two earlier tokens to subtract


def difference_batch(n: int, generator: torch.Generator, copies: int | None = None):
    """Digits and targets (x[t-1] - x[t-2]) mod 10: two (n, T) tensors, or (R, n, T) for copies.

    Targets at positions 0 and 1 wrap around and are never scored.
    """
    n = require_int("n", n, why="(B, sequences per copy)")
    copies = None if copies is None else require_int("copies", copies, why="(R)")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None; got {type(generator).__name__}"
        )
    shape = (n, LENGTH) if copies is None else (copies, n, LENGTH)
    tokens = torch.randint(0, VOCAB, shape, generator=generator)
    target = (tokens.roll(1, dims=-1) - tokens.roll(2, dims=-1)) % VOCAB  # x[t-1] - x[t-2]
    return tokens, target


def earlier_only() -> Tensor:
    """(T, T) bool: query i may attend to key j < i (position 0 sees nothing)."""
    return causal_mask(LENGTH).tril(diagonal=-1)


class TinyAttentionModel(nn.Module):
    """Embedding + learned positions, one multi-head attention layer (post-LN), an MLP.

    ``forward(tokens (B, T), first=0) -> logits (B, T - first, V), attn (B, H, T, T)``.
    """

    def __init__(self, n_head: int):
        super().__init__()
        n_head = require_int("n_head", n_head, why="(H)")
        if WIDTH % n_head:
            raise ValueError(f"n_head must be a positive divisor of D = {WIDTH}; got {n_head!r}")
        self.n_head = n_head
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Parameter(torch.randn(LENGTH, WIDTH))
        self.attention = MultiHeadAttention(n_head, WIDTH, WIDTH // n_head, WIDTH // n_head, 0.0)
        self.readout = nn.Sequential(nn.Linear(WIDTH, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, VOCAB))
        self.register_buffer("mask", earlier_only(), persistent=False)

    def forward(self, tokens: Tensor, first: int = 0) -> tuple[Tensor, Tensor]:
        """tokens (B, T) -> logits (B, T - first, V) of positions first.. (training reads only
        the scored ones: the MLP then skips the rest), weights (B, H, T, T)."""
        require_token_ids("tokens", tokens, VOCAB)
        if tokens.shape[1] != LENGTH:
            raise ValueError(
                f"tokens must be (B, T) with T = LENGTH = {LENGTH} (the positions the model "
                f"learns); got shape {format_shape(tokens)}"
            )
        h = self.embed(tokens) + self.position  # (B, T, D)
        h, attn = self.attention(h, h, h, mask=self.mask[None])  # (B, T, D), (B, H, T, T)
        return self.readout(h[:, first:].contiguous()), attn  # contiguous: faster under vmap


def scored_loss(logits: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy per copy over the scored positions: logits (R, B, T_q, V),
    target (R, B, T) or (B, T) -> (R,)."""
    target = target[..., FIRST_SCORED:].expand(logits.shape[:3])  # (R, B, T_q)
    per_token = F.cross_entropy(logits.permute(0, 3, 1, 2), target, reduction="none")
    return per_token.flatten(1).mean(dim=1)


@dataclass
class HeadsResult:
    """What training an ensemble measured; index r is copy r, shares over held-out tokens."""

    models: list[TinyAttentionModel]  # every copy, trained, in eval mode
    n_heads: list[int]  # n_head of every copy
    accuracy: Tensor  # (R,) share of held-out targets (positions >= 2) predicted right
    one_back: list[Tensor]  # per copy, (H_r, N, T_q): weight on key t-1, every held-out query t
    two_back: list[Tensor]  # per copy, (H_r, N, T_q): weight on key t-2
    losses: list[float]  # the summed loss of every step

    def share(self, r: int) -> Tensor:
        """Copy r's w(t-1) / (w(t-1) + w(t-2)) per head and token: (H_r, N, T_q)."""
        one, two = self.one_back[r], self.two_back[r]
        return one / (one + two).clamp_min(1e-12)

    def copies(self, n_head: int) -> list[int]:
        """Indices of the copies with ``n_head`` heads."""
        return [r for r, h in enumerate(self.n_heads) if h == n_head]


def train_heads(
    n_heads: Sequence[int],
    *,
    key: str = "heads",
    steps: int = 500,
    batch_size: int = 64,
    lr: float = 5e-3,
    n_test: int = 1000,
    report: Callable[..., Iterable] | None = None,
) -> HeadsResult:
    """Train one copy per entry of ``n_heads`` (the n_head of that copy) together.

    Copy r is initialised from the seed ``(key, "init", r)`` through :mod:`tutorial_lib.seeds`,
    so it follows BOOK_SEED; every copy draws its own batches. The held-out set (``n_test``
    sequences, the same for every copy) is drawn from another seed. ``report``, e.g.
    :func:`tutorial_lib.notebook.progress`, is called as ``report(batches, label, total=steps)``
    and must yield the batches it is given (a live counter for a long cell).
    """
    models = []
    for r, n_head in enumerate(n_heads):
        seeds.manual_seed(key, "init", r)
        models.append(TinyAttentionModel(n_head))
    ensemble = Ensemble(models)  # one group of copies per head count
    R, data = len(models), seeds.generator(key, "data")

    batches: Iterable = (difference_batch(batch_size, data, copies=R) for _ in range(steps))
    if report is not None:
        batches = report(batches, f"training {R} runs", total=steps)
    stream: Iterator[tuple[Tensor, Tensor]] = iter(batches)

    def loss_fn(ensemble, batch):
        tokens, target = batch  # (R, B, T) each
        logits = ensemble.map(lambda model, x: model(x, FIRST_SCORED)[0], tokens)  # (R, B, T_q, V)
        return scored_loss(logits, target).sum()  # the copies are independent: sum

    losses = fit(ensemble, stream, loss_fn, steps=steps, lr=lr)
    for _ in stream:  # nothing is left; this lets a report close its line
        pass
    ensemble.unstack(models)
    tokens, target = difference_batch(n_test, seeds.generator(key, "test"))
    queries = torch.arange(FIRST_SCORED, LENGTH)  # the query positions t
    rows = torch.arange(len(queries))
    accuracy, one_back, two_back = [], [], []
    with torch.no_grad():
        for model in models:
            logits, attn = model(tokens)  # (N, T, V), (N, H, T, T)
            right = logits[:, FIRST_SCORED:].argmax(-1) == target[:, FIRST_SCORED:]  # (N, T_q)
            accuracy.append(right.float().mean())
            w = attn[:, :, FIRST_SCORED:].transpose(0, 1)  # (H, N, T_q, T)
            one_back.append(w[..., rows, queries - 1])  # (H, N, T_q)
            two_back.append(w[..., rows, queries - 2])
    return HeadsResult(models, list(n_heads), torch.stack(accuracy), one_back, two_back, losses)

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
:class:`HeadsEnsemble` runs R independent copies (each with its own weights, its own n_head
and its own data) as one batched model. Adam updates every number on its own and the loss
is a sum over copies, so each copy trains as it would alone. Copy r computes what a
:class:`TinyAttentionModel` with its weights computes, up to float rounding (the tests check
it), in a cheaper order: see :meth:`HeadsEnsemble.forward`.

Introduced in chapter Q1 ("Why does each head work in a lower dimension?").

About 330 lines: the single model and the ensemble that must compute exactly what it does
sit side by side, with the checks that name a bad input before a table lookup fails on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import seeds
from ..attention import MultiHeadAttention, causal_mask, masked_softmax
from ..training import fit
from ..validate import format_shape, require_int, require_real, require_tensor, require_token_ids

__all__ = [
    "VOCAB",
    "LENGTH",
    "WIDTH",
    "HIDDEN",
    "FIRST_SCORED",
    "difference_batch",
    "TinyAttentionModel",
    "HeadsEnsemble",
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

    ``forward(tokens (B, T)) -> logits (B, T, V), attn (B, H, T, T)``.
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

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        require_token_ids("tokens", tokens, VOCAB)
        if tokens.shape[1] != LENGTH:
            raise ValueError(
                f"tokens must be (B, T) with T = LENGTH = {LENGTH} (the positions the model "
                f"learns); got shape {format_shape(tokens)}"
            )
        h = self.embed(tokens) + self.position  # (B, T, D)
        h, attn = self.attention(h, h, h, mask=self.mask[None])  # (B, T, D), (B, H, T, T)
        return self.readout(h), attn


# TinyAttentionModel's parameters, in the order HeadsEnsemble stacks them.
_NAMES = (
    "embed.weight",  # (V, D)
    "position",  # (T, D)
    "attention.w_qs.weight",  # (D, D): nn.Linear stores (out, in)
    "attention.w_ks.weight",
    "attention.w_vs.weight",
    "attention.fc.weight",
    "attention.layer_norm.weight",  # (D,)
    "attention.layer_norm.bias",
    "readout.0.weight",  # (HIDDEN, D)
    "readout.0.bias",  # (HIDDEN,)
    "readout.2.weight",  # (V, HIDDEN)
    "readout.2.bias",  # (V,)
)


class HeadsEnsemble(nn.Module):
    """R copies of :class:`TinyAttentionModel`, each with its own weights and n_head, as one model.

    Built from R single models (their weights are stacked along a new leading axis), so each
    copy starts exactly where its single model starts. Copies may differ in n_head: scores are
    made per slice of width D / G (G = the largest n_head), and a head adds up the slices it
    owns, which is exactly its own dot product.

    ``forward(tokens (R, B, T)) -> logits (R, B, T_q, V), attn (R, G, B, T_q, T)`` for the
    scored query positions t = 2 .. T-1 only (the others are never scored). For a copy with
    H heads, head h's weights are slice h * G // H (see :meth:`head_weights`).
    """

    def __init__(self, models: Sequence[TinyAttentionModel]):
        super().__init__()
        if not models:
            raise ValueError("an ensemble needs at least one model; got none")
        for m in models:
            if not isinstance(m, TinyAttentionModel):
                raise TypeError(f"models must be TinyAttentionModels; got {type(m).__name__}")
        self.n_heads = [m.n_head for m in models]
        G = max(self.n_heads)
        if any(G % h for h in self.n_heads):
            raise ValueError(f"every n_head must divide the largest; got {self.n_heads}")
        self.n_slices = G
        self.params = nn.ParameterList(
            nn.Parameter(torch.stack([m.get_parameter(n).detach() for m in models]).clone())
            for n in _NAMES
        )
        # group[r, g, g'] = 1 when slices g and g' belong to the same head of copy r.
        head_of = torch.stack([torch.arange(G) // (G // h) for h in self.n_heads])  # (R, G)
        group = (head_of[:, :, None] == head_of[:, None, :]).float()  # (R, G, G)
        d_k = torch.tensor([WIDTH / h for h in self.n_heads])  # (R,)
        self.register_buffer("group", group, persistent=False)
        self.register_buffer("scale", (1 / d_k.sqrt()).view(-1, 1, 1, 1), persistent=False)
        self.register_buffer("mask", earlier_only()[FIRST_SCORED:], persistent=False)

    def __len__(self) -> int:
        return len(self.n_heads)

    def copy_state(self, r: int) -> dict[str, Tensor]:
        """Copy r's weights as a state dict for ``TinyAttentionModel(self.n_heads[r])``."""
        r = _check_copy(r, len(self))
        return {name: p[r].detach().clone() for name, p in zip(_NAMES, self.params, strict=True)}

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        embed, position, w_q, w_k, w_v, w_o, ln_w, ln_b, w_1, b_1, w_2, b_2 = self.params
        require_tensor(
            "tokens", tokens, "integer", f"(R, B, T) of token ids 0..V-1 = 0..{VOCAB - 1}"
        )
        if tokens.dim() != 3 or tokens.shape[0] != len(self) or tokens.shape[2] != LENGTH:
            raise ValueError(
                f"tokens must be (R, B, T) with R = {len(self)} copies and T = {LENGTH}; "
                f"got shape {tuple(tokens.shape)}"
            )
        require_token_ids("tokens", tokens.flatten(0, 1), VOCAB)  # the ids index tables below
        R, B, T = tokens.shape
        G, D, V, s = self.n_slices, WIDTH, VOCAB, FIRST_SCORED
        # 1. A token's vector depends only on its digit and its position, so there are just
        #    V*T different ones: project those once (nn.Linear computes x @ W^T) and look up.
        x_table = (embed[:, :, None] + position[:, None]).view(R, V * T, D)  # row x*T + t
        q_table, k_table, v_table = (
            (x_table @ w.transpose(1, 2)).view(R, V * T, G, D // G).transpose(1, 2)
            for w in (w_q, w_k, w_v)
        )  # (R, G, V*T, D/G) each
        # 2. Every score the batch can need, per slice; a head adds up the slices it owns.
        table = q_table @ k_table.transpose(-2, -1)  # (R, G, V*T, V*T)
        table = torch.einsum("rgh,rhij->rgij", self.group, table) * self.scale
        row = tokens * T + torch.arange(T)  # (R, B, T): each token's row in the tables
        pair = (row[:, :, s:, None] * (V * T) + row[:, :, None, :]).view(R, 1, -1)
        scores = table.flatten(2).gather(2, pair.expand(-1, G, -1))  # (R, G, B*T_q*T)
        weights = masked_softmax(
            scores.view(R, G, B, T - s, T), self.mask[None, None, None]
        )  # (R, G, B, T_q, T)
        # 3. weights @ values: spread each query's weights over the V*T table rows, then one
        #    matrix product per slice instead of B tiny ones.
        spread = torch.zeros(R, G, B * (T - s), V * T, dtype=weights.dtype)
        keys = row[:, None, :, None, :].expand(-1, G, -1, T - s, -1).reshape(R, G, -1, T)
        spread = spread.scatter_add(3, keys, weights.reshape(R, G, -1, T))
        out = (spread @ v_table).transpose(1, 2).reshape(R, B * (T - s), D)  # heads side by side
        # 4. W^O, residual, LayerNorm (eps as in MultiHeadAttention), then the MLP.
        x = x_table.gather(1, row[:, :, s:].reshape(R, -1, 1).expand(-1, -1, D))  # (R, B*T_q, D)
        h = torch.bmm(out, w_o.transpose(1, 2)) + x
        h = F.layer_norm(h, (D,), eps=1e-6) * ln_w[:, None] + ln_b[:, None]
        # The MLP works on columns, (R, features, B*T_q): its backward pass then multiplies
        # matrices of shapes the CPU handles far faster than (R, B*T_q, features).
        hidden = torch.baddbmm(b_1[:, :, None], w_1, h.transpose(1, 2)).relu()  # (R, HIDDEN, .)
        logits = torch.baddbmm(b_2[:, :, None], w_2, hidden)  # (R, V, B*T_q)
        return logits.view(R, V, B, T - s).permute(0, 2, 3, 1), weights  # (R, B, T_q, V)

    def head_weights(self, attn: Tensor) -> list[Tensor]:
        """Per copy, its heads' weights: a list of R tensors (H_r, B, T_q, T) from ``attn``."""
        G = self.n_slices
        require_tensor("attn", attn, "float", "(R, G, B, T_q, T)")
        T_q = LENGTH - FIRST_SCORED
        if attn.dim() != 5 or attn.shape[:2] != (len(self), G) or attn.shape[3:] != (T_q, LENGTH):
            raise ValueError(
                f"attn must be the ensemble's weights (R, G, B, T_q, T) with R = {len(self)}, "
                f"G = {G}, T_q = {T_q}, T = {LENGTH}; got shape {format_shape(attn)}"
            )
        return [attn[r, :: G // h] for r, h in enumerate(self.n_heads)]


def _check_copy(r: object, R: int) -> int:
    """r as an int that picks one of R copies, or an error."""
    r = require_int("r", r, minimum=0, why="(a copy's index)")
    if r >= R:
        raise ValueError(f"r must pick one of the R = {R} copies (0..{R - 1}); got r = {r}")
    return r


def scored_loss(logits: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy per copy over the scored positions: logits (R, B, T_q, V),
    target (R, B, T) or (B, T) -> (R,)."""
    target = target[..., FIRST_SCORED:].expand(logits.shape[:3])  # (R, B, T_q)
    per_token = F.cross_entropy(logits.permute(0, 3, 1, 2), target, reduction="none")
    return per_token.flatten(1).mean(dim=1)


@dataclass
class HeadsResult:
    """What training an ensemble measured; index r is copy r, shares over held-out tokens."""

    ensemble: HeadsEnsemble
    n_heads: list[int]  # n_head of every copy
    accuracy: Tensor  # (R,) share of held-out targets (positions >= 2) predicted right
    one_back: list[Tensor]  # per copy, (H_r, N, T_q): weight on key t-1, every held-out query t
    two_back: list[Tensor]  # per copy, (H_r, N, T_q): weight on key t-2
    losses: list[float]  # the summed loss of every step

    def share(self, r: int) -> Tensor:
        """Copy r's w(t-1) / (w(t-1) + w(t-2)) per head and token: (H_r, N, T_q)."""
        r = _check_copy(r, len(self.n_heads))
        one, two = self.one_back[r], self.two_back[r]
        return one / (one + two).clamp_min(1e-12)

    def copies(self, n_head: int) -> list[int]:
        """Indices of the copies with ``n_head`` heads."""
        n_head = require_int("n_head", n_head, why="(H)")
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
    if isinstance(n_heads, (str, bytes)) or not isinstance(n_heads, Sequence) or not n_heads:
        raise ValueError(
            f"n_heads must be a non-empty sequence, one n_head per copy; got {n_heads!r:.60}"
        )
    n_heads = [require_int("n_heads", h, why="(one H per copy)") for h in n_heads]
    steps, n_test = require_int("steps", steps, minimum=0), require_int("n_test", n_test)
    batch_size = require_int("batch_size", batch_size, why="(B)")
    lr = require_real("lr", lr, above=0)
    if report is not None and not callable(report):
        raise TypeError(f"report must be callable or None; got {type(report).__name__}")
    models = []
    for r, n_head in enumerate(n_heads):
        seeds.manual_seed(key, "init", r)
        models.append(TinyAttentionModel(n_head))
    ensemble = HeadsEnsemble(models)
    R = len(ensemble)
    data = seeds.generator(key, "data")

    batches: Iterable = (difference_batch(batch_size, data, copies=R) for _ in range(steps))
    if report is not None:
        batches = report(batches, f"training {R} runs", total=steps)
    stream: Iterator[tuple[Tensor, Tensor]] = iter(batches)

    def loss_fn(model, batch):
        tokens, target = batch
        return scored_loss(model(tokens)[0], target).sum()  # copies are independent: sum

    losses = fit(ensemble, stream, loss_fn, steps=steps, lr=lr)
    for _ in stream:  # nothing is left; this lets a report close its line
        pass
    tokens, target = difference_batch(n_test, seeds.generator(key, "test"))
    with torch.no_grad():
        logits, attn = ensemble(tokens.expand(R, -1, -1))
    right = logits.argmax(-1) == target[:, FIRST_SCORED:]  # (R, N, T_q)
    accuracy = right.float().flatten(1).mean(dim=1)
    queries = torch.arange(FIRST_SCORED, LENGTH)  # the query positions t
    one_back, two_back = [], []
    for w in ensemble.head_weights(attn):  # (H, N, T_q, T)
        one_back.append(w[..., torch.arange(len(queries)), queries - 1])  # (H, N, T_q)
        two_back.append(w[..., torch.arange(len(queries)), queries - 2])
    return HeadsResult(ensemble, list(n_heads), accuracy, one_back, two_back, losses)

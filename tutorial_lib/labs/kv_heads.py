"""Chapter Q6's experiment: what does sharing keys and values cost, for the cache it saves?

Letters: E copies trained together (one seed each), B batch, T length, F fields per record,
D = d_model, H = n_head, H_kv = n_kv_head, d_k per head, d_c the latent of MLA, d_R its RoPE
key.

The task, *pass on the record*: each position holds a record of F digits (0-9), and the
target at position t is the record at t - 1, every field of it (position 0 has none and is
not scored). One attention layer is the only path from one position to another, so
everything position t learns of record t - 1 comes through what the cache keeps for it.

The model (:class:`RecordModel`): the F field embeddings summed, one attention layer with
RoPE, a residual and a LayerNorm, an MLP that reads out F digits. The attention is one of
:class:`KVSpec`: grouped-query (:class:`~tutorial_lib.attention.Attention` with
``n_kv_head`` = H for multi-head, 1 for multi-query) or latent
(:class:`~tutorial_lib.latent.LatentAttention`). Width, heads, d_k, the rest of the model
and the training are the same for every variant; only how keys and values are made, and so
how many parameters make them, differs. The copies of one variant train side by side as one
:class:`~tutorial_lib.labs.seed_ensemble.Ensemble`; copy e of every variant sees the same
batches.

Introduced in chapter Q6 ("Do all heads need their own keys and values?").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import seeds
from ..attention import Attention, KVCache, causal_mask
from ..latent import LatentAttention, LatentCache
from ..positional import RoPE, with_positions
from ..training import fit, one_thread
from ..validate import require_int
from .seed_ensemble import Ensemble

__all__ = [
    "FIELDS",
    "DIGITS",
    "LENGTH",
    "WIDTH",
    "HEADS",
    "D_ROPE",
    "KVSpec",
    "record_batch",
    "RecordModel",
    "Run",
    "train_variant",
    "fine_tune",
    "pool_kv_heads",
    "cache_numbers",
    "measured_cache_bytes",
]

FIELDS, DIGITS, LENGTH = 6, 10, 8  # F digits per record, T records per sequence
WIDTH, HEADS = 32, 4  # D and H: d_k = d_v = 8
D_ROPE = 4  # MLA's RoPE key: d_k / 2, DeepSeek-V2's ratio (d_h^R = 64 for d_h = 128)
IGNORE = -100  # the target of position 0, which cross_entropy skips
TEST_KEY = "q6"  # every variant and every fine-tune meets the test set of (TEST_KEY, "test")


@dataclass(frozen=True)
class KVSpec:
    """One way of making keys and values: grouped (``n_kv_head``) or latent (``d_c``)."""

    n_kv_head: int | None = None  # H_kv of grouped-query attention: H, 1 or in between
    d_c: int | None = None  # the latent width of MLA

    def __post_init__(self):
        if (self.n_kv_head is None) == (self.d_c is None):
            raise ValueError(f"give n_kv_head or d_c, not both or neither; got {self}")
        if self.n_kv_head is not None and HEADS % require_int("n_kv_head", self.n_kv_head):
            raise ValueError(f"n_kv_head must divide H = {HEADS}; got {self.n_kv_head}")
        if self.d_c is not None:
            require_int("d_c", self.d_c)

    @property
    def name(self) -> str:
        if self.d_c is not None:
            return f"MLA, d_c = {self.d_c}"
        return {HEADS: "MHA", 1: "MQA"}.get(self.n_kv_head, f"GQA, {self.n_kv_head} kv heads")


def cache_numbers(spec: KVSpec) -> int:
    """Numbers the cache keeps per token and layer: 2 H_kv d_k (grouped), d_c + d_R (MLA)."""
    if spec.d_c is not None:
        return spec.d_c + D_ROPE
    return 2 * spec.n_kv_head * (WIDTH // HEADS)


def record_batch(n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Records (n, T, F) of uniform digits and targets (n, T, F): the record one step back."""
    n = require_int("n", n, why="(sequences)")
    records = torch.randint(0, DIGITS, (n, LENGTH, FIELDS), generator=generator)
    target = records.roll(1, dims=1)  # (n, T, F): position t gets record t - 1
    target[:, 0] = IGNORE
    return records, target


class RecordModel(nn.Module):
    """Field embeddings, one attention layer (RoPE), residual and LayerNorm, an MLP readout.

    ``forward(records (B, T, F), cache=None) -> logits (B, T, F, 10)``. With a cache (a
    :class:`~tutorial_lib.attention.KVCache` or
    :class:`~tutorial_lib.latent.LatentCache`) the records are the next positions after those
    it holds, as when decoding one position at a time.
    """

    def __init__(self, spec: KVSpec):
        super().__init__()
        self.spec = spec
        self.embed = nn.Embedding(FIELDS * DIGITS, WIDTH)  # one table, F blocks of 10 rows
        self.register_buffer("field_offset", torch.arange(FIELDS) * DIGITS, persistent=False)
        if spec.d_c is None:
            grouped = Attention(WIDTH, HEADS, spec.n_kv_head)
            self.attention = with_positions(grouped, rotation=RoPE())
        else:
            self.attention = LatentAttention(WIDTH, HEADS, spec.d_c, D_ROPE)
        self.norm = nn.LayerNorm(WIDTH)
        self.readout = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.ReLU(), nn.Linear(4 * WIDTH, FIELDS * DIGITS)
        )

    def new_cache(self) -> KVCache | LatentCache:
        return KVCache() if self.spec.d_c is None else LatentCache()

    def forward(self, records: Tensor, cache: KVCache | LatentCache | None = None) -> Tensor:
        T, past = records.shape[1], 0 if cache is None else len(cache)
        x = self.embed(records + self.field_offset).sum(dim=-2)  # (B, T, D): the fields summed
        mask = causal_mask(T, past + T, device=records.device)[None]  # (1, T, T_k)
        attended, _ = self.attention(x, mask=mask, cache=cache)  # (B, T, D)
        h = self.norm(x + attended)  # (B, T, D)
        return self.readout(h).unflatten(-1, (FIELDS, DIGITS))  # (B, T, F, 10)


def _loss(logits: Tensor, target: Tensor) -> Tensor:
    """Each copy's mean cross-entropy over scored positions and fields, summed over copies:
    logits (E, B, T, F, 10), target (E, B, T, F)."""
    per = F.cross_entropy(logits.movedim(-1, 1), target, ignore_index=IGNORE, reduction="none")
    return (per.flatten(1).sum(1) / (target != IGNORE).flatten(1).sum(1)).sum()


def accuracy(models: Ensemble | list[RecordModel], key: str = TEST_KEY, n: int = 500) -> Tensor:
    """Share of digits right (scored positions, every field) on ``n`` test sequences drawn
    from ``(key, "test")``, the same for every variant: (E,) for an ensemble or a list."""
    records, target = record_batch(n, seeds.generator(key, "test"))
    with torch.no_grad():
        if isinstance(models, Ensemble):
            logits = models(records.expand(models.size, *records.shape))  # (E, n, T, F, 10)
        else:
            logits = torch.stack([m(records) for m in models])
    right = logits.argmax(-1) == target  # (E, n, T, F)
    return right[:, :, 1:].flatten(1).float().mean(1)  # (E,)


@dataclass
class Run:
    """One variant trained over several seeds: copy e is ``models[e]``."""

    spec: KVSpec
    models: list[RecordModel]
    accuracy: Tensor  # (E,) share of test digits right after the last step
    curve: dict[int, Tensor]  # step -> (E,) the same share after that step (0: untrained)
    losses: list[float]  # the summed loss of every step
    parameters: int  # of one copy


def _train(
    models: list[RecordModel], key: str, steps: int, batch: int, lr: float, eval_every: int
) -> Run:
    """Train the copies as one Ensemble; copy e draws its batches from ``(key, "data", e)``;
    test accuracy before training and every ``eval_every`` steps (the test set is
    ``("q6", "test")`` whatever the key, so that fine-tuned copies meet the same test)."""
    E = len(models)
    streams = [seeds.generator(key, "data", e) for e in range(E)]
    curve: dict[int, Tensor] = {}

    def batches():
        while True:
            pairs = [record_batch(batch, g) for g in streams]
            yield torch.stack([r for r, _ in pairs]), torch.stack([t for _, t in pairs])

    def loss_fn(ensemble, b):
        records, target = b  # (E, B, T, F) each
        return _loss(ensemble(records), target)

    def on_step(step, _loss, _extra):
        if step % eval_every == 0 or step == steps:
            curve[step] = accuracy(ensemble, TEST_KEY)

    with one_thread():
        ensemble = Ensemble(models)
        curve[0] = accuracy(ensemble, TEST_KEY)
        losses = fit(ensemble, batches(), loss_fn, steps=steps, lr=lr, on_step=on_step)
        ensemble.unstack(models)
    n_params = sum(p.numel() for p in models[0].parameters())
    return Run(models[0].spec, models, curve[steps], curve, losses, n_params)


def train_variant(
    spec: KVSpec,
    *,
    key: str = "q6",
    copies: int = 6,
    steps: int = 200,
    batch: int = 16,
    lr: float = 1e-2,
    eval_every: int = 50,
) -> Run:
    """Train ``copies`` copies of one variant for ``steps`` Adam steps of ``batch`` sequences,
    measuring test accuracy every ``eval_every`` steps.

    Copy e starts from the seed ``(key, "init", spec.name, e)`` and reads the batches of
    ``(key, "data", e)``, the same batches for every variant (through :mod:`tutorial_lib.seeds`,
    so they follow BOOK_SEED). The test set is ``(TEST_KEY, "test")``, the same for all.
    """
    copies, steps = require_int("copies", copies), require_int("steps", steps, minimum=0)
    models = []
    for e in range(copies):
        seeds.manual_seed(key, "init", spec.name, e)
        models.append(RecordModel(spec))
    return _train(models, key, steps, require_int("batch", batch), lr, eval_every)


def pool_kv_heads(model: RecordModel, n_kv_head: int) -> RecordModel:
    """A grouped-query copy of a multi-head ``model``: key/value head g is the mean of the
    key/value heads of its group (query heads g*G ... (g+1)*G - 1, G = H / H_kv), the
    conversion of Ainslie et al. (2023, section 2.1); every other weight is copied."""
    if model.spec.n_kv_head != HEADS:
        raise ValueError(f"pool a multi-head model (n_kv_head = H = {HEADS}); got {model.spec}")
    pooled = RecordModel(KVSpec(n_kv_head=n_kv_head))
    state = model.state_dict()
    d_k, G = WIDTH // HEADS, HEADS // n_kv_head
    for name in ("attention.w_k.weight", "attention.w_v.weight"):  # (H d_k, D): head h's rows
        state[name] = state[name].view(n_kv_head, G, d_k, WIDTH).mean(dim=1).flatten(0, 1)
    pooled.load_state_dict(state)
    return pooled.eval()


def fine_tune(
    models: list[RecordModel],
    *,
    key: str,
    steps: int,
    batch: int = 16,
    lr: float = 1e-2,
    eval_every: int = 25,
) -> Run:
    """Train already trained ``models`` (one variant) for ``steps`` more steps, on batches of
    ``(key, "data", e)``: give a key of its own, so that they are batches not seen before."""
    return _train(list(models), key, require_int("steps", steps), batch, lr, eval_every)


def measured_cache_bytes(model: RecordModel, records: Tensor) -> tuple[Tensor, float]:
    """Feed records (B, T, F) one position at a time through a fresh cache: the logits
    (B, T, F, 10), and the bytes the cache then holds per token (of one sequence)."""
    cache = model.new_cache()
    with torch.no_grad():
        logits = torch.cat([model(records[:, t : t + 1], cache) for t in range(LENGTH)], dim=1)
    kept = [cache.k, cache.v] if isinstance(cache, KVCache) else [cache.c, cache.k_rope]
    total = sum(t.numel() * t.element_size() for t in kept)
    return logits, total / (records.shape[0] * records.shape[1])

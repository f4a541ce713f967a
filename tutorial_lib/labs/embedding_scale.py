"""Chapter Q3a's experiment: how the sqrt(d_model) factor sets the balance of tokens and positions.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).

A tiny model learns to reverse its input, which it can do only by reading positions;
the chapter varies the size of the token vectors against the positions'. Every set-up
is trained on several seeds at once (``tutorial_lib.labs.seed_ensemble.Ensemble``), so the
chapter can state each outcome with its spread.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch
from torch import Tensor, nn

from .. import seeds
from ..attention import MultiHeadAttention
from ..positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from ..training import fit, one_thread
from ..validate import require_bool, require_choice, require_int, require_real, require_token_ids
from .seed_ensemble import Ensemble

__all__ = ["ReversalModel", "reversal_batch", "train_reversal", "reversal_experiment"]

_POSITIONS = ("sinusoidal", "learned")  # ReversalModel's position variants
# What a set-up of reversal_experiment may set: ReversalModel's keyword arguments beyond the sizes.
_SETUP_KEYS = ("positions", "embed_std", "embed_factor", "n_head", "tie_output")


class ReversalModel(nn.Module):
    """Embedding (x factor) + positions, one multi-head attention layer, a small MLP, a readout.

    tokens (B, T) -> logits (B, T, vocab). The embedding is initialised
    N(0, embed_std^2), multiplied by ``embed_factor`` and added to the positions.
    ``tie_output=True`` makes the same table the output layer, as the paper does (section
    3.4): logits = h E^T, with no factor and no bias, so one table serves both ends.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int,
        max_len: int,
        positions: str = "sinusoidal",
        embed_std: float = 1.0,
        embed_factor: float = 1.0,
        n_head: int = 4,
        tie_output: bool = False,
    ):
        super().__init__()
        self.vocab, d_model = (
            require_int("vocab", vocab),
            require_int("d_model", d_model, why="(D)"),
        )
        max_len, n_head = require_int("max_len", max_len), require_int("n_head", n_head, why="(H)")
        require_choice("positions", positions, _POSITIONS)
        if d_model % n_head:
            raise ValueError(f"d_model = {d_model} must be divisible by n_head = {n_head}")
        self.embed = nn.Embedding(self.vocab, d_model)
        nn.init.normal_(self.embed.weight, std=require_real("embed_std", embed_std, minimum=0))
        # A buffer, not a float: members of one ensemble may use different factors.
        factor = require_real("embed_factor", embed_factor, minimum=0)
        self.register_buffer("embed_factor", torch.tensor(float(factor)))
        if positions == "sinusoidal":
            self.positions = SinusoidalPositionalEncoding(d_model, max_len=max_len)
        else:
            self.positions = LearnedPositionalEmbedding(max_len, d_model, init_std=0.02)
        d_head = d_model // n_head
        self.attention = MultiHeadAttention(n_head, d_model, d_head, d_head, dropout=0.0)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, d_model)
        )
        self.norm = nn.LayerNorm(d_model)
        # Tied: the readout is the embedding table itself (tensor2tensor's
        # shared_embedding_and_softmax_weights), so there is no separate layer.
        tied = require_bool("tie_output", tie_output)
        self.readout = None if tied else nn.Linear(d_model, vocab)

    def inputs(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """The two parts added at the input: token part (B, T, D) and position part (T, D)."""
        require_token_ids("tokens", tokens, self.vocab)
        tokens_part = self.embed(tokens) * self.embed_factor  # (B, T, D)
        return tokens_part, self.positions.encoding(tokens.shape[1])

    def length_ratio(self, tokens: Tensor) -> float:
        """Mean length of the token part over mean length of the position part, for ``tokens``."""
        with torch.no_grad():
            token_part, position_part = self.inputs(tokens)
            return (token_part.norm(dim=-1).mean() / position_part.norm(dim=-1).mean()).item()

    def forward(self, tokens: Tensor) -> Tensor:
        require_token_ids("tokens", tokens, self.vocab)
        h = self.positions(self.embed(tokens) * self.embed_factor)  # (B, T, D)
        h, _ = self.attention(h, h, h)  # (B, T, D)
        h = self.norm(h + self.mlp(h))  # (B, T, D)
        if self.readout is None:
            return h @ self.embed.weight.T  # (B, T, vocab): the tied table scores every token
        return self.readout(h)  # (B, T, vocab)


def reversal_batch(n: int, T: int, vocab: int, generator: torch.Generator | None) -> Tensor:
    """n sequences of T uniform tokens (n, T); the target is each one flipped."""
    n, T, vocab = require_int("n", n), require_int("T", T), require_int("vocab", vocab)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None; got {type(generator).__name__}"
        )
    return torch.randint(0, vocab, (n, T), generator=generator)


def _reversal_loss(logits: Tensor, tokens: Tensor) -> Tensor:
    """Mean cross-entropy of logits (..., B, T, V) against the flipped tokens, per leading
    index: (...,)."""
    target = tokens.flip(-1)  # (..., B, T)
    loss = nn.functional.cross_entropy(
        logits.flatten(0, -2), target.flatten(), reduction="none"
    ).view(target.shape)  # (..., B, T)
    return loss.mean(dim=(-2, -1))


def _test_accuracy(model: ReversalModel, T: int, vocab: int, n: int = 1000) -> float:
    tokens = reversal_batch(n, T, vocab, seeds.generator("embedding_scale", "test"))
    with torch.no_grad():
        return (model(tokens).argmax(-1) == tokens.flip(-1)).float().mean().item()


def train_reversal(
    model: ReversalModel, T: int, vocab: int, steps: int = 200, seed: int = 0
) -> dict[str, float]:
    """Train one ``model`` to output its input reversed; returns final loss and held-out accuracy.

    The chapter trains many seeds at once with :func:`reversal_experiment`; this trains one.
    """
    if not isinstance(model, ReversalModel):
        raise TypeError(f"model must be a ReversalModel; got {type(model).__name__}")
    T, steps, seed = (
        require_int("T", T),
        require_int("steps", steps),
        require_int("seed", seed, None),
    )
    vocab = require_int("vocab", vocab)
    if vocab > model.vocab:
        raise ValueError(f"vocab = {vocab} token ids, but the model embeds only {model.vocab}")
    data = seeds.generator("embedding_scale", "data", seed)
    stream = iter(lambda: reversal_batch(32, T, vocab, data), None)

    def loss_fn(model, tokens):
        return _reversal_loss(model(tokens), tokens)

    with one_thread():
        losses = fit(model, stream, loss_fn, steps=steps, lr=3e-3)
        accuracy = _test_accuracy(model, T, vocab)
    last = losses[-20:]  # the mean of the last 20 steps (fewer if training was shorter)
    return {"loss": sum(last) / len(last), "accuracy": accuracy}


def _train_group(setups, names, run_seeds, probe, test, vocab, d_model, T, steps, batch, lr):
    """One ensemble: every set-up in ``names`` (one architecture) times every seed."""
    members = [(name, seed) for name in names for seed in run_seeds]  # set-up-major
    models = []
    for name, seed in members:
        seeds.manual_seed("embedding_scale", "init", seed)  # the same draws for every set-up
        models.append(ReversalModel(vocab, d_model, T, **setups[name]))
    ratios = [model.length_ratio(probe) for model in models]
    # Each seed's training data, drawn up front and shared by every set-up: (S, steps, B, T).
    per_seed = torch.stack([
        reversal_batch(steps * batch, T, vocab, seeds.generator("embedding_scale", "data", s))
        for s in run_seeds
    ]).view(len(run_seeds), steps, batch, T)  # fmt: skip
    tokens = per_seed.repeat(len(names), 1, 1, 1)  # (E, steps, B, T), in the order of `members`
    batches = (tokens[:, step] for step in range(steps))  # (E, B, T)

    def loss_fn(ensemble, tokens):
        losses = _reversal_loss(ensemble(tokens), tokens)  # (E,)
        return losses.sum(), losses.detach()

    history = []
    start = time.perf_counter()
    ensemble = Ensemble(models)
    fit(ensemble, batches, loss_fn, steps=steps, lr=lr,
        on_step=lambda step, loss, per_member: history.append(per_member))  # fmt: skip
    seconds = (time.perf_counter() - start) / len(models)
    last = torch.stack(history[-20:]).mean(0)  # (E,): mean loss of the last 20 steps
    with torch.no_grad():
        right = ensemble.map(
            lambda model, x: (model(x).argmax(-1) == x.flip(-1)).float().mean(),
            test.expand(len(members), *test.shape), chunk_size=8,
        )  # (E,)  # fmt: skip
    ensemble.unstack(models)
    return [
        {"setup": name, "seed": seed, "ratio": ratios[e], "loss": last[e].item(),
         "accuracy": right[e].item(), "seconds": seconds, "model": models[e]}
        for e, (name, seed) in enumerate(members)
    ]  # fmt: skip


def reversal_experiment(
    setups: dict[str, dict],
    run_seeds: Iterable[int],
    *,
    vocab: int = 10,
    d_model: int = 64,
    T: int = 10,
    steps: int = 200,
    batch: int = 32,
    lr: float = 3e-3,
) -> list[dict[str, object]]:
    """Train every set-up (keyword arguments of :class:`ReversalModel`) on every seed.

    Seed s fixes the initial draws and the training data, the same for every set-up; the
    test sequences are the same for all. Set-ups that share an architecture (the same
    ``positions``, ``n_head`` and ``tie_output``) train together as one ``Ensemble``.
    Returns one row per (set-up, seed): {"setup", "seed", "ratio" (token / position length
    at initialisation), "loss" (mean of the last 20 steps), "accuracy" (held-out, per
    token), "seconds" (training time per run), "model" (trained)}.
    """
    vocab, d_model, T = (
        require_int("vocab", vocab),
        require_int("d_model", d_model, why="(D)"),
        require_int("T", T),
    )
    steps, batch = require_int("steps", steps), require_int("batch", batch, why="(B)")
    lr = require_real("lr", lr, above=0)
    if not isinstance(setups, dict) or not setups:
        raise ValueError(
            "reversal_experiment needs at least one set-up: setups must be a non-empty dict "
            f"{{name: ReversalModel keyword arguments}}; got setups={setups!r:.60}"
        )
    for name, setup in setups.items():
        if not isinstance(setup, dict) or set(setup) - set(_SETUP_KEYS):
            raise ValueError(
                f"setups[{name!r}] must be a dict of ReversalModel keyword arguments among "
                f"{list(_SETUP_KEYS)}; got {setup!r:.60}"
            )
    if isinstance(run_seeds, (str, bytes)) or not isinstance(run_seeds, Iterable):
        raise TypeError(
            f"run_seeds must be integer seeds (a tuple, a range); got run_seeds={run_seeds!r:.60}"
        )
    run_seeds = tuple(require_int("run_seeds", s, None) for s in run_seeds)
    if not run_seeds:
        raise ValueError("reversal_experiment needs at least one seed; got run_seeds=()")
    # One ensemble per architecture: members run with the first member's modules, so set-ups
    # that differ in what the modules are (positions, n_head, tying) must not share one.
    groups: dict[tuple, list[str]] = {}
    for name, setup in setups.items():
        positions = require_choice("positions", setup.get("positions", "sinusoidal"), _POSITIONS)
        n_head = require_int("n_head", setup.get("n_head", 4), why="(H)")
        tied = require_bool("tie_output", setup.get("tie_output", False))
        groups.setdefault((positions, n_head, tied), []).append(name)
    rows = []
    with one_thread():  # tiny tensors: a second thread would only wait
        probe = reversal_batch(256, T, vocab, seeds.generator("embedding_scale", "probe"))
        test = reversal_batch(1000, T, vocab, seeds.generator("embedding_scale", "test"))
        for names in groups.values():
            rows += _train_group(setups, names, run_seeds, probe, test, vocab, d_model, T,
                                 steps, batch, lr)  # fmt: skip
    order = list(setups)
    return sorted(rows, key=lambda row: (order.index(row["setup"]), run_seeds.index(row["seed"])))

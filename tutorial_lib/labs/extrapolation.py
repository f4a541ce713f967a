"""Chapter Q3b's length extrapolation: every position variant, trained at L, tested longer.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).

The chapter builds each idea in visible cells; what lives here is what it and
``make bench`` must share, so the book and the benchmark run the same code: the training
and the measurements of the experiment, on the models of
:mod:`tutorial_lib.labs.position_model` and the tasks of
:mod:`tutorial_lib.labs.extrapolation_tasks` (whose names this module shares). Every claim
rests on several seeds, so one variant's runs (every task and seed) train side by side as
one batched :class:`~tutorial_lib.labs.seed_ensemble.Ensemble`. Its figures are in
:mod:`tutorial_lib.figures.positional`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch
from torch import Tensor, nn

from .. import positional, seeds
from ..training import fit, one_thread
from ..validate import require_choice, require_int, require_token_ids
from .extrapolation_tasks import (
    EXTRAPOLATION_TASKS,
    IGNORE,
    VOCAB,
    hold_last_value_batch,
    lag_copy_batch,
)
from .position_model import CHAPTER_VARIANTS, ExtrapolationConfig, PositionModel
from .seed_ensemble import Ensemble

__all__ = [
    "CHAPTER_VARIANTS",
    "ExtrapolationConfig",
    "PositionModel",
    "lag_copy_batch",
    "hold_last_value_batch",
    "EXTRAPOLATION_TASKS",
    "VOCAB",
    "train_ensemble",
    "train_and_evaluate",
    "position_part_by_distance",
    "extrapolation_experiment",
    "summarise",
]


def _batch(task: str, n: int, T: int, generator: torch.Generator, cfg: ExtrapolationConfig):
    make_batch = EXTRAPOLATION_TASKS[task][0]
    kwargs = {"lag": cfg.lag} if task == "lag" else {}
    return make_batch(n, T, generator, **kwargs)  # tokens (n, T), target (n, T)


def train_ensemble(
    variant: str,
    cfg: ExtrapolationConfig,
    tasks: tuple[str, ...] | None = None,
    run_seeds: tuple[int, ...] | None = None,
) -> list[dict[str, object]]:
    """Train one variant on sequences of length L for every (task, seed), all of them side by
    side as one batched ``Ensemble``, then measure each at every evaluation length.

    Seed s fixes a member's initial weights and training data, the same for every variant
    (a fair comparison); the test sequences are the same for every variant and seed.
    Returns one row per (task, seed), as :func:`train_and_evaluate`.
    """
    if not isinstance(cfg, ExtrapolationConfig):
        raise TypeError(f"cfg must be an ExtrapolationConfig; got {type(cfg).__name__}")
    positional.variant(variant)  # a ValueError names every variant
    tasks = cfg.tasks if tasks is None else tasks
    run_seeds = cfg.seeds if run_seeds is None else run_seeds
    for name, values in (("tasks", tasks), ("run_seeds", run_seeds)):
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(f"{name} must be a non-empty tuple; got {name}={values!r:.60}")
    tasks = tuple(require_choice("tasks", task, tuple(EXTRAPOLATION_TASKS)) for task in tasks)
    run_seeds = tuple(require_int("run_seeds", seed, None) for seed in run_seeds)
    if not tasks or not run_seeds:
        raise ValueError(
            f"need at least one task and one seed; got tasks={tasks}, run_seeds={run_seeds}"
        )
    members = [(task, seed) for task in tasks for seed in run_seeds]
    models = []
    for task, seed in members:
        seeds.manual_seed("extrapolation", "init", task, seed)
        models.append(PositionModel(variant, VOCAB, cfg))
    # Every member's training data, drawn up front: steps * B sequences of length L each
    # (none with steps = 0: the members are then evaluated as initialised).
    none = torch.empty(0, cfg.train_len, dtype=torch.long)
    pairs = [
        _batch(task, cfg.steps * cfg.batch, cfg.train_len,
               seeds.generator("extrapolation", "data", task, seed), cfg)
        if cfg.steps else (none, none)
        for task, seed in members
    ]  # fmt: skip
    shape = (len(members), cfg.steps, cfg.batch, cfg.train_len)
    tokens = torch.stack([t for t, _ in pairs]).view(shape)  # (E, steps, B, L)
    targets = torch.stack([y for _, y in pairs]).view(shape)
    batches = ((tokens[:, step], targets[:, step]) for step in range(cfg.steps))  # (E, B, L)

    def loss_fn(ensemble, batch):
        tokens, target = batch
        logits = ensemble(tokens)  # (E, B, L, vocab)
        loss = nn.functional.cross_entropy(
            logits.flatten(0, 2), target.flatten(), ignore_index=IGNORE, reduction="none"
        ).view(target.shape)  # (E, B, L)
        scored = (target != IGNORE).sum(dim=(1, 2))  # (E,)
        return (loss.sum(dim=(1, 2)) / scored).sum()  # every member's own mean, summed

    with one_thread():
        start = time.perf_counter()
        ensemble = Ensemble(models)
        fit(ensemble, batches, loss_fn, steps=cfg.steps, lr=cfg.lr)
        seconds = time.perf_counter() - start
        measured = _evaluate(ensemble, [task for task, _ in members], cfg)
        ensemble.unstack(models)
    return [
        {"variant": variant, "task": task, "seed": seed, "train_seconds": seconds / len(members),
         **measured[e], "model": model}
        for e, ((task, seed), model) in enumerate(zip(members, models, strict=True))
    ]  # fmt: skip


def train_and_evaluate(
    variant: str, task: str, cfg: ExtrapolationConfig, seed: int = 0
) -> dict[str, object]:
    """Train one variant on sequences of length L, then measure accuracy at every eval length.

    Returns {"variant", "task", "seed", "train_seconds", "accuracy": {T: acc},
    "accuracy_beyond_L": {T: acc over positions >= L only},
    "focus": {T: for the lag task, the mean weight the best head puts on the key ``lag``
    back}, "far_attention": {T: that head's mean weight on keys L or more back},
    "best_head": {T: that head's index}, "model"}; focus, far attention and the best
    head are measured on queries at positions >= L when T > L (None for the hold task,
    whose target key moves).
    """
    require_choice("task", task, EXTRAPOLATION_TASKS)
    if not isinstance(cfg, ExtrapolationConfig):
        raise TypeError(f"cfg must be an ExtrapolationConfig; got {type(cfg).__name__}")
    seed = require_int("seed", seed, None)
    return train_ensemble(variant, cfg, (task,), (seed,))[0]


def _evaluate(ensemble: Ensemble, tasks: list[str], cfg: ExtrapolationConfig) -> list[dict]:
    """Every member's accuracy (all positions, positions >= L) and lag-head statistics per T."""
    results = [
        {"accuracy": {}, "accuracy_beyond_L": {}, "focus": {}, "far_attention": {},
         "best_head": {}} for _ in tasks
    ]  # fmt: skip
    for T in cfg.eval_lens:
        # The same test sequences for every variant and seed.
        test = {
            task: _batch(task, cfg.eval_batch, T, seeds.generator("extrapolation", "test", task, T),
                         cfg) for task in set(tasks)
        }  # fmt: skip
        tokens = torch.stack([test[task][0] for task in tasks])  # (E, n, T)
        target = torch.stack([test[task][1] for task in tasks])
        # Members at a time so that the (n, H, T, T) weights stay small at every T.
        chunk = max(1, 2**23 // (cfg.eval_batch * cfg.n_head * T * T))
        with torch.no_grad():
            counts, focus, far = ensemble.map(
                lambda model, x, y: _measure(model, x, y, cfg.train_len, cfg.lag),
                tokens, target, chunk_size=chunk,
            )  # (E, 4), (E, H), (E, H)  # fmt: skip
        for e, task in enumerate(tasks):
            right, scored, right_far, scored_far = counts[e].tolist()
            result = results[e]
            result["accuracy"][T] = right / scored
            result["accuracy_beyond_L"][T] = right_far / scored_far if scored_far else None
            best = int(focus[e].argmax()) if task == "lag" else None
            result["best_head"][T] = best
            result["focus"][T] = None if best is None else focus[e, best].item()
            result["far_attention"][T] = None if best is None else far[e, best].item()
    return results


def _measure(model: PositionModel, tokens: Tensor, target: Tensor, L: int, lag: int):
    """One model on test tokens (n, T): counts (4,) = (right, scored, right at t >= L, scored at
    t >= L), and per head (H,) the mean weight on the key ``lag`` back ("focus") and on keys L or
    more back ("far"), over queries from L on when T > L (never seen in training), else from
    ``lag`` on."""
    logits, weights = model(tokens, return_weights=True)  # (n, T, V), (n, H, T, T)
    T = tokens.shape[-1]
    scored = target != IGNORE  # (n, T)
    beyond = scored & (torch.arange(T) >= L)
    hit = logits.argmax(-1) == target
    counts = torch.stack(
        [(hit & scored).sum(), scored.sum(), (hit & beyond).sum(), beyond.sum()]
    ).to(weights.dtype)  # (4,)
    first = L if T > L else lag
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    at_lag = (i - j == lag).to(weights.dtype)[first:]  # (T - first, T)
    far_keys = (i - j >= L).to(weights.dtype)[first:]
    rows = weights[..., first:, :]  # (n, H, T - first, T)
    focus = (rows * at_lag).sum(-1).mean(dim=(0, 2))  # (H,)
    far = (rows * far_keys).sum(-1).mean(dim=(0, 2))  # (H,)
    return counts, focus, far


def position_part_by_distance(model: PositionModel, tokens: Tensor, first: int = 0) -> Tensor:
    """The position part of the first layer's scores, averaged per head and distance: (H, T).

    tokens: (B, T). Entry [h, d] is the mean, over the batch and over queries i >= ``first``
    with a key at distance d = i - j, of what head h's score bias adds for that pair: for
    Transformer-XL its terms (b) + (d) (``position_terms``), otherwise the whole bias.
    Every distance 0 .. T-1 is reached (by query max(first, d)), since first < T.
    """
    if not isinstance(model, PositionModel):
        raise TypeError(f"model must be a PositionModel; got {type(model).__name__}")
    require_token_ids("tokens", tokens, model.vocab)
    first = require_int("first", first, minimum=0)
    if first >= tokens.shape[1]:
        raise ValueError(f"first must be a query position below T = {tokens.shape[1]}; got {first}")
    attention = model.blocks[0].attention.attention  # the PositionalAttention of block 0
    if attention.bias is None:
        raise ValueError(f"variant {model.variant!r} adds no bias to the scores")
    seen = {}
    hook = attention.register_forward_pre_hook(lambda _, args: seen.update(q=args[0], k=args[1]))
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        hook.remove()
    q, k, scale = seen["q"], seen["k"], 1.0 / attention.temperature  # (B, H, T, d_k) each
    with torch.no_grad():
        terms = getattr(attention.bias, "position_terms", attention.bias)
        part = terms(q, k, scale).expand(*q.shape[:-1], k.shape[-2])  # (B, H, T, T)
    T = part.shape[-1]
    profile = torch.full((part.shape[1], T), float("nan"))  # (H, T)
    for d in range(T):
        # Diagonal -d holds the pairs (i, i - d) for i = d .. T-1.
        rows = part.diagonal(offset=-d, dim1=-2, dim2=-1)[..., max(first - d, 0) :]  # (B, H, n)
        if rows.shape[-1]:
            profile[:, d] = rows.mean(dim=(0, -1))
    return profile


def extrapolation_experiment(cfg: ExtrapolationConfig) -> list[dict[str, object]]:
    """Every (task, variant, seed) of ``cfg``: one row per run, as :func:`train_and_evaluate`.

    One ensemble per variant trains every task and seed at once.
    """
    if not isinstance(cfg, ExtrapolationConfig):
        raise TypeError(f"cfg must be an ExtrapolationConfig; got {type(cfg).__name__}")
    return [row for variant in cfg.variants for row in train_ensemble(variant, cfg)]


def summarise(rows: list[dict], key: str = "accuracy") -> dict[tuple[str, str, int], list[float]]:
    """(task, variant, T) -> the values of ``key`` over seeds, from experiment rows."""
    keys = ("accuracy", "accuracy_beyond_L", "focus", "far_attention", "best_head")
    require_choice("key", key, keys)
    table: dict[tuple[str, str, int], list[float]] = {}
    for row in rows:
        for T, value in row[key].items():
            if value is not None:
                table.setdefault((row["task"], row["variant"], T), []).append(value)
    return table

"""Chapter Q5's experiment over seeds: E copies of the chapter's encoder-decoder
(:mod:`tutorial_lib.labs.reverse_model`, whose names this module shares) learn to reverse
digits side by side.

Dimension letters as in :mod:`tutorial_lib.model`: E ensemble members (seeds), B batch,
T_src source length, T_tgt target length, D width, H heads, V vocabulary.

The chapter trains it live; the tests and ``make bench`` train the same models with the
same settings from here, so the three cannot drift apart. :func:`train_ensemble` trains
them as one :class:`~tutorial_lib.labs.seed_ensemble.Ensemble` by the one-model recipe
(Adam with the paper's betas, a linear warm-up, teacher forcing, fresh batches) and the
same loop, :func:`tutorial_lib.training.fit`: every member keeps its own initialisation,
its own batches and its own Adam state, as if trained alone, and a member that reaches
the target leaves the batch.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .. import seeds
from ..data import PAD, make_batch, teacher_forcing
from ..model import Transformer, TransformerConfig, source_mask, target_mask
from ..training import fit
from .reverse_model import LENGTH, N_SYMBOLS, chapter_config, smoothed_loss_floor, train_reverse
from .seed_ensemble import Ensemble

__all__ = [
    "N_SYMBOLS",
    "LENGTH",
    "chapter_config",
    "train_reverse",
    "EnsembleRun",
    "train_ensemble",
    "smoothed_loss_floor",
]


def _logits(model: Transformer, src: Tensor, dec_in: Tensor, self_mask: Tensor) -> Tensor:
    """The Transformer's forward pass with the decoder's self-attention mask passed in, so that a
    member with ``causal=False`` shares the batch with causal ones -> (B, T_tgt, V)."""
    src_mask = source_mask(src, model.config.pad_id)  # (B, 1, T_src)
    memory, _ = model.encoder(src, src_mask)  # (B, T_src, D)
    return model.decoder(dec_in, memory, self_mask, src_mask)[0]  # (B, T_tgt, V)


def _self_mask(config: TransformerConfig, dec_in: Tensor) -> Tensor:
    """dec_in (B, T_tgt) -> (B, T_tgt, T_tgt): causal AND real, or (without causal) real only."""
    if config.causal:
        return target_mask(dec_in, config.pad_id)
    T = dec_in.shape[1]
    return source_mask(dec_in, config.pad_id).expand(-1, T, -1)  # every real key, future too


@dataclass
class EnsembleRun:
    """What :func:`train_ensemble` measured, one entry per member (seed)."""

    models: list[Transformer]  # the trained members, each a plain Transformer in eval mode
    reached: list[int | None]  # step at which held-out exact match first hit the target
    accuracy: list[float]  # held-out exact match of the returned model
    losses: list[list[float]]  # per member, the loss of every step it trained
    batch_accuracy: list[list[float]]  # per member and step: fresh batch right, before update
    seconds: float  # wall-clock time of the whole run, checks included
    # step -> {member: copy after that step}, for the members still training then
    snapshots: dict[int, dict[int, Transformer]] = field(default_factory=dict)


def _smoothed_cross_entropy(logits: Tensor, target: Tensor, epsilon: Tensor) -> Tensor:
    """Each member's mean cross-entropy over its real target tokens, with its own smoothing.

    logits (E, B, T, V), target (E, B, T), epsilon (E,) -> (E,). Per token
    (1 - epsilon) (-log p_target) + epsilon mean_v(-log p_v): PyTorch's ``label_smoothing``.
    """
    # Over V moved first: PyTorch's CPU log_softmax along a short last axis is several times slower.
    log_p = logits.movedim(-1, 0).log_softmax(dim=0)  # (V, E, B, T)
    nll = -log_p.gather(0, target[None])[0]  # (E, B, T)
    uniform = -log_p.mean(dim=0)  # (E, B, T)
    eps = epsilon[:, None, None]
    per_token = (1 - eps) * nll + eps * uniform  # (E, B, T)
    real = target != PAD
    return (per_token * real).flatten(1).sum(1) / real.flatten(1).sum(1)  # (E,)


def _check_configs(configs: Sequence[TransformerConfig], start) -> None:
    """Raise unless one batched model can run every member (a silently wrong run otherwise)."""
    if not configs:
        raise ValueError("configs must name at least one member; got none")
    first = configs[0]
    shapes = [
        dataclasses.replace(c, token_rms=first.token_rms, causal=first.causal) for c in configs
    ]
    shapes += [] if start is None else [m.config for m in start]
    for shape in shapes:
        if dataclasses.replace(shape, token_rms=first.token_rms, causal=first.causal) != first:
            raise ValueError(
                "ensemble members (and start's models) may differ only in token_rms and causal; "
                f"got {shape} and {first}"
            )
    if start is not None and len(start) != len(configs):
        raise ValueError(f"start needs one model per config ({len(configs)}); got {len(start)}")


class _Checks:
    """The held-out check of :func:`train_ensemble`: teacher-forced exact match per member,
    which for a causal decoder equals greedy decoding's, first on a quarter of the set and on
    the whole set only for those that get that quarter entirely right (most checks fail, and
    then only "below the target" matters)."""

    def __init__(self, ensemble: Ensemble, configs, test_set: tuple[Tensor, Tensor]):
        self.ensemble, self.src = ensemble, test_set[0]
        self.dec_in, self.dec_target = teacher_forcing(test_set[1])  # (N, T_tgt) each
        self.masks = [_self_mask(c, self.dec_in) for c in configs]  # E x (N, T_tgt, T_tgt)

    @torch.no_grad()
    def exact(self, members: list[int], rows: int) -> list[float]:
        """Share of the first ``rows`` held-out sequences each member gets entirely right."""
        n = len(members)
        src, dec_in = self.src[:rows].expand(n, -1, -1), self.dec_in[:rows].expand(n, -1, -1)
        masks = torch.stack([self.masks[e][:rows] for e in members])
        logits = self.ensemble.map(_logits, src, dec_in, masks, members=members)
        target = self.dec_target[:rows]
        right = (logits.argmax(-1) == target) | (target == PAD)  # (n, rows, T_tgt)
        return right.all(dim=-1).float().mean(dim=-1).tolist()

    def __call__(self, members: list[int], final: bool) -> list[float]:
        self.ensemble.eval()
        N = self.src.shape[0]
        quarter = N if final else N // 4
        result = [acc * quarter / N for acc in self.exact(members, quarter)]  # a bound if failed
        perfect = [e for e, acc in zip(members, result, strict=True) if acc == quarter / N]
        if perfect and not final:
            whole = dict(zip(perfect, self.exact(perfect, N), strict=True))
            result = [whole.get(e, acc) for e, acc in zip(members, result, strict=True)]
        self.ensemble.train()
        return result


def train_ensemble(
    configs: Sequence[TransformerConfig],
    *,
    key: str,
    steps: int,
    task: str = "reverse",
    length: int = LENGTH,
    batch_size: int = 32,
    lr: float = 5e-3,
    warmup: int = 50,
    label_smoothing: float | Sequence[float] = 0.0,
    unrelated_targets: bool = False,
    target: float | None = 1.0,
    start: Sequence[Transformer] | None = None,
    snapshot_steps: Sequence[int] = (),
    test_set: tuple[Tensor, Tensor] | None = None,
    progress: Callable[..., Iterable] | None = None,
) -> EnsembleRun:
    """Train one model per entry of ``configs`` (E members) at once, as one batched model.

    Member e starts from ``seeds.manual_seed("ensemble", key, "init", e)`` (or ``start[e]``)
    and reads fresh batches of ``task`` from ``seeds.generator("ensemble", key, "data", e)``.
    Configs may differ only in ``token_rms`` (the tokens' initial size) and ``causal`` (the
    decoder's mask). The recipe is :func:`tutorial_lib.training.train`'s: Adam with betas
    (0.9, 0.98), eps 1e-9, a linear warm-up over ``warmup`` steps to ``lr``, teacher forcing;
    batches of ``batch_size`` (half of ``train``'s 64: more steps, less time in all).
    ``label_smoothing`` (one value, or one per member) is PyTorch's. ``unrelated_targets``:
    every target is a fresh random string (nothing to learn; the chapter's causal-mask test).

    With a ``target``, a member whose fresh batch is entirely right (at most every 5 steps)
    is checked on ``test_set`` (default: ``make_batch(task, 1000, length, seed=10_000)``, as
    ``train``) by its teacher-forced exact match, which equals greedy decoding's for a
    causal decoder; at the target it leaves the batch. ``target=None`` trains every member
    ``steps`` steps. ``snapshot_steps``: keep a copy of every member still training after
    those steps. ``progress(batches, label, total)`` wraps the stream of batches (a counter).
    """
    configs = list(configs)
    _check_configs(configs, start)
    E, first, start_time = len(configs), configs[0], time.perf_counter()
    epsilon = torch.as_tensor(label_smoothing, dtype=torch.float32).expand(E).clone()  # (E,)
    if not bool(((epsilon >= 0) & (epsilon < 1)).all()):  # NaN fails it
        raise ValueError(f"label_smoothing must lie in [0, 1); got {label_smoothing}")
    members = []
    for e, config in enumerate(configs):
        seeds.manual_seed("ensemble", key, "init", e)
        model = Transformer(config)  # initialised with its own token_rms
        member = Transformer(first)  # every member of one architecture: one vmap runs them all
        member.load_state_dict((model if start is None else start[e]).state_dict())
        members.append(member)
    ensemble = Ensemble(members, randomness="different")  # dropout draws per member
    if test_set is None:
        test_set = make_batch(task, 1000, length, N_SYMBOLS, seed=10_000)
    check = _Checks(ensemble, configs, test_set)
    streams = [seeds.generator("ensemble", key, "data", e) for e in range(E)]
    reached: list[int | None] = [None] * E
    accuracy = [float("nan")] * E
    losses: list[list[float]] = [[] for _ in range(E)]
    batch_accuracy: list[list[float]] = [[] for _ in range(E)]
    last_check, snapshots = [0] * E, {}

    def stream() -> Iterator[tuple[Tensor, ...]]:
        for _ in range(steps):
            if not ensemble.size:  # every member has left
                return
            pairs = [_batch(task, batch_size, length, streams[e], unrelated_targets)
                     for e in ensemble.active]  # fmt: skip
            src = torch.stack([s for s, _ in pairs])  # (E_active, B, T_src)
            dec_in, dec_target = teacher_forcing(torch.cat([t for _, t in pairs]))
            dec_in = dec_in.view(len(pairs), batch_size, -1)  # (E_active, B, T_tgt)
            masks = torch.stack(
                [_self_mask(configs[e], d) for e, d in zip(ensemble.active, dec_in, strict=True)]
            )
            yield src, dec_in, dec_target.view_as(dec_in), masks

    def loss_fn(ensemble, batch):
        src, dec_in, dec_target, masks = batch
        logits = ensemble.map(_logits, src, dec_in, masks)  # (E_active, B, T_tgt, V)
        member_loss = _smoothed_cross_entropy(logits, dec_target, epsilon[ensemble.active])
        right = (logits.detach().argmax(-1) == dec_target) | (dec_target == PAD)
        return member_loss.sum(), (member_loss.tolist(), right.flatten(2).all(2).float().mean(1))

    def on_step(step, _loss, extra):
        member_loss, batch_right = extra
        for i, e in enumerate(ensemble.active):
            losses[e].append(member_loss[i])
            batch_accuracy[e].append(batch_right[i].item())
        if step in snapshot_steps:
            snapshots[step] = {e: _member(ensemble, e, configs[e]) for e in ensemble.active}
        if target is None:
            return None
        # A perfect batch earns a held-out check, at most every 5 steps; the last step, one each.
        ready = [right >= target and step - last_check[e] >= 5
                 for e, right in zip(ensemble.active, batch_right, strict=True)]  # fmt: skip
        due = [e for e, r in zip(ensemble.active, ready, strict=True) if r or step == steps]
        done = []
        for e, acc in zip(due, check(due, final=step == steps) if due else [], strict=True):
            last_check[e], accuracy[e] = step, acc
            if acc >= target:
                reached[e] = step
                done.append(e)
        return done

    batches: Iterator = stream()
    if progress is not None:
        batches = iter(progress(batches, f"training steps ({E} models at once)", total=steps))
    fit(ensemble, batches, loss_fn, steps=steps, lr=lr, betas=(0.9, 0.98), eps=1e-9,
        warmup=warmup, on_step=on_step)  # fmt: skip
    for _ in batches:  # nothing is left: this lets a progress line close
        pass
    unchecked = [e for e in ensemble.active if math.isnan(accuracy[e])]
    for e, acc in zip(unchecked, check(unchecked, final=True) if unchecked else [], strict=True):
        accuracy[e] = acc
    return EnsembleRun(
        models=[_member(ensemble, e, configs[e]) for e in range(E)],
        reached=reached,
        accuracy=accuracy,
        losses=losses,
        batch_accuracy=batch_accuracy,
        seconds=time.perf_counter() - start_time,
        snapshots=snapshots,
    )


def _member(ensemble: Ensemble, e: int, config: TransformerConfig) -> Transformer:
    """Member e as a plain Transformer of its own config, in eval mode."""
    with torch.random.fork_rng():  # building it draws weights that are overwritten
        model = Transformer(config)
    model.load_state_dict(ensemble.member_state(e), strict=False)  # positions: non-persistent
    return model.eval()


def _batch(task, batch_size, length, generator, unrelated):
    src, tgt = make_batch(task, batch_size, length, N_SYMBOLS, generator=generator)
    if unrelated:
        tgt = make_batch("copy", batch_size, length, N_SYMBOLS, generator=generator)[1]
    return src, tgt

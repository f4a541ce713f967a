"""Chapter Q5's experiment: a tiny encoder-decoder learns to reverse strings of digits.

Dimension letters as in :mod:`tutorial_lib.model`: E ensemble members (seeds), B batch,
T_src source length, T_tgt target length, D width, H heads, V vocabulary.

The chapter trains it live; the tests and ``make bench`` train the same model with the
same settings from here, so the three cannot drift apart.

A claim about training holds only if it holds over seeds, and training eight small models
one after the other costs eight times one. :func:`train_ensemble` trains E models of one
architecture as a single batched model (``torch.func.stack_module_state`` and ``vmap`` over
the library's own :class:`~tutorial_lib.model.Transformer`): every member keeps its own
initialisation, its own stream of batches and its own Adam state, exactly as if it were
trained alone, and a member that reaches the target leaves the batch.

About 500 lines: the chapter's config, single-model training and the batched ensemble
use one data pipeline and one recipe, which must not drift apart; the ensemble's many
options are checked in one place before any member is built.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from .. import seeds
from ..data import PAD, TASKS, make_batch, teacher_forcing, vocab_size
from ..model import Transformer, TransformerConfig, source_mask, target_mask
from ..training import TrainResult, train
from ..validate import (
    format_shape,
    require_bool,
    require_choice,
    require_int,
    require_real,
    require_same_batch,
    require_token_ids,
    to_tensor,
)

__all__ = [
    "N_SYMBOLS",
    "LENGTH",
    "chapter_config",
    "train_reverse",
    "EnsembleRun",
    "train_ensemble",
    "smoothed_loss_floor",
]

N_SYMBOLS = 10  # digits 0..9
LENGTH = 8  # the string length: as many steps to learn as 16 digits take, at half the cost


def chapter_config(**changes) -> TransformerConfig:
    """The chapter's model: D=32, H=4, d_ff=128, one layer per stack; ``changes`` override."""
    V = vocab_size(N_SYMBOLS)
    config = TransformerConfig(
        src_vocab=V,
        tgt_vocab=V,
        d_model=32,
        n_head=4,
        d_ff=128,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,  # fresh data every step: nothing to overfit (the paper's 0.1 fights that)
        max_len=128,
        token_rms=0.25,  # small token vectors leave the positions audible (the chapter shows why)
    )
    unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(TransformerConfig)})
    if unknown:
        raise TypeError(f"chapter_config got fields TransformerConfig does not have: {unknown}")
    return dataclasses.replace(config, **changes)


def train_reverse(seed: int = 0, **train_kwargs) -> tuple[Transformer, TrainResult]:
    """A fresh chapter model trained on reverse (length ``LENGTH`` = 8, lr 5e-3) until greedy
    decoding is exact on 1,000 held-out strings; ``train_kwargs`` pass on to :func:`.train`."""
    seeds.manual_seed("reverse", require_int("seed", seed, None))
    model = Transformer(chapter_config())
    options = {"length": LENGTH, "n_symbols": N_SYMBOLS, "lr": 5e-3, "seed": seed} | train_kwargs
    return model, train(model, "reverse", **options)


def smoothed_loss_floor(epsilon: float, V: int) -> tuple[float, float]:
    """The lowest cross-entropy a model can reach with label smoothing, and its confidence there.

    Smoothing trains against q = (1 - epsilon) one_hot + epsilon / V (PyTorch's
    ``label_smoothing``: the epsilon is spread over all V classes, the right one included).
    The cross-entropy -sum q log p is smallest at p = q, where it equals the entropy of q,
    and the model's top probability is then 1 - epsilon + epsilon / V.
    """
    epsilon = require_real("epsilon", epsilon, minimum=0, why="and < 1 (label smoothing)")
    if epsilon >= 1:
        raise ValueError(
            f"epsilon must be below 1 (1 would smooth the target into the uniform); "
            f"got epsilon={epsilon:g}"
        )
    V = require_int("V", V, minimum=2, why="(the vocabulary size)")
    top, rest = 1 - epsilon + epsilon / V, epsilon / V
    floor = -top * math.log(top) - (V - 1) * (rest * math.log(rest) if rest else 0.0)
    return floor, top


class _EncodeDecode(nn.Module):
    """The Transformer's forward pass with the decoder's self-attention mask passed in.

    ``Transformer.forward`` checks its token ids with Python-level reads, which a batched
    (vmapped) call cannot make, and builds the causal mask itself; here the caller builds
    the mask, so a member with ``causal=False`` can share the batch with causal ones.
    """

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor, dec_in: Tensor, self_mask: Tensor) -> Tensor:
        """src (B, T_src), dec_in (B, T_tgt), self_mask (B, T_tgt, T_tgt) -> (B, T_tgt, V)."""
        pad = self.model.config.pad_id
        src_mask = source_mask(src, pad)  # (B, 1, T_src)
        memory, _ = self.model.encoder(src, src_mask)  # (B, T_src, D)
        logits, _, _ = self.model.decoder(dec_in, memory, self_mask, src_mask)
        return logits  # (B, T_tgt, V)


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


def _unstack(template: Transformer, names: list[str], params: list[Tensor], i: int) -> Transformer:
    """A plain Transformer holding row i of the stacked parameters; ``template`` (never run,
    so it holds no batched tensors) gives its config and buffers."""
    model = copy.deepcopy(template)
    state = {name: p[i].detach().clone() for name, p in zip(names, params, strict=True)}
    model.load_state_dict(state, strict=False)  # buffers (the positions) are the base's
    return model.eval()


@torch.no_grad()
def _exact_match(run, params: list[Tensor], src: Tensor, dec_in, dec_target, mask) -> Tensor:
    """Teacher-forced exact-match share per member on one shared set -> (E,).

    For a causal decoder it equals greedy decoding's exact-match accuracy (see
    :func:`tutorial_lib.decoding.teacher_forced_accuracy`).
    """
    logits = vmap(run, in_dims=(0, None, None, 0))(params, src, dec_in, mask)  # (E, B, T, V)
    right = (logits.argmax(-1) == dec_target) | (dec_target == PAD)  # (E, B, T)
    return right.all(dim=-1).float().mean(dim=-1)  # (E,)


def _check_configs(configs: object, start: object) -> None:
    """Raise unless configs are TransformerConfigs that one batched model can run (and
    ``start`` gives one Transformer of that shape per config)."""
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence) or not configs:
        raise ValueError(f"configs must name at least one member; got {configs!r:.60}")
    for config in configs:
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"configs must be TransformerConfigs; got {type(config).__name__}")
    first, V = configs[0], vocab_size(N_SYMBOLS)
    for config in configs[1:]:
        if dataclasses.replace(config, token_rms=first.token_rms, causal=first.causal) != first:
            raise ValueError(
                "ensemble members may differ only in token_rms and causal; got "
                f"{config} and {first}"
            )
    if min(first.src_vocab, first.tgt_vocab) < V:
        raise ValueError(
            f"configs must embed the task's V = {V} token ids ({N_SYMBOLS} digits, PAD, BOS, "
            f"EOS); got src_vocab={first.src_vocab}, tgt_vocab={first.tgt_vocab}"
        )
    if start is None:
        return
    if isinstance(start, nn.Module) or not isinstance(start, Sequence):
        raise TypeError(f"start must be a list of Transformers; got {type(start).__name__}")
    if len(start) != len(configs):
        raise ValueError(f"start needs one model per config ({len(configs)}); got {len(start)}")
    for model in start:
        if not isinstance(model, Transformer):
            raise TypeError(f"start must be a list of Transformers; got {type(model).__name__}")
        config = model.config
        if dataclasses.replace(config, token_rms=first.token_rms, causal=first.causal) != first:
            raise ValueError(
                f"start's models must have the configs' shape (they may differ only in token_rms "
                f"and causal); got {config} for {first}"
            )


def _check_lengths(config: TransformerConfig, length: int, test_set: object) -> None:
    """Raise unless the model's positions reach the training and held-out sequences
    (the decoder reads one more token than the target: BOS first)."""
    if length + 1 > config.max_len:
        raise ValueError(
            f"length = {length} needs length + 1 = {length + 1} decoder positions, but the "
            f"configs have max_len = {config.max_len}"
        )
    if test_set is None:
        return
    if not isinstance(test_set, (tuple, list)) or len(test_set) != 2:
        raise TypeError(f"test_set must be a pair (src, tgt) of token ids; got {test_set!r:.60}")
    src, tgt = test_set
    require_token_ids("test_set's src", src, config.src_vocab)
    require_token_ids("test_set's tgt", tgt, config.tgt_vocab)
    require_same_batch("test_set's src", src, "tgt", tgt)
    if max(src.shape[1], tgt.shape[1] + 1) > config.max_len:
        raise ValueError(
            f"test_set's src {format_shape(src)} and tgt {format_shape(tgt)} need "
            f"max(T_src, T_tgt + 1) = {max(src.shape[1], tgt.shape[1] + 1)} positions, but "
            f"the configs have max_len = {config.max_len}"
        )


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
    progress: Callable[..., Iterable[int]] | None = None,
) -> EnsembleRun:
    """Train one model per entry of ``configs`` (E members) at once, as one batched model.

    Member e is initialised from ``seeds.manual_seed("ensemble", key, "init", e)`` (or copied
    from ``start[e]``) and reads its own fresh batches of ``task`` from
    ``seeds.generator("ensemble", key, "data", e)``. The configs may differ only in what does
    not change the parameters' shapes or the modules: ``token_rms`` (the initial size of the
    token vectors) and ``causal`` (the decoder's mask). Training is
    :func:`tutorial_lib.training.train`'s recipe: Adam with betas (0.9, 0.98), eps 1e-9, a
    linear warm-up over ``warmup`` steps to ``lr``, teacher forcing; fresh batches of
    ``batch_size`` (32 by default, half of ``train``'s 64: the runs need more steps, but take
    less time in all). ``label_smoothing``
    (one value, or one per member) is PyTorch's: the target is (1 - epsilon) one-hot +
    epsilon / V.
    ``unrelated_targets``: every target is a fresh random string, unrelated to its source
    (nothing to learn; the chapter's test of the causal mask).

    With a ``target``, a member whose fresh batch is entirely right (at most every 5 steps)
    is checked on the held-out ``test_set`` (default: the 1,000 sequences ``train`` uses,
    ``make_batch(task, 1000, length, seed=10_000)``) by the teacher-forced exact match, which
    equals greedy decoding's for a causal decoder; at the target it stops and leaves the
    batch. ``target=None`` trains every member for ``steps`` steps. ``snapshot_steps``: keep
    a copy of every member still training after those steps. ``progress(steps, label, total)``,
    if given, wraps the loop over steps (:func:`tutorial_lib.notebook.progress` shows a counter).
    """
    _check_configs(configs, start)
    E = len(configs)
    steps, warmup = require_int("steps", steps, minimum=0), require_int("warmup", warmup, minimum=0)
    require_choice("task", task, TASKS)
    length, batch_size = (
        require_int("length", length),
        require_int("batch_size", batch_size, why="(B)"),
    )
    lr = require_real("lr", lr, above=0)
    target = None if target is None else require_real("target", target, minimum=0, maximum=1)
    unrelated_targets = require_bool("unrelated_targets", unrelated_targets)
    if isinstance(snapshot_steps, (str, bytes)) or not isinstance(snapshot_steps, Iterable):
        raise TypeError(f"snapshot_steps must be a tuple of steps; got {snapshot_steps!r:.60}")
    snapshot_steps = tuple(require_int("snapshot_steps", s) for s in snapshot_steps)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None; got {type(progress).__name__}")
    smoothing = to_tensor("label_smoothing", label_smoothing, "real", "() or (E,)")
    if smoothing.dim() > 1 or smoothing.numel() not in (1, E):
        raise ValueError(
            f"label_smoothing must be one value or one per member, (E,) = ({E},); got shape "
            f"{format_shape(smoothing)}"
        )
    epsilon = smoothing.to(torch.float32).expand(E).clone()  # (E,)
    if not bool(((epsilon >= 0) & (epsilon < 1)).all()):  # NaN fails it
        raise ValueError(f"label_smoothing must lie in [0, 1); got {label_smoothing}")
    _check_lengths(configs[0], length, test_set)
    models = []
    for e, config in enumerate(configs):
        seeds.manual_seed("ensemble", key, "init", e)
        model = Transformer(config)
        if start is not None:
            model.load_state_dict(start[e].state_dict())
        models.append(model)
    base = copy.deepcopy(models[0])  # runs every member's forward; models[e] stay templates
    params_by_name, _ = stack_module_state(models)  # name -> (E, ...), buffers stay the base's
    names = list(params_by_name)
    params = [p.detach().requires_grad_() for p in params_by_name.values()]
    runner = _EncodeDecode(base)

    def run(member_params, src, dec_in, mask):
        named = {f"model.{n}": p for n, p in zip(names, member_params, strict=True)}
        return functional_call(runner, named, (src, dec_in, mask))

    batched = vmap(run, randomness="different")  # dropout draws its own mask per member
    optimiser = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9)

    if test_set is None:
        test_set = make_batch(task, 1000, length, N_SYMBOLS, seed=10_000)
    test_in, test_target = teacher_forcing(test_set[1])
    test_masks = torch.stack([_self_mask(c, test_in) for c in configs])  # (E, B, T, T)
    streams = [seeds.generator("ensemble", key, "data", e) for e in range(E)]

    active = list(range(E))  # members still training, in batch order
    reached: list[int | None] = [None] * E
    final: list[Transformer | None] = [None] * E
    accuracy = [float("nan")] * E
    losses: list[list[float]] = [[] for _ in range(E)]
    batch_accuracy: list[list[float]] = [[] for _ in range(E)]
    last_check = [0] * E
    snapshots: dict[int, dict[int, Transformer]] = {}
    start_time = time.perf_counter()

    def _check(run, params, rows: list[int], members: list[int], final: bool) -> list[float]:
        """Held-out exact match of the given rows: first on a quarter of the set, and on the
        whole set only for those that get that quarter entirely right (most checks fail, and
        then only "below the target" matters); a final check uses the whole set."""
        index = torch.tensor(rows)
        member_params = [p.detach()[index] for p in params]
        quarter = test_set[0].shape[0] if final else test_set[0].shape[0] // 4
        first = _exact_match(
            run,
            member_params,
            test_set[0][:quarter],
            test_in[:quarter],
            test_target[:quarter],
            test_masks[members][:, :quarter],
        )
        result = (first * quarter / test_set[0].shape[0]).tolist()  # a bound for the failures
        perfect = [k for k, acc in enumerate(first.tolist()) if acc == 1.0]
        if perfect and not final:
            whole = _exact_match(
                run,
                [p[perfect] for p in member_params],
                test_set[0],
                test_in,
                test_target,
                test_masks[[members[k] for k in perfect]],
            )
            for k, acc in zip(perfect, whole.tolist(), strict=True):
                result[k] = acc
        return result

    def finish(e: int, i: int, acc: float) -> None:
        final[e] = _unstack(models[e], names, params, i)
        accuracy[e] = acc

    base.train()

    def step_numbers():  # stops early once every member has reached the target
        step = 0
        while step < steps and active:
            step += 1
            yield step

    loop: Iterable[int] = step_numbers()
    if progress is not None:
        label = f"training steps ({E} models at once)" if E > 1 else "training steps"
        loop = progress(loop, label, total=steps)
    for step in loop:
        for group in optimiser.param_groups:
            group["lr"] = lr * min(1.0, step / warmup) if warmup else lr
        pairs = [_batch(task, batch_size, length, streams[e], unrelated_targets) for e in active]
        src = torch.stack([s for s, _ in pairs])  # (E_active, B, T_src)
        dec_in, dec_target = teacher_forcing(torch.cat([t for _, t in pairs]))
        dec_in = dec_in.view(len(active), batch_size, -1)  # (E_active, B, T_tgt)
        dec_target = dec_target.view(len(active), batch_size, -1)
        masks = torch.stack(
            [_self_mask(configs[e], d) for e, d in zip(active, dec_in, strict=True)]
        )
        logits = batched(params, src, dec_in, masks)  # (E_active, B, T_tgt, V)
        member_loss = _smoothed_cross_entropy(logits, dec_target, epsilon[active])  # (E_active,)
        optimiser.zero_grad(set_to_none=True)
        member_loss.sum().backward()  # members share no parameter: each gets its own gradient
        optimiser.step()

        right = (logits.detach().argmax(-1) == dec_target) | (dec_target == PAD)
        batch_right = right.flatten(2).all(dim=2).float().mean(dim=1)  # (E_active,)
        for i, e in enumerate(active):
            losses[e].append(member_loss[i].item())
            batch_accuracy[e].append(batch_right[i].item())
        if step in snapshot_steps:
            base.eval()
            snapshots[step] = {
                e: _unstack(models[e], names, params, i) for i, e in enumerate(active)
            }
            base.train()
        if target is None:
            continue
        due = [
            i
            for i, e in enumerate(active)
            if (batch_right[i] >= target and step - last_check[e] >= 5) or step == steps
        ]
        if not due:
            continue
        base.eval()
        checked = _check(run, params, due, [active[i] for i in due], final=step == steps)
        done = []
        for i, acc in zip(due, checked, strict=True):
            e = active[i]
            last_check[e] = step
            if acc >= target:
                reached[e] = step
            if acc >= target or step == steps:
                finish(e, i, acc)
                done.append(i)
        base.train()
        if done:
            keep = [i for i in range(len(active)) if i not in done]
            active = [active[i] for i in keep]
            if active:
                params = _keep_members(optimiser, params, keep)

    base.eval()
    for i, e in enumerate(active):  # target=None, or steps ran out before a final check
        if final[e] is None:
            acc = _exact_match(
                run,
                [p.detach()[i : i + 1] for p in params],
                test_set[0],
                test_in,
                test_target,
                test_masks[e : e + 1],
            )
            finish(e, i, acc.item())
    return EnsembleRun(
        models=[m for m in final if m is not None],
        reached=reached,
        accuracy=accuracy,
        losses=losses,
        batch_accuracy=batch_accuracy,
        seconds=time.perf_counter() - start_time,
        snapshots=snapshots,
    )


def _batch(task, batch_size, length, generator, unrelated):
    src, tgt = make_batch(task, batch_size, length, N_SYMBOLS, generator=generator)
    if unrelated:
        tgt = make_batch("copy", batch_size, length, N_SYMBOLS, generator=generator)[1]
    return src, tgt


def _smoothed_cross_entropy(logits: Tensor, target: Tensor, epsilon: Tensor) -> Tensor:
    """Each member's mean cross-entropy over its real target tokens, with its own smoothing.

    logits (E, B, T, V), target (E, B, T), epsilon (E,) -> (E,). Per token
    (1 - epsilon) (-log p_target) + epsilon mean_v(-log p_v): PyTorch's ``label_smoothing``.
    """
    log_p = logits.log_softmax(dim=-1)  # (E, B, T, V)
    nll = -log_p.gather(-1, target[..., None])[..., 0]  # (E, B, T)
    uniform = -log_p.mean(dim=-1)  # (E, B, T)
    eps = epsilon[:, None, None]
    per_token = (1 - eps) * nll + eps * uniform  # (E, B, T)
    real = target != PAD
    return (per_token * real).flatten(1).sum(1) / real.flatten(1).sum(1)  # (E,)


def _keep_members(optimiser: torch.optim.Adam, params: list[Tensor], keep: list[int]):
    """Drop finished members: slice every stacked parameter and its Adam state to ``keep``."""
    index = torch.tensor(keep)
    kept = []
    for p in params:
        q = p.detach()[index].requires_grad_()
        state = optimiser.state.pop(p, None)
        if state is not None:
            optimiser.state[q] = {
                name: value if name == "step" else value[index] for name, value in state.items()
            }
        kept.append(q)
    optimiser.param_groups[0]["params"] = kept
    return kept

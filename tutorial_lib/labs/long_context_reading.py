"""Reading chapter Q7's models: every method at every length, and where the attention goes.

Dimension letters as in :mod:`tutorial_lib.labs.long_context` (B, T, H, d_k, Q, E).

Train once, read many ways: :func:`read_at_lengths` runs every member of an ensemble once per
length, projects its keys and values once, and lets each method's rotation make its own
scores from them. :func:`attention_by_distance` and :func:`pair_leads` look inside one model:
where its attention goes, and which pairs of dimensions make the answer's key win.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import seeds
from ..positional import Rotation, apply_rope, query_key_positions
from ..training import one_thread
from .extrapolation import IGNORE
from .long_context import (
    DILUTION_METHODS,
    FILLERS,
    STATIC_METHODS,
    LongContextConfig,
    Reader,
    _batch,
    finetune_readers,
    rotation_for,
    train_readers,
)
from .seed_ensemble import Ensemble

__all__ = [
    "read_at_lengths",
    "long_context_experiment",
    "probe_batch",
    "attention_by_distance",
    "pair_leads",
]


def _read(model: Reader, tokens: Tensor, target: Tensor, targets_at: Tensor, rotations, L: int):
    """Per rotation: (right, scored), then for the head that puts most weight on the key the
    answer is in: that weight, its weight on keys L or more back, its entropy (nats). (R, 5)"""
    logits, weights = model(tokens, rotations)  # (R, n, Q, V), (R, n, H, Q, T)
    R, n, H, Q, T = weights.shape
    scored = target != IGNORE  # (n, Q)
    right = ((logits.argmax(-1) == target) & scored).sum(dim=(1, 2))  # (R,)
    rows = scored[None, :, None, :].to(weights.dtype)  # only queries with an answer

    def mean_over_queries(values):  # (R, n, H', Q) -> (R, H'): over the scored queries
        return (values * rows).sum(dim=(1, 3)) / rows.sum(dim=(1, 3))

    index = targets_at[None, :, None, :, None].expand(R, n, H, Q, 1)
    focus = mean_over_queries(weights.gather(-1, index)[..., 0])  # (R, H)
    best = focus.argmax(-1)  # (R,): the head that puts most weight on the answer's key
    w = weights.transpose(1, 2)[torch.arange(R), best][:, :, None]  # (R, n, 1, Q, T): its weights
    entropy = -(w * w.clamp_min(1e-30).log()).sum(-1)  # (R, n, 1, Q)
    # Query q sits at T - Q + q: the keys L or more back are the first T - Q + q - L + 1.
    far = torch.stack([w[..., q, : max(T - Q + q - L + 1, 0)].sum(-1) for q in range(Q)], -1)
    count = scored.sum().expand_as(right).to(weights.dtype)
    return torch.stack([right.to(weights.dtype), count, focus.gather(-1, best[:, None])[:, 0],
                        mean_over_queries(far)[:, 0], mean_over_queries(entropy)[:, 0]],
                       dim=-1)  # fmt: skip


def read_at_lengths(models: list[Reader], methods, cfg: LongContextConfig, scale_of=None):
    """Every member read by every method at every length of ``cfg``.

    ``scale_of(T)`` sets each method's s (default T / L: each set for the length it reads).
    Returns {method: [{"accuracy", "focus", "far", "entropy": {T: value}} per member, in the
    order (task, seed)]}: for the head that puts most weight on the key holding the answer,
    that weight (focus), its weight on keys L or more back (far) and its entropy (nats).
    """
    members = [(task, seed) for task in cfg.tasks for seed in cfg.seeds]
    scale_of = scale_of or (lambda T: T / cfg.train_len)
    keys = ("accuracy", "focus", "far", "entropy")
    out = {m: [{key: {} for key in keys} for _ in members] for m in methods}
    with one_thread(), torch.no_grad():
        ensemble = Ensemble(models)
        for T in cfg.eval_lens:
            test = {task: _batch(task, cfg.eval_batch, T,
                                 seeds.generator("long-context", "test", task, T), cfg)
                    for task in cfg.tasks}  # fmt: skip
            tokens = torch.stack([test[task][0] for task, _ in members])  # (E, n, T)
            target = torch.stack([test[task][1] for task, _ in members])  # (E, n, Q)
            at = torch.stack([_answer_key(task, *test[task], cfg) for task, _ in members])
            rotations = [rotation_for(m, cfg, scale_of(T)) for m in methods]

            def read(model, x, y, a, rotations=rotations):
                return _read(model, x, y, a, rotations, cfg.train_len)

            stats = ensemble.map(read, tokens, target, at)  # (E, R, 5)
            for e in range(len(members)):
                for r, method in enumerate(methods):
                    right, scored, *rest = stats[e, r].tolist()
                    for key, value in zip(keys, (right / scored, *rest), strict=True):
                        out[method][e][key][T] = value
    return out


def _answer_key(task: str, tokens: Tensor, target: Tensor, cfg: LongContextConfig) -> Tensor:
    """Per read position (n, Q): the key that holds the answer (lag: lag back; needle: the
    needle; 0 where nothing is scored, which the measurements skip)."""
    n, T = tokens.shape
    Q = target.shape[-1]
    if task == "lag":
        return (torch.arange(T - Q, T) - cfg.lag).clamp(min=0).expand(n, Q)
    return (tokens >= FILLERS).int().argmax(-1)[:, None].expand(n, Q)


def long_context_experiment(cfg: LongContextConfig) -> dict[str, object]:
    """Train once; read by every method with and without the fine-tune, and the static ones
    set for the longest length read at L. Returns {"models", "trained", "finetuned",
    "static"}: each a dict as :func:`read_at_lengths` returns (the models before tuning)."""
    models = train_readers(cfg)
    read = tuple(dict.fromkeys((*cfg.methods, *DILUTION_METHODS)))
    trained = read_at_lengths(models, read, cfg)
    finetuned = {}
    for method in cfg.methods:
        tuned = finetune_readers(models, method, cfg)
        finetuned |= read_at_lengths(tuned, (method,), cfg)
    short = LongContextConfig(**{**cfg.__dict__, "scales": (1,)})
    longest = max(cfg.eval_lens) / cfg.train_len
    static = read_at_lengths(models, STATIC_METHODS, short, scale_of=lambda T: longest)
    return {"models": models, "trained": trained, "finetuned": finetuned, "static": static}


def probe_batch(task: str, T: int, cfg: LongContextConfig, n: int | None = None):
    """Fresh test sequences for looking inside a model: tokens (n, T), the targets of the read
    positions (n, Q) and the key that holds each answer (n, Q). n defaults to eval_batch."""
    n = cfg.eval_batch if n is None else n
    tokens, target = _batch(task, n, T, seeds.generator("long-context", "probe", task, T), cfg)
    return tokens, target, _answer_key(task, tokens, target, cfg)


def attention_by_distance(model: Reader, tokens: Tensor, rotation: Rotation) -> Tensor:
    """Mean attention weight per head and distance i - j over the positions the model reads:
    (H, T). tokens (n, T); entry [h, d] averages head h's weight on the key d back."""
    with torch.no_grad():
        _, weights = model(tokens, [rotation])  # (1, n, H, Q, T)
    weights = weights[0].mean(0)  # (H, Q, T)
    H, Q, T = weights.shape
    distance = torch.arange(T - Q, T)[:, None] - torch.arange(T)  # (Q, T)
    profile = torch.zeros(H, T, dtype=weights.dtype)
    profile.index_add_(1, distance.clamp(min=0).flatten(), (weights * (distance >= 0)).flatten(1))
    counts = torch.zeros(T).index_add_(0, distance.clamp(min=0).flatten(),
                                       (distance >= 0).flatten().float())  # fmt: skip
    return profile / counts.clamp(min=1)  # (H, T)


def pair_leads(model: Reader, tokens: Tensor, answer_at: Tensor, rotation: Rotation) -> Tensor:
    """What each pair of dimensions adds to the lead of the answer's key: (H, d_k/2).

    Each score is a sum over pairs, score = sum_l <(R q)_l, (R k)_l> / sqrt(d_k); entry [h, l]
    is pair l's term at the key holding the answer minus its mean over the other keys the
    query may read, averaged over the read positions of tokens (n, T); answer_at (n, Q) as
    :func:`read_at_lengths` finds it. Only plain RoPE and frequency scalings (no ReRoPE).
    """
    attention = model.attention
    with torch.no_grad():
        T = tokens.shape[-1]
        Q = answer_at.shape[-1]
        h = model.norm_in(model.embed(tokens))  # (n, T, D)
        k, _ = attention.project_kv(h)  # (n, H, T, d_k)
        n, H, _, d = k.shape
        q = attention.w_q(h[:, -Q:]).view(n, Q, H, d).transpose(1, 2)  # (n, H, Q, d_k)
        q_pos, k_pos = query_key_positions(Q, T)
        theta = rotation.frequencies(d, T) if hasattr(rotation, "frequencies") else None
        q = apply_rope(q, q_pos, frequencies=theta).unflatten(-1, (d // 2, 2))  # (n, H, Q, d/2, 2)
        k = apply_rope(k, k_pos, frequencies=theta).unflatten(-1, (d // 2, 2))  # (n, H, T, d/2, 2)
        terms = (q[:, :, :, None] * k[:, :, None]).sum(-1) / d**0.5  # (n, H, Q, T, d/2)
        readable = (k_pos <= q_pos[:, None])[None, None, :, :, None]  # (1, 1, Q, T, 1)
        index = answer_at[:, None, :, None, None].expand(n, H, Q, 1, d // 2)
        at_answer = terms.gather(3, index)[:, :, :, 0]  # (n, H, Q, d/2)
        others = (terms * readable).sum(3) - at_answer  # every other readable key
        lead = at_answer - others / (readable.sum(3) - 1)  # (n, H, Q, d/2)
    return lead.mean(dim=(0, 2))  # (H, d/2)

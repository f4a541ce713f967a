"""Chapter Q4's runs over many seeds at once: E tiny encoders stacked into one batched model.

A claim about training holds only if it holds over seeds, and training sixteen tiny
models one after another is mostly Python overhead. :class:`EncoderEnsemble` takes E
:class:`~tutorial_lib.labs.norms.TinyEncoder` members (each built with its own seed) and
stacks every weight along a leading member axis, so that one batched forward and backward
pass serves them all. Member e computes exactly what ``members[e]`` computes (the tests
check outputs, gradients and running statistics), and :func:`train_runs` trains each as
if it were alone. Members may differ in their norm and in its placement.

Dimension letters as in :mod:`tutorial_lib.labs.norms`, plus
    E    ensemble members (independent runs)

Inputs: tokens (E, B, T), one batch per member, and one padding mask (B, T) that all
members share: their sentences have the same lengths and their own tokens, so that every
member's tensors have one shape. Outputs: logits (E, B, T, n_classes).

Introduced in chapter Q4 ("LayerNorm or BatchNorm?").

About 530 lines: every layer of the tiny encoder again, stacked over members; each must
sit next to the next so a reader can compare it with labs/norms.py line by line (and every
entry point checks its input, as the single encoder does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention import causal_mask, scaled_dot_product_attention
from ..norms import BatchNorm, LayerNorm
from ..validate import (
    format_shape,
    require_int,
    require_padding_mask,
    require_real,
    require_tensor,
    require_token_ids,
    to_tensor,
)
from .norms import TinyEncoder

__all__ = ["EncoderEnsemble", "RunsAdam", "train_runs", "init_gradients"]

Runs = list[tuple[int, int, str]]  # consecutive members that share a kind: (start, stop, kind)


def _runs(kinds: Sequence[str]) -> Runs:
    """Split members into runs of consecutive members of the same kind."""
    runs: Runs = []
    for e, kind in enumerate(kinds):
        if runs and runs[-1][2] == kind:
            runs[-1] = (runs[-1][0], e + 1, kind)
        else:
            runs.append((e, e + 1, kind))
    return runs


def _by_kind(runs: Runs, fn: Callable[[str, int, int], Tensor]) -> Tensor:
    """fn(kind, start, stop) for every run of members, joined along the member axis."""
    parts = [fn(kind, start, stop) for start, stop, kind in runs]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _rows(t: Tensor, start: int, stop: int) -> Tensor:
    """t[start:stop], without a slicing operation when that is all of t (one op less, twice)."""
    return t if start == 0 and stop == t.shape[0] else t[start:stop]


def _stack(tensors: Iterable[Tensor], transpose: bool = False) -> Tensor:
    return torch.stack([t.detach().T if transpose else t.detach() for t in tensors]).clone()


class _Linear(nn.Module):
    """E Linears: weight (E, D_in, D_out), bias (E, D_out); x (E, ..., D_in) -> (E, ..., D_out)."""

    def __init__(self, linears: Sequence[nn.Linear]):
        super().__init__()
        self.weight = nn.Parameter(_stack([m.weight for m in linears], transpose=True))
        self.bias = nn.Parameter(_stack([m.bias for m in linears]))

    def forward(self, x: Tensor) -> Tensor:
        E, d_in = x.shape[0], x.shape[-1]
        out = torch.baddbmm(self.bias[:, None, :], x.reshape(E, -1, d_in), self.weight)
        return out.view(*x.shape[:-1], -1)  # (E, ..., D_out)


class _Norm(nn.Module):
    """One norm of E members: LayerNorm, BatchNorm, masked BatchNorm, or none (identity).

    Keeps every member's learned scale and shift (E, D) and running statistics (E, D),
    updated as :class:`tutorial_lib.norms.BatchNorm` updates its own.
    """

    def __init__(self, norms: Sequence[nn.Module | None], kinds: Sequence[str], d_model: int):
        super().__init__()
        for n in norms:
            if n is not None and not isinstance(n, (LayerNorm, BatchNorm)):
                raise ValueError(
                    "an ensemble takes LayerNorm and BatchNorm (members built with norm="
                    f"'layer', 'batch' or 'batch_masked'); got {type(n).__name__}"
                )
        self.runs = _runs(
            [k if n is not None else "none" for n, k in zip(norms, kinds, strict=True)]
        )
        self.eps = next((n.eps for n in norms if n is not None), 1e-5)
        self.momentum = next((n.momentum for n in norms if isinstance(n, BatchNorm)), 0.1)
        dtype = next((n.weight.dtype for n in norms if n is not None), torch.float32)
        ones, zeros = torch.ones(d_model, dtype=dtype), torch.zeros(d_model, dtype=dtype)
        self.weight = nn.Parameter(_stack([ones if n is None else n.weight for n in norms]))
        self.bias = nn.Parameter(_stack([zeros if n is None else n.bias for n in norms]))
        batch = [n if isinstance(n, BatchNorm) else None for n in norms]
        self.register_buffer(
            "running_mean", _stack([zeros if n is None else n.running_mean for n in batch])
        )
        self.register_buffer(
            "running_var", _stack([ones if n is None else n.running_var for n in batch])
        )
        count = [torch.tensor(0) if n is None else n.num_batches_tracked for n in batch]
        self.register_buffer("num_batches_tracked", _stack(count))

    def forward(self, x: Tensor, mask: Tensor | None, start: int, stop: int) -> Tensor:
        """x (E', B, T, D) of members start..stop-1, mask bool (B, T) or None -> same shape."""
        runs = [(max(a, start), min(b, stop), k) for a, b, k in self.runs if a < stop and b > start]
        return _by_kind(
            runs, lambda kind, a, b: self._one(kind, _rows(x, a - start, b - start), mask, a, b)
        )

    def _one(self, kind: str, x: Tensor, mask: Tensor | None, a: int, b: int) -> Tensor:
        if kind == "none":
            return x
        weight, bias = _rows(self.weight, a, b), _rows(self.bias, a, b)  # (E', D)
        weight, bias = weight[:, None, None, :], bias[:, None, None, :]
        if kind == "layer":
            return F.layer_norm(x, x.shape[-1:], eps=self.eps) * weight + bias  # per token
        mask = mask if kind == "batch_masked" else None
        mean, var = self._statistics(x, mask, a, b)  # (E', 1, 1, D) each
        if mask is None:
            return (x - mean) / torch.sqrt(var + self.eps) * weight + bias
        # As BatchNorm does: padded entries are zeroed before the real tokens' formula, and
        # padded outputs come from detached statistics and parameters, so padding never
        # reaches a real token's gradient.
        keep = mask[None, :, :, None]  # (1, B, T, 1)
        real = (torch.where(keep, x, 0.0) - mean) / torch.sqrt(var + self.eps) * weight + bias
        padded = (x - mean.detach()) / torch.sqrt(var.detach() + self.eps)
        return torch.where(keep, real, padded * weight.detach() + bias.detach())

    def _statistics(self, x: Tensor, mask: Tensor | None, a: int, b: int) -> tuple[Tensor, Tensor]:
        """Per-member mean and biased variance, (E', 1, 1, D); running estimates when evaluating."""
        if not self.training:
            mean, var = _rows(self.running_mean, a, b), _rows(self.running_var, a, b)  # (E', D)
            return mean[:, None, None], var[:, None, None]
        if mask is None:
            n = x.shape[1] * x.shape[2]
            mean = x.mean(dim=(1, 2))  # (E', D): over every position of each member's batch
            var = x.var(dim=(1, 2), unbiased=False)
        else:
            n = int(mask.sum())
            keep = mask[None, :, :, None]  # (1, B, T, 1)
            real = torch.where(keep, x, 0.0)
            mean = real.sum(dim=(1, 2)) / n  # (E', D): over the real tokens only
            var = torch.where(keep, (real - mean[:, None, None]) ** 2, 0.0).sum(dim=(1, 2)) / n
        if n < 2:  # as BatchNorm refuses: the running variance would be 0 / 0
            raise ValueError(
                "BatchNorm needs more than one (real) token per feature when training, to "
                f"estimate a variance; got tokens (B, T) = {format_shape(x.shape[1:3])} with "
                f"{n} real token(s)"
            )
        with torch.no_grad():
            _rows(self.num_batches_tracked, a, b).add_(1)
            _rows(self.running_mean, a, b).lerp_(mean, self.momentum)
            _rows(self.running_var, a, b).lerp_(var * n / (n - 1), self.momentum)
        return mean[:, None, None], var[:, None, None]


class _Block(nn.Module):
    """One encoder layer of E members; each member keeps its own norm and placement."""

    def __init__(self, blocks: Sequence[nn.Module]):
        super().__init__()
        first = blocks[0]
        self.n_head, self.d_k = first.attention.n_head, first.attention.d_k
        self.causal = first.attention.causal
        self.placements = _runs([b.placement for b in blocks])
        kinds = [b.norm_kind for b in blocks]
        self.w_q = _Linear([b.attention.w_q for b in blocks])
        self.w_k = _Linear([b.attention.w_k for b in blocks])
        self.w_v = _Linear([b.attention.w_v for b in blocks])
        self.w_o = _Linear([b.attention.w_o for b in blocks])
        self.w_1 = _Linear([b.ffn.w_1 for b in blocks])
        self.w_2 = _Linear([b.ffn.w_2 for b in blocks])
        self.norm_1 = _Norm([b.norm_1 for b in blocks], kinds, first.d_model)
        self.norm_2 = _Norm([b.norm_2 for b in blocks], kinds, first.d_model)

    def attention(self, x: Tensor, mask: Tensor | None) -> Tensor:
        E, B, T, D = x.shape
        H, d_k = self.n_head, self.d_k
        q = self.w_q(x).view(E, B, T, H, d_k).transpose(2, 3)  # (E, B, H, T, d_k)
        k = self.w_k(x).view(E, B, T, H, d_k).transpose(2, 3)  # (E, B, H, T, d_k)
        v = self.w_v(x).view(E, B, T, H, d_k).transpose(2, 3)  # (E, B, H, T, d_k)
        key_mask = None if mask is None else mask[None, :, None, None, :]  # (1, B, 1, 1, T_k)
        if self.causal:
            # (1, 1, 1, T_q, T_k), True = j <= i: the scores' rank, as in SelfAttention.
            future = causal_mask(T, device=x.device)[None, None, None]
            key_mask = future if key_mask is None else key_mask & future
        out, _ = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (E, B, H, T, d_k)
        return self.w_o(out.transpose(2, 3).reshape(E, B, T, D))  # (E, B, T, D)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """x (E, B, T, D), mask bool (B, T) or None -> (E, B, T, D)."""

        def sublayer(norm: _Norm, fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
            # post: Norm(x + F(x)); pre: x + F(Norm(x)), each member by its own placement.
            inputs = _by_kind(
                self.placements,
                lambda p, a, b: _rows(x, a, b) if p == "post" else norm(_rows(x, a, b), mask, a, b),
            )
            out = x + fn(inputs)
            return _by_kind(
                self.placements,
                lambda p, a, b: (
                    norm(_rows(out, a, b), mask, a, b) if p == "post" else _rows(out, a, b)
                ),
            )

        x = sublayer(self.norm_1, lambda h: self.attention(h, mask), x)
        return sublayer(self.norm_2, lambda h: self.w_2(torch.relu(self.w_1(h))), x)


class EncoderEnsemble(nn.Module):
    """E :class:`TinyEncoder` members as one batched model (see the module docstring).

    ``forward(tokens, mask=None)``: tokens long (E, B, T), or (B, T) shared by every
    member; mask bool (B, T) True = real token -> logits (E, B, T, n_classes).
    """

    def __init__(self, members: Sequence[TinyEncoder]):
        super().__init__()
        if isinstance(members, nn.Module) or not isinstance(members, Sequence) or not members:
            found = repr(members) if isinstance(members, (list, tuple)) else type(members).__name__
            raise ValueError(
                "an ensemble needs at least one member: members must be a non-empty list of "
                f"TinyEncoders; got {found}"
            )
        for m in members:
            if not isinstance(m, TinyEncoder):
                raise TypeError(f"members must be TinyEncoders; got {type(m).__name__}")
        self.config = _sizes(members[0])
        for m in members:
            if _sizes(m) != self.config:
                raise ValueError(
                    f"members must all have the same sizes; got {_sizes(m)} and {self.config}"
                )
        self.norm_kinds = tuple(m.norm_kind for m in members)
        self.placements = tuple(m.layers[0].placement for m in members)
        self.embed = nn.Parameter(_stack([m.embed.weight for m in members]))  # (E, vocab, D)
        self.register_buffer("positions", members[0].positions.clone())
        self.layers = nn.ModuleList(
            _Block([m.layers[i] for m in members]) for i in range(self.config["n_layers"])
        )
        finals = [m.final_norm for m in members]  # None for Post-LN members
        self.final_norm = _Norm(finals, self.norm_kinds, self.config["d_model"])
        self.head = _Linear([m.head for m in members])

    @property
    def n_members(self) -> int:
        return self.embed.shape[0]

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        """tokens long (E, B, T) or (B, T), mask bool (B, T) or None -> (E, B, T, n_classes)."""
        E, vocab = self.n_members, self.config["vocab"]
        require_tensor(
            "tokens", tokens, "integer", f"(E, B, T) or (B, T) of token ids 0..{vocab - 1}"
        )
        if tokens.dim() == 2:
            tokens = tokens.expand(E, *tokens.shape)  # one batch for every member
        if tokens.dim() != 3 or tokens.shape[0] != E:
            raise ValueError(
                f"tokens must be (E, B, T) with E = {E}, or (B, T); got {tuple(tokens.shape)}"
            )
        require_token_ids("tokens", tokens.flatten(0, 1), vocab)  # a negative id would wrap
        require_padding_mask(mask, tokens[0, :, :, None], "EncoderEnsemble")
        T = tokens.shape[-1]
        member = torch.arange(E)[:, None, None]  # (E, 1, 1)
        # Token 0 is padding: it embeds to zeros and its row never learns (padding_idx=0).
        x = torch.where(tokens[..., None] == 0, 0.0, self.embed[member, tokens])  # (E, B, T, D)
        if self.config["positions"]:
            if T > self.config["max_len"]:
                raise ValueError(f"T = {T} is longer than max_len = {self.config['max_len']}")
            x = x + self.positions[:T]  # (E, B, T, D)
        for layer in self.layers:
            x = layer(x, mask)
        x = self.final_norm(x, mask, 0, E)
        return self.head(x)  # (E, B, T, n_classes)

    def ffn_gradient_norms(self) -> Tensor:
        """(E, n_layers): each member's ||dL/dW_2|| in every layer, bottom layer first."""
        grads = [layer.w_2.weight.grad for layer in self.layers]
        if any(g is None for g in grads):
            raise ValueError("no gradient yet: call loss.backward() first")
        return torch.stack([g.flatten(1).norm(dim=1) for g in grads], dim=1)

    def member(self, e: int) -> TinyEncoder:
        """A TinyEncoder that computes what member ``e`` computes (a copy of its weights)."""
        e = require_int("e", e, minimum=0, why="(a member's index)")
        if e >= self.n_members:
            raise ValueError(
                f"e must pick one of the E = {self.n_members} members (0..{self.n_members - 1}); "
                f"got e = {e}"
            )
        c = self.config
        with torch.random.fork_rng():  # building the copy draws weights we overwrite
            model = TinyEncoder(
                c["vocab"],
                c["n_classes"],
                d_model=c["d_model"],
                n_head=c["n_head"],
                d_ff=c["d_ff"],
                n_layers=c["n_layers"],
                norm=self.norm_kinds[e],
                placement=self.placements[e],
                max_len=c["max_len"],
                positions=c["positions"],
                causal=c["causal"],
            )
        model.to(self.embed.dtype)
        with torch.no_grad():
            model.embed.weight.copy_(self.embed[e])
            for ours, theirs in zip(self.layers, model.layers, strict=True):
                for name in ("w_q", "w_k", "w_v", "w_o"):
                    _copy_linear(getattr(ours, name), getattr(theirs.attention, name), e)
                _copy_linear(ours.w_1, theirs.ffn.w_1, e)
                _copy_linear(ours.w_2, theirs.ffn.w_2, e)
                _copy_norm(ours.norm_1, theirs.norm_1, e)
                _copy_norm(ours.norm_2, theirs.norm_2, e)
            if model.final_norm is not None:
                _copy_norm(self.final_norm, model.final_norm, e)
            _copy_linear(self.head, model.head, e)
        return model.train(self.training)


def _sizes(m: TinyEncoder) -> dict:
    block = m.layers[0]
    return dict(
        vocab=m.embed.num_embeddings,
        n_classes=m.head.out_features,
        d_model=block.d_model,
        n_head=block.attention.n_head,
        d_ff=block.ffn.w_1.out_features,
        n_layers=len(m.layers),
        max_len=m.max_len,
        positions=m.use_positions,
        causal=block.attention.causal,
    )


def _copy_linear(ours: _Linear, theirs: nn.Linear, e: int) -> None:
    theirs.weight.copy_(ours.weight[e].T)
    theirs.bias.copy_(ours.bias[e])


def _copy_norm(ours: _Norm, theirs: nn.Module, e: int) -> None:
    theirs.weight.copy_(ours.weight[e])
    theirs.bias.copy_(ours.bias[e])
    if isinstance(theirs, BatchNorm):
        theirs.running_mean.copy_(ours.running_mean[e])
        theirs.running_var.copy_(ours.running_var[e])
        theirs.num_batches_tracked.copy_(ours.num_batches_tracked[e])


class RunsAdam:
    """Adam for E runs whose parameters all have a leading run axis, one rate per run.

    The update is torch.optim.Adam's (no weight decay), applied to all parameters at once:
    their gradients are joined into one (E, N) matrix, so a step costs a handful of tensor
    operations instead of a dozen per parameter, which with tiny models is most of the time.
    ``step(lr)`` takes the rate of each run, shape (E,).
    """

    def __init__(self, params: Iterable[Tensor], betas=(0.9, 0.999), eps: float = 1e-8):
        if isinstance(params, Tensor) or not isinstance(params, Iterable):
            raise TypeError(f"params must be an iterable of tensors; got {type(params).__name__}")
        self.params = list(params)
        if not self.params:
            raise ValueError("params must hold at least one tensor (E, ...); got none")
        for p in self.params:
            require_tensor("params", p, "float", "(E, ...) with a leading run axis E")
            if p.dim() == 0 or p.shape[0] != self.params[0].shape[0]:
                raise ValueError(
                    "params must share a leading run axis E: every one (E, ...); got shapes "
                    f"{format_shape(self.params[0])} and {format_shape(p)}"
                )
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta_1, beta_2); got {betas!r:.60}")
        betas = tuple(require_real("betas", b, minimum=0) for b in betas)
        if max(betas) >= 1:
            raise ValueError(f"betas must each be in [0, 1) (Adam's averaging rates); got {betas}")
        eps = require_real("eps", eps, above=0)
        self.E = self.params[0].shape[0]
        self.sizes = [p[0].numel() for p in self.params]  # numbers per run in each parameter
        first = self.params[0]
        self.exp_avg = first.new_zeros(self.E, sum(self.sizes))  # (E, N)
        self.exp_avg_sq = first.new_zeros(self.E, sum(self.sizes))  # (E, N)
        self.betas, self.eps, self.steps = betas, eps, 0

    @torch.no_grad()
    def step(self, lr: Tensor) -> None:
        """One Adam update of every run; ``lr`` (E,) holds each run's rate (> 0)."""
        require_tensor("lr", lr, "real", f"(E,) with E = {self.E}: one rate per run")
        if tuple(lr.shape) != (self.E,):
            raise ValueError(
                f"lr must hold one rate per run, shape (E,) = ({self.E},); got lr of shape "
                f"{format_shape(lr)}"
            )
        if not bool((lr > 0).all()) or not bool(lr.isfinite().all()):  # NaN fails both
            raise ValueError(f"lr must hold finite rates > 0; got lr = {lr.tolist()}")
        beta1, beta2 = self.betas
        grad = torch.cat(  # (E, N); a parameter no loss reached has gradient 0
            [
                (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(self.E, -1)
                for p in self.params
            ],
            dim=1,
        )
        self.steps += 1
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**self.steps
        bias_correction2 = 1 - beta2**self.steps
        denom = (self.exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(self.eps)
        update = self.exp_avg / denom * (lr[:, None] / bias_correction1)  # (E, N)
        for p, u in zip(self.params, update.split(self.sizes, dim=1), strict=True):
            p.sub_(u.view_as(p))


def train_runs(
    ensemble: EncoderEnsemble,
    batches: Iterable[Any],
    loss_fn: Callable[[EncoderEnsemble, Any], Tensor],
    *,
    lr: float,
    warmup: Sequence[int] | Tensor | None = None,
) -> Tensor:
    """Train every member with Adam, one step per batch; returns the losses, (steps, E).

    ``loss_fn(ensemble, batch)`` returns each member's loss, shape (E,). Their sum is
    differentiated, so each member's weights get the gradient of its own loss only, and
    Adam, which updates every number on its own, moves each member as if it trained
    alone: :func:`tutorial_lib.training.fit` for E runs at once (the tests check it step
    by step), and one loss per step each, measured on the batch before the step learns
    from it. ``warmup`` gives each member its own linear warm-up in steps (0 = none), as
    ``fit(warmup=...)`` does for one model: step k (from 0) takes
    ``lr * min(1, (k + 1) / warmup)``. The ensemble is left in eval mode.
    """
    if not isinstance(ensemble, EncoderEnsemble):
        raise TypeError(f"ensemble must be an EncoderEnsemble; got {type(ensemble).__name__}")
    E = ensemble.n_members
    if not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of batches; got {type(batches).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable; got {type(loss_fn).__name__}")
    lr = require_real("lr", lr, above=0)
    ramp = torch.zeros(E)
    if warmup is not None:
        ramp = to_tensor("warmup", warmup, "real", "(E,) step counts").to(torch.float64)
        whole = ramp.isfinite() & (ramp >= 0) & (ramp == ramp.round())  # NaN fails it
        if ramp.shape != (E,) or not bool(whole.all()):
            raise ValueError(
                f"warmup must give E = {E} whole step counts >= 0; got {ramp.tolist()}"
            )
    optimiser = RunsAdam(ensemble.parameters())
    losses = []
    for step, batch in enumerate(batches):
        ensemble.train()
        per_member = loss_fn(ensemble, batch)  # (E,)
        if not isinstance(per_member, Tensor):
            raise TypeError(
                f"loss_fn must return one loss per member, a tensor of shape (E,) = ({E},); "
                f"got {per_member!r:.60}"
            )
        if per_member.shape != (E,):
            raise ValueError(
                f"loss_fn must return one loss per member, shape (E,) = ({E},); "
                f"got shape {format_shape(per_member)}"
            )
        ensemble.zero_grad(set_to_none=True)
        per_member.sum().backward()
        ramp_factor = torch.where(ramp > 0, ((step + 1) / ramp.clamp(min=1)).clamp(max=1.0), 1.0)
        optimiser.step((lr * ramp_factor).to(optimiser.exp_avg.dtype))
        losses.append(per_member.detach())
    ensemble.eval()
    if not losses:  # no batches: no steps
        return torch.zeros(0, E)
    return torch.stack(losses)  # (steps, E)


def init_gradients(
    ensemble: EncoderEnsemble, tokens: Tensor, target: Tensor
) -> tuple[Tensor, Tensor]:
    """One backward pass: (E, n_layers) ||dL/dW_2|| per layer, and (E,) the stream's RMS.

    L is each member's mean cross-entropy of ``tokens`` (E, B, T) against ``target``
    (E, B, T). The second result is the root mean square of the residual stream leaving
    the last layer: what a Pre-LN stack's final norm divides by (about 1 after Post-LN).
    """
    if not isinstance(ensemble, EncoderEnsemble):
        raise TypeError(f"ensemble must be an EncoderEnsemble; got {type(ensemble).__name__}")
    E, C = ensemble.n_members, ensemble.config["n_classes"]
    require_tensor(
        "target", target, "integer", f"(E, B, T) of class ids 0..n_classes-1 = 0..{C - 1}"
    )
    stream = {}
    hook = ensemble.final_norm.register_forward_pre_hook(
        lambda module, args: stream.update(x=args[0].detach())
    )
    try:
        logits = ensemble(tokens)  # (E, B, T, C)
    finally:
        hook.remove()
    if target.shape != logits.shape[:3]:
        raise ValueError(
            f"target must be (E, B, T) = {format_shape(logits.shape[:3])} like tokens, one class "
            f"id per token; got target of shape {format_shape(target)}"
        )
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= C):
        raise ValueError(
            f"target must hold class ids 0..n_classes-1 = 0..{C - 1}; got ids "
            f"{int(target.min())}..{int(target.max())}"
        )
    per_token = F.cross_entropy(logits.flatten(0, 2), target.flatten(), reduction="none")
    ensemble.zero_grad(set_to_none=True)
    per_token.view(E, -1).mean(dim=1).sum().backward()
    return ensemble.ffn_gradient_norms(), stream["x"].pow(2).mean(dim=(1, 2, 3)).sqrt()

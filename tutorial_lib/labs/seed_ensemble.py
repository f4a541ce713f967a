"""Train several copies of small models side by side, as one batched model: the book's one
ensemble engine, trained by :func:`tutorial_lib.training.fit` like any model.

A claim about training is a claim about many seeds, and for the book's tiny models a
Python loop over seeds spends most of its time on per-operation overhead. Stacking the
members' weights on a leading axis and running them with ``torch.func.vmap`` turns E small
matrix products into one batched product: eight seeds train for the price of two or three.

Members may differ in architecture (one head or two, LayerNorm or BatchNorm): members with
the same modules, settings and parameter shapes form a group, stacked and run together; the
groups run one after the other and their outputs are joined in member order.

Exactness: :func:`tutorial_lib.training.fit` minimises the *sum* of the members' losses
with Adam. The gradient of that sum with respect to member e's weights is member e's own
gradient, and Adam updates every number from its own gradient alone, so each member
follows the path it would follow if trained alone (to float rounding: a batched product
may round differently from a single one). A member that is done can leave
(:meth:`Ensemble.retire`): the others go on exactly as before, and the batch gets smaller.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable

import torch
from torch import Tensor, nn
from torch.func import stack_module_state, vmap

from ..validate import format_shape

__all__ = ["Ensemble"]


class _Group(nn.Module):
    """Members of one architecture: every parameter and buffer stacked, one row per member."""

    def __init__(self, models: list[nn.Module], members: list[int]):
        super().__init__()
        params, buffers = stack_module_state(models)  # name -> (rows, ...)
        self.members = members  # the member held in each row
        self.param_names, self.buffer_names = list(params), list(buffers)
        self.stacked = nn.ParameterList(nn.Parameter(p) for p in params.values())
        for i, b in enumerate(buffers.values()):
            self.register_buffer(f"buffer_{i}", b, persistent=False)
        # A weightless copy holds the structure that the stacked weights are poured into; in a
        # list so that it is not registered as a submodule (its parameters are not ours).
        self._skeleton = [copy.deepcopy(models[0]).to("meta").train(self.training)]
        # Where each stacked tensor goes in it: (the module's dict of parameters or buffers, name).
        self._slots = [_slot(self._skeleton[0], n, "_parameters") for n in self.param_names]
        self._slots += [_slot(self._skeleton[0], n, "_buffers") for n in self.buffer_names]

    def train(self, mode: bool = True) -> _Group:
        super().train(mode)
        self._skeleton[0].train(mode)  # not a submodule: told by hand (dropout, BatchNorm)
        return self

    def buffers_stacked(self) -> tuple[Tensor, ...]:
        return tuple(getattr(self, f"buffer_{i}") for i in range(len(self.buffer_names)))

    def run(self, fn, rows, inputs, shared, chunk_size, randomness):
        """fn(model, *member_inputs, *shared) for these rows, stacked on axis 0."""
        skeleton, slots = self._skeleton[0], self._slots

        def member(params, buffers, *args):
            # Member e's tensors into the skeleton for the call (functional_call's job, done
            # here by plain dict assignments: its bookkeeping cost more than a small forward).
            saved = [where[name] for where, name in slots]
            for (where, name), tensor in zip(slots, params + buffers, strict=True):
                where[name] = tensor
            try:
                return fn(skeleton, *args)
            finally:
                for (where, name), tensor in zip(slots, saved, strict=True):
                    where[name] = tensor

        # Shared inputs (in_dims None) reach fn unbatched, as they are.
        in_dims = (0, 0) + (0,) * len(inputs) + (None,) * len(shared)
        run = vmap(member, in_dims=in_dims, randomness=randomness, chunk_size=chunk_size)
        params, buffers = tuple(self.stacked), self.buffers_stacked()
        if len(rows) < len(self.members):
            index = torch.tensor(rows)
            params, buffers = tuple(p[index] for p in params), tuple(b[index] for b in buffers)
        return run(params, buffers, *inputs, *shared)

    def row_state(self, row: int) -> dict[str, Tensor]:
        """A copy of one row's parameters and buffers, by the members' own names."""
        names = self.param_names + self.buffer_names
        tensors = [*self.stacked, *self.buffers_stacked()]
        return {n: t[row].detach().clone() for n, t in zip(names, tensors, strict=True)}

    @torch.no_grad()
    def keep(self, rows: list[int], optimiser: torch.optim.Optimizer | None) -> None:
        """Keep only these rows; ``optimiser`` goes on with the kept parameters, its state per
        number (Adam's averages) cut to the same rows."""
        index = torch.tensor(rows, dtype=torch.long)
        for i, p in enumerate(self.stacked):
            kept = nn.Parameter(p.detach()[index])
            if optimiser is not None:
                state = optimiser.state.pop(p, {})
                optimiser.state[kept] = {
                    name: value[index] if _per_row(value, p) else value
                    for name, value in state.items()
                }
                for group in optimiser.param_groups:
                    group["params"] = [kept if q is p else q for q in group["params"]]
            self.stacked[i] = kept
        for i, b in enumerate(self.buffers_stacked()):
            setattr(self, f"buffer_{i}", b[index])
        self.members = [self.members[r] for r in rows]


class Ensemble(nn.Module):
    """E models, their parameters and buffers stacked on a leading member axis.

    ``forward(*inputs, shared=())``: every input has a leading axis with one entry per member
    still training (member e reads ``input[e]``); ``shared`` inputs go to every member as they
    are. The output is the members' outputs stacked on axis 0, in member order. Buffers may
    differ between members (a per-member constant such as a scale factor) and keep what the
    members' forward passes write into them (BatchNorm's running statistics).
    ``unstack(models)`` copies the trained weights back into E ordinary modules.
    ``randomness`` is vmap's: "same" (one draw for every member), "different" or "error".
    """

    def __init__(self, models: list[nn.Module], *, randomness: str = "same"):
        super().__init__()
        _check_models(models)
        if not models:
            raise ValueError("an ensemble needs at least one model; got models=[]")
        groups: dict[tuple, list[int]] = {}
        for e, model in enumerate(models):
            groups.setdefault(_architecture(model), []).append(e)
        self.groups = nn.ModuleList(
            _Group([models[e] for e in members], members) for members in groups.values()
        )
        self.n_members, self.randomness = len(models), randomness
        self._finished: dict[int, dict[str, Tensor]] = {}  # member -> its state when it left

    @property
    def active(self) -> list[int]:
        """The members still training, in the order the inputs hold them."""
        return sorted(e for group in self.groups for e in group.members)

    @property
    def size(self) -> int:
        """The number of members still training, the length of the inputs' leading axis."""
        return sum(len(group.members) for group in self.groups)

    @property
    def param_names(self) -> list[str]:
        return self._one_group().param_names

    @property
    def stacked(self) -> nn.ParameterList:
        return self._one_group().stacked

    def _one_group(self) -> _Group:
        if len(self.groups) != 1:
            raise ValueError(f"the members have {len(self.groups)} architectures, not one")
        return self.groups[0]

    def forward(self, *inputs: Tensor, shared: tuple = ()) -> Tensor:
        """Every member's forward pass on its own slice of the inputs, stacked on axis 0."""
        return self.map(lambda model, *x: model(*x), *inputs, shared=shared)

    def map(self, fn: Callable, *inputs: Tensor, shared=(), members=None, chunk_size=None):
        """``fn(model, *member_inputs, *shared)`` for every member, outputs stacked on axis 0.

        ``model`` is the member's architecture holding member e's weights; ``fn`` may return
        a tensor or a tuple of tensors, of one shape for every member. ``members`` runs only
        those (still training; the inputs then hold one entry for each, in that order).
        ``chunk_size`` runs that many members at a time, to bound memory.
        """
        chosen = self.active if members is None else list(members)
        for x in inputs:
            if not isinstance(x, Tensor) or x.dim() == 0 or x.shape[0] != len(chosen):
                found = format_shape(x) if isinstance(x, Tensor) else type(x).__name__
                raise ValueError(
                    f"every input needs a leading axis of E = {len(chosen)} members; got {found}"
                )
        position = {e: i for i, e in enumerate(chosen)}
        outputs, order = [], []
        for group in self.groups:
            rows = [r for r, e in enumerate(group.members) if e in position]
            if rows:
                at = [position[group.members[r]] for r in rows]
                whole = at == list(range(len(chosen)))
                part = [x if whole else x[torch.tensor(at)] for x in inputs]
                run = group.run(fn, rows, part, tuple(shared), chunk_size, self.randomness)
                outputs.append(run)
                order += at
        if len(outputs) == 1 and order == sorted(order):  # one group, in order: nothing to join
            return outputs[0]
        back = torch.tensor(order).argsort()  # from group order back to member order
        if isinstance(outputs[0], tuple):
            return tuple(_join([out[i] for out in outputs], back) for i in range(len(outputs[0])))
        return _join(outputs, back)

    def retire(self, members: Iterable[int], optimiser: torch.optim.Optimizer | None = None):
        """Members (their indices among all E) stop training: their weights are kept as they
        are now (for :meth:`member_state` and :meth:`unstack`) and they leave the batch, with
        their rows of ``optimiser``'s state. Returns how many members are still training."""
        done = set(members)
        for group in self.groups:
            for row, e in enumerate(group.members):
                if e in done:
                    self._finished[e] = group.row_state(row)
            group.keep([r for r, e in enumerate(group.members) if e not in done], optimiser)
        return self.size

    @torch.no_grad()
    def scale_update(self, before: list[Tensor], factors: dict[int, float]) -> None:
        """Cut member e's last step to ``factors[e]`` of it, p = before + f (p - before): a rate
        of its own (``before``: the parameters before the step, in ``parameters()`` order)."""
        previous = iter(before)
        for group in self.groups:
            f = torch.tensor([factors[e] for e in group.members])
            for p in group.stacked:
                p.copy_(next(previous).lerp(p, f.view(-1, *[1] * (p.dim() - 1)).to(p.dtype)))

    def member_state(self, e: int) -> dict[str, Tensor]:
        """A copy of member e's parameters and buffers, by its own names."""
        if e in self._finished:
            return {name: t.clone() for name, t in self._finished[e].items()}
        for group in self.groups:
            if e in group.members:
                return group.row_state(group.members.index(e))
        raise ValueError(f"e must be a member's index, 0..{self.n_members - 1}; got e = {e}")

    def unstack(self, models: list[nn.Module]) -> list[nn.Module]:
        """Copy member e's parameters and buffers into ``models[e]`` (its architecture);
        returns the models, in eval mode."""
        _check_models(models)
        if len(models) != self.n_members:
            raise ValueError(f"expected {self.n_members} models to fill; got {len(models)}")
        with torch.no_grad():
            for e, model in enumerate(models):
                owned = dict(model.named_parameters()) | dict(model.named_buffers())
                state = self.member_state(e)
                wanted = {n: tuple(t.shape) for n, t in state.items()}
                found = {n: tuple(owned[n].shape) for n in wanted if n in owned}
                if found != wanted:
                    raise ValueError(
                        f"models[{e}] must have member {e}'s parameters and buffers {wanted}; "
                        f"got {found}"
                    )
                for name, value in state.items():
                    owned[name].copy_(value)
                model.eval()
        return models


def _slot(model: nn.Module, name: str, kind: str) -> tuple[dict, str]:
    path, _, attr = name.rpartition(".")
    return getattr(model.get_submodule(path), kind), attr


def _per_row(value: object, p: Tensor) -> bool:
    return isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == p.shape[0]


def _join(parts: list[Tensor], back: Tensor) -> Tensor:
    shapes = {tuple(p.shape[1:]) for p in parts}
    if len(shapes) > 1:
        raise ValueError(
            f"members of different architectures returned different shapes {sorted(shapes)}: "
            "return only what every member shares (map with a function picking it)"
        )
    return torch.cat(parts)[back]


def _architecture(model: nn.Module) -> tuple:
    """What must agree for members to share one vmap: every submodule's type and settings (its
    plain attributes: sizes, flags, configs) and every parameter's and buffer's shape."""
    plain = (int, float, str, bool, type(None), tuple)
    parts = []
    for name, module in model.named_modules():
        settings = sorted(
            (key, value)
            for key, value in vars(module).items()
            if not key.startswith("_")
            and key != "training"
            and (isinstance(value, plain) or dataclasses.is_dataclass(value))
        )
        parts.append((name, type(module).__qualname__, repr(settings)))
    for kind in (model.named_parameters(), model.named_buffers()):
        parts += [(n, tuple(t.shape), str(t.dtype)) for n, t in kind]
    return tuple(parts)


def _check_models(models: object) -> None:
    """Raise unless ``models`` is a list (or tuple) of modules."""
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, nn.Module) for m in models):
        raise TypeError(f"models must be a list of nn.Modules; got {models!r:.80}")

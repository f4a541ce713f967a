"""Train several copies of one small model side by side, as one batched model.

A claim about training is a claim about many seeds, and for the book's tiny models a
Python loop over seeds spends most of its time on per-operation overhead. Stacking the
members' weights on a leading axis E and running them with ``torch.func.vmap`` turns E
small matrix products into one batched product: the labs of chapters Q3a and Q3b train
8 seeds for the price of 2 or 3.

Exactness: :func:`tutorial_lib.training.fit` minimises the *sum* of the members' losses
with Adam. The gradient of that sum with respect to member e's weights is member e's own
gradient, and Adam updates every number from its own gradient alone, so each member
follows the path it would follow if trained alone (to float rounding: a batched product
may round differently from a single one).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from ..validate import format_shape, require_int, require_tensor

__all__ = ["Ensemble"]


class _Call(nn.Module):
    """``fn(model, *inputs)`` as a module, so that ``functional_call`` can swap the weights."""

    def __init__(self, model: nn.Module, fn: Callable):
        super().__init__()
        self.model, self.fn = model, fn

    def forward(self, *inputs):
        return self.fn(self.model, *inputs)


class Ensemble(nn.Module):
    """E models of one architecture, their parameters and buffers stacked on axis 0.

    ``forward(*inputs)``: every input has a leading axis E (member e reads ``input[e]``);
    the output is the members' outputs stacked on axis 0. Buffers may differ between
    members (a per-member constant such as a scale factor); they are not trained.
    ``unstack(models)`` copies the trained weights back into E ordinary modules.
    """

    def __init__(self, models: list[nn.Module]):
        super().__init__()
        _check_models(models)
        if not models:
            raise ValueError("an ensemble needs at least one model; got models=[]")
        for kind in ("parameter", "buffer"):
            layouts = [_layout(m, kind) for m in models]
            if any(layout != layouts[0] for layout in layouts[1:]):
                raise ValueError(
                    f"every member of models must have the same {kind} names and shapes (and "
                    f"dtypes); got {layouts[0]} and {next(x for x in layouts if x != layouts[0])}"
                )
        params, buffers = stack_module_state(models)  # name -> (E, ...)
        self.size = len(models)
        self.param_names = list(params)
        self.stacked = nn.ParameterList(nn.Parameter(params[name]) for name in self.param_names)
        self.buffer_names = list(buffers)
        for i, name in enumerate(self.buffer_names):
            self.register_buffer(f"buffer_{i}", buffers[name], persistent=False)
        # A weightless copy holds the structure that the stacked weights are poured into; in a
        # list so that it is not registered as a submodule (its parameters are not ours).
        self._skeleton = [copy.deepcopy(models[0]).to("meta")]

    def forward(self, *inputs: Tensor) -> Tensor:
        """Every member's forward pass on its own slice of the inputs, stacked on axis 0."""
        return self.map(lambda model, *x: model(*x), *inputs)

    def map(self, fn: Callable, *inputs: Tensor, chunk_size: int | None = None):
        """``fn(model, *member_inputs)`` for every member, outputs stacked on axis 0.

        ``model`` is the members' architecture holding member e's weights; ``fn`` may return
        a tensor or a tuple of tensors. ``chunk_size`` runs that many members at a time,
        to bound memory when ``fn`` makes large intermediate tensors.
        """
        if not callable(fn):
            raise TypeError(f"fn must be callable, fn(model, *member_inputs); got {fn!r:.60}")
        if chunk_size is not None:
            chunk_size = require_int("chunk_size", chunk_size, why="(members run at a time)")
        for x in inputs:
            require_tensor("inputs", x, None, f"(E, ...) with E = {self.size} members")
            if x.dim() == 0 or x.shape[0] != self.size:
                raise ValueError(
                    f"every input needs a leading axis of E = {self.size} members; "
                    f"got an input of shape {format_shape(x)}"
                )
        buffers = tuple(getattr(self, f"buffer_{i}") for i in range(len(self.buffer_names)))
        call = _Call(self._skeleton[0], fn)

        def member(params, member_buffers, *member_inputs):
            state = {f"model.{n}": p for n, p in zip(self.param_names, params, strict=True)}
            state |= {
                f"model.{n}": b for n, b in zip(self.buffer_names, member_buffers, strict=True)
            }
            return functional_call(call, state, member_inputs)

        # randomness="same": dropout-free models never draw; any draw would be shared.
        return vmap(member, randomness="same", chunk_size=chunk_size)(
            tuple(self.stacked), buffers, *inputs
        )

    def unstack(self, models: list[nn.Module]) -> list[nn.Module]:
        """Copy member e's parameters into ``models[e]`` (same architecture); returns them."""
        _check_models(models)
        if len(models) != self.size:
            raise ValueError(f"expected {self.size} models to fill; got {len(models)}")
        wanted = [
            (n, tuple(p.shape[1:])) for n, p in zip(self.param_names, self.stacked, strict=True)
        ]
        for model in models:
            found = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
            if found != wanted:
                raise ValueError(
                    f"models must have the members' parameter names and shapes {wanted}; "
                    f"got {found}"
                )
        with torch.no_grad():
            for e, model in enumerate(models):
                owned = dict(model.named_parameters())
                for name, stacked in zip(self.param_names, self.stacked, strict=True):
                    owned[name].copy_(stacked[e])
                model.eval()
        return models


def _check_models(models: object) -> None:
    """Raise unless ``models`` is a list (or tuple) of modules."""
    if not isinstance(models, (list, tuple)):
        raise TypeError(f"models must be a list of nn.Modules; got {type(models).__name__}")
    for model in models:
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"models must be a list of nn.Modules; got one of type {type(model).__name__}"
            )


def _layout(model: nn.Module, kind: str) -> list[tuple[str, tuple[int, ...], torch.dtype]]:
    """(name, shape, dtype) of every parameter or buffer, what stacking needs to agree."""
    named = model.named_parameters() if kind == "parameter" else model.named_buffers()
    return [(n, tuple(t.shape), t.dtype) for n, t in named]

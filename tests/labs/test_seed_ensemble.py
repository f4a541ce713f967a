"""Training several seeds as one batched model (tutorial_lib.labs.seed_ensemble)."""

import pytest
import torch
from torch import nn

from tutorial_lib.labs.seed_ensemble import Ensemble
from tutorial_lib.training import fit


class Tiny(nn.Module):
    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("scale", torch.tensor(scale))

    def forward(self, x):
        return self.linear(x) * self.scale


def make(seed, scale=1.0):
    torch.manual_seed(seed)
    return Tiny(scale)


def test_an_ensemble_trains_every_member_as_if_alone():
    data = torch.randn(4, 6, 5, 3, generator=torch.Generator().manual_seed(1))  # (E, steps, B, 3)
    alone = [make(e, scale=1.0 + e) for e in range(4)]
    for e, model in enumerate(alone):
        batches = iter(data[e])
        fit(model, batches, lambda m, x: (m(x) ** 2).mean(), steps=6, lr=0.1)
    members = [make(e, scale=1.0 + e) for e in range(4)]
    ensemble = Ensemble(members)
    batches = (data[:, step] for step in range(6))
    fit(ensemble, batches, lambda m, x: (m(x) ** 2).mean(dim=(1, 2)).sum(), steps=6, lr=0.1)
    ensemble.unstack(members)
    for a, b in zip(alone, members, strict=True):
        torch.testing.assert_close(a.linear.weight, b.linear.weight, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(a.linear.bias, b.linear.bias, atol=1e-6, rtol=1e-5)


def test_map_runs_any_function_of_each_member():
    members = [make(e, scale=2.0) for e in range(3)]
    x = torch.randn(3, 7, 3)
    out = Ensemble(members).map(lambda model, xe: model(xe).sum(), x, chunk_size=2)  # (E,)
    expected = torch.stack([m(xe).sum() for m, xe in zip(members, x, strict=True)])
    torch.testing.assert_close(out, expected)


def test_bad_input_names_what_was_expected():
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])
    with pytest.raises(ValueError, match="same parameter names and shapes"):
        Ensemble([make(0), nn.Linear(3, 3)])
    ensemble = Ensemble([make(0), make(1)])
    with pytest.raises(ValueError, match="E = 2"):
        ensemble(torch.randn(3, 5, 3))
    with pytest.raises(ValueError, match="expected 2 models"):
        ensemble.unstack([make(0)])

"""Training several seeds as one batched model (tutorial_lib.labs.seed_ensemble)."""

import pytest
import torch
from torch import nn

from tutorial_lib.labs.seed_ensemble import Ensemble
from tutorial_lib.norms import BatchNorm
from tutorial_lib.training import fit


class Tiny(nn.Module):
    def __init__(self, scale: float = 1.0, width: int = 2):
        super().__init__()
        self.linear = nn.Linear(3, width)
        self.register_buffer("scale", torch.tensor(scale))

    def forward(self, x):
        return self.linear(x) * self.scale


class Doubled(Tiny):
    """Tiny's parameters and buffers, another computation: a member of another architecture."""

    def forward(self, x):
        return 2 * super().forward(x)


def make(seed, scale=1.0, cls=Tiny):
    torch.manual_seed(seed)
    return cls(scale)


def train_alone(models, data, steps=6):
    for e, model in enumerate(models):
        fit(model, iter(data[e]), lambda m, x: (m(x) ** 2).mean(), steps=steps, lr=0.1)
    return models


def assert_same_weights(a_models, b_models):
    for a, b in zip(a_models, b_models, strict=True):
        for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5, msg=name)


def test_an_ensemble_trains_every_member_as_if_alone():
    data = torch.randn(4, 6, 5, 3, generator=torch.Generator().manual_seed(1))  # (E, steps, B, 3)
    alone = train_alone([make(e, scale=1.0 + e) for e in range(4)], data)
    members = [make(e, scale=1.0 + e) for e in range(4)]
    ensemble = Ensemble(members)
    batches = (data[:, step] for step in range(6))
    fit(ensemble, batches, lambda m, x: (m(x) ** 2).mean(dim=(1, 2)).sum(), steps=6, lr=0.1)
    assert_same_weights(alone, ensemble.unstack(members))


def test_members_of_other_architectures_run_in_their_own_group_in_member_order():
    classes = [Tiny, Doubled, Tiny, Doubled, Doubled]
    members = [make(e, cls=cls) for e, cls in enumerate(classes)]
    ensemble = Ensemble(members)
    assert len(ensemble.groups) == 2
    x = torch.randn(5, 4, 3)
    out = ensemble(x)
    for e, model in enumerate(members):
        torch.testing.assert_close(out[e], model(x[e]))
    with pytest.raises(ValueError, match="2 architectures"):
        ensemble.param_names  # noqa: B018


def test_settings_that_change_the_computation_split_the_groups():
    one, two = nn.MultiheadAttention(4, 1), nn.MultiheadAttention(4, 2)  # same shapes, H differs
    assert len(Ensemble([one, two]).groups) == 2
    assert len(Ensemble([one, nn.MultiheadAttention(4, 1)]).groups) == 1


def test_different_output_shapes_across_architectures_are_refused():
    members = [make(0), Tiny(width=3)]
    with pytest.raises(ValueError, match="different shapes"):
        Ensemble(members)(torch.randn(2, 4, 3))


def test_shared_inputs_reach_every_member_unbatched():
    members = [make(e) for e in range(3)]
    x, bias = torch.randn(3, 4, 3), torch.randn(2)
    seen = []

    def fn(model, xe, b):
        seen.append(b.dim())  # unbatched inside: a Python read of it would work
        return model(xe) + b

    out = Ensemble(members).map(fn, x, shared=(bias,))
    assert seen == [1]
    for e, model in enumerate(members):
        torch.testing.assert_close(out[e], model(x[e]) + bias)


def test_map_runs_any_function_of_each_member():
    members = [make(e, scale=2.0) for e in range(3)]
    x = torch.randn(3, 7, 3)
    out = Ensemble(members).map(lambda model, xe: model(xe).sum(), x, chunk_size=2)  # (E,)
    expected = torch.stack([m(xe).sum() for m, xe in zip(members, x, strict=True)])
    torch.testing.assert_close(out, expected)


def test_retired_members_keep_their_weights_and_the_others_train_on_as_if_alone():
    """fit's on_step retires members 1 and 2 after step 2 and member 0 after step 4: each ends
    where it would end trained alone for that many steps; training stops when none is left."""
    data = torch.randn(4, 6, 5, 3, generator=torch.Generator().manual_seed(2))
    classes = [Tiny, Doubled, Tiny, Doubled]
    stops = {0: 4, 1: 2, 2: 2, 3: 6}
    alone = [make(e, cls=cls) for e, cls in enumerate(classes)]
    for e, model in enumerate(alone):
        fit(model, iter(data[e]), lambda m, x: (m(x) ** 2).mean(), steps=stops[e], lr=0.1)
    members = [make(e, cls=cls) for e, cls in enumerate(classes)]
    ensemble = Ensemble(members)
    batches = (data[ensemble.active, step] for step in range(6))
    seen = []

    def on_step(step, loss, extra):
        seen.append(list(ensemble.active))
        return [e for e in ensemble.active if stops[e] == step]

    losses = fit(
        ensemble, batches, lambda m, x: (m(x) ** 2).mean(dim=(1, 2)).sum(), steps=6, lr=0.1,
        on_step=on_step,
    )  # fmt: skip
    assert len(losses) == 6 and seen[2] == [0, 3] and seen[4] == [3] and ensemble.size == 0
    assert_same_weights(alone, ensemble.unstack(members))
    torch.testing.assert_close(ensemble.member_state(1)["linear.bias"], alone[1].linear.bias)


def test_fit_stops_when_every_member_has_left():
    ensemble = Ensemble([make(0), make(1)])
    batches = iter(lambda: torch.randn(ensemble.size, 2, 3), None)
    losses = fit(
        ensemble, batches, lambda m, x: m(x).sum(), steps=9, lr=0.1,
        on_step=lambda step, loss, extra: ensemble.active if step == 3 else None,
    )  # fmt: skip
    assert len(losses) == 3


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear, self.norm = nn.Linear(3, 4), BatchNorm(4)

    def forward(self, x, mask):
        return self.norm(self.linear(x), mask)


def test_buffers_written_in_the_forward_pass_are_each_members_own():
    torch.manual_seed(3)
    members = [Normed() for _ in range(3)]
    copies = [Normed() for _ in range(3)]
    for a, b in zip(members, copies, strict=True):
        b.load_state_dict(a.state_dict())
    x = torch.randn(3, 2, 5, 3)
    mask = torch.arange(5) < torch.tensor([5, 3])[:, None]  # (B, T), shared by every member
    ensemble = Ensemble(members).train()
    out = ensemble.map(lambda m, xe, k: m(xe, k), x, shared=(mask,))
    for e, model in enumerate(copies):
        torch.testing.assert_close(out[e], model.train()(x[e], mask))
    filled = ensemble.unstack([Normed() for _ in range(3)])
    for a, b in zip(filled, copies, strict=True):
        torch.testing.assert_close(a.norm.running_mean, b.norm.running_mean)
        assert int(a.norm.num_batches_tracked) == 1


def test_bad_input_names_what_was_expected():
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])
    with pytest.raises(TypeError, match="list of nn.Modules"):
        Ensemble([make(0), "a model"])
    ensemble = Ensemble([make(0), make(1)])
    with pytest.raises(ValueError, match="E = 2"):
        ensemble(torch.randn(3, 5, 3))
    with pytest.raises(ValueError, match="expected 2 models"):
        ensemble.unstack([make(0)])
    with pytest.raises(ValueError, match="models\\[0\\] must have"):
        ensemble.unstack([nn.Linear(3, 5), make(1)])


def test_map_over_some_members_in_any_order_and_in_evaluation_mode():
    torch.manual_seed(4)
    members = [Normed() for _ in range(4)]
    ensemble = Ensemble(members).eval()  # BatchNorm reads its running statistics
    x = torch.randn(2, 2, 5, 3)
    mask = torch.ones(2, 5, dtype=torch.bool)
    out = ensemble.map(lambda m, xe, k: m(xe, k), x, shared=(mask,), members=[3, 1])
    for i, e in enumerate([3, 1]):
        torch.testing.assert_close(out[i], members[e].eval()(x[i], mask))


def test_each_member_may_warm_up_on_its_own_schedule():
    data = torch.randn(3, 6, 5, 3, generator=torch.Generator().manual_seed(5))
    warmups = [0, 3, 5]
    alone = [make(e) for e in range(3)]
    for e, model in enumerate(alone):
        fit(
            model,
            iter(data[e]),
            lambda m, x: (m(x) ** 2).mean(),
            steps=6,
            lr=0.1,
            warmup=warmups[e],
        )
    members = [make(e) for e in range(3)]
    ensemble = Ensemble(members)
    batches = (data[:, step] for step in range(6))
    loss = lambda m, x: (m(x) ** 2).mean(dim=(1, 2)).sum()  # noqa: E731
    fit(ensemble, batches, loss, steps=6, lr=0.1, warmup=warmups)
    assert_same_weights(alone, ensemble.unstack(members))

"""tutorial_lib.labs.norms_runs: tiny encoders as one Ensemble compute, learn and train as E
encoders alone; their gradients at initialisation."""

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import lengths_mask
from tutorial_lib.labs.norms import TinyEncoder
from tutorial_lib.labs.norms_runs import init_gradients, train_runs
from tutorial_lib.labs.seed_ensemble import Ensemble
from tutorial_lib.training import fit

KINDS = ["layer", "layer", "batch", "batch_masked", "batch_masked"]
PLACEMENTS = ["post", "pre", "pre", "post", "pre"]


def members(causal=False, positions=True, kinds=KINDS, placements=PLACEMENTS):
    out = []
    for e, (kind, placement) in enumerate(zip(kinds, placements, strict=True)):
        torch.manual_seed(e)
        out.append(
            TinyEncoder(
                12, 3, d_model=8, n_head=2, d_ff=16, n_layers=2, norm=kind, placement=placement,
                max_len=10, positions=positions, causal=causal,
            ).double()  # float64: Adam turns float32 rounding in zero gradients into full steps
        )  # fmt: skip
    return out


def batch(E, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = lengths_mask([7, 5, 3, 6], 7)
    return torch.randint(1, 12, (E, 4, 7), generator=g) * mask, mask


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("positions", [False, True])
def test_each_member_computes_and_learns_what_its_encoder_does(causal, positions):
    models = members(causal, positions)
    ensemble = Ensemble([m for m in members(causal, positions)]).double()
    tokens, mask = batch(len(models))
    logits = ensemble(tokens, shared=(mask,))
    logits.square().sum().backward()
    for e, model in enumerate(models):
        alone = model(tokens[e], mask)
        torch.testing.assert_close(logits[e], alone)
        alone.square().sum().backward()
    grads = {e: {n: p.grad for n, p in m.named_parameters()} for e, m in enumerate(models)}
    for group in ensemble.groups:
        for name, stacked in zip(group.param_names, group.stacked, strict=True):
            for row, e in enumerate(group.members):
                torch.testing.assert_close(stacked.grad[row], grads[e][name], msg=name)
    # the running statistics both made in training mode: what unstack copies back
    trained = ensemble.unstack(members(causal, positions))
    for e, (copy, model) in enumerate(zip(trained, models, strict=True)):
        for (name, ours), (_, theirs) in zip(
            copy.state_dict().items(), model.state_dict().items(), strict=True
        ):
            torch.testing.assert_close(ours, theirs, msg=f"member {e}: {name}")
    logits = ensemble.eval()(tokens, shared=(mask,))
    for e, model in enumerate(models):
        torch.testing.assert_close(logits[e], model.eval()(tokens[e], mask))


def test_shared_tokens_reach_every_member():
    ensemble = Ensemble(members()).double()
    tokens, mask = batch(1)
    shared = ensemble(shared=(tokens[0], mask))
    torch.testing.assert_close(shared, ensemble(tokens.expand(5, -1, -1), shared=(mask,)))


def test_a_causal_ensemble_takes_a_batch_as_large_as_its_length():
    """Without a padding mask the causal map alone reaches the attention; with B = T it must
    not be read as a (B, T_k) padding mask (the attention refuses a 2-D mask then)."""
    models = members(causal=True)
    ensemble = Ensemble(models).double()
    tokens = torch.randint(1, 12, (5, 4, 4), generator=torch.Generator().manual_seed(1))
    logits = ensemble(tokens)
    for e, model in enumerate(models):
        torch.testing.assert_close(logits[e], model(tokens[e]))


@pytest.mark.parametrize("warmup", [0, 3, [0, 3]])
def test_train_runs_trains_each_member_as_fit_trains_it_alone(warmup):
    kinds, placements = ["batch_masked", "layer"], ["post", "pre"]
    ensemble = Ensemble(members(kinds=kinds, placements=placements)).double()
    data = [batch(2, seed) for seed in range(6)]
    targets = [
        torch.randint(0, 3, (2, 4, 7), generator=torch.Generator().manual_seed(s)) for s in range(6)
    ]

    def ensemble_loss(model, item):
        (tokens, mask), target = item
        logits = model(tokens, shared=(mask,))[:, mask]  # (E, N, C)
        return F.cross_entropy(logits.transpose(1, 2), target[:, mask], reduction="none").mean(1)

    items = zip(data, targets, strict=True)
    losses = train_runs(ensemble, items, ensemble_loss, steps=6, lr=1e-2, warmup=warmup)
    assert losses.shape == (6, 2)
    trained = ensemble.unstack(members(kinds=kinds, placements=placements))
    for e, model in enumerate(members(kinds=kinds, placements=placements)):

        def one_loss(model, item, e=e):
            (tokens, mask), target = item
            return F.cross_entropy(model(tokens[e], mask)[mask], target[e][mask])

        items = iter(zip(data, targets, strict=True))
        own = warmup[e] if isinstance(warmup, list) else warmup
        alone = fit(model, items, one_loss, steps=6, lr=1e-2, warmup=own)
        torch.testing.assert_close(losses[:, e], torch.tensor(alone, dtype=torch.float64))
        for (name, ours), (_, theirs) in zip(
            trained[e].state_dict().items(), model.state_dict().items(), strict=True
        ):
            torch.testing.assert_close(ours, theirs, msg=name)


def test_init_gradients_are_each_encoders_own():
    models = members(kinds=["layer"] * 2, placements=["post", "pre"])
    tokens = torch.randint(1, 12, (2, 3, 6), generator=torch.Generator().manual_seed(1))
    target = torch.randint(0, 3, (2, 3, 6), generator=torch.Generator().manual_seed(2))
    found = init_gradients(models, tokens, target)
    assert found.grads.shape == (2, 2) and found.hidden.shape == (2, 3, 6, 16)
    for e, model in enumerate(models):
        stream = {}
        model.layers[-1].register_forward_hook(lambda m, a, out, s=stream: s.update(x=out))
        model.zero_grad()
        F.cross_entropy(model(tokens[e]).flatten(0, 1), target[e].flatten()).backward()
        expected = [layer.ffn.w_2.weight.grad.norm() for layer in model.layers]
        torch.testing.assert_close(found.grads[e], torch.stack(expected).float())
        torch.testing.assert_close(found.stream[e], stream["x"].detach())
        torch.testing.assert_close(found.stream_rms[e], stream["x"].pow(2).mean().sqrt())
    # Pre-LN's top W_2 gradient is sum_t delta_t h_t^T, delta_t the stream's gradient at token t.
    delta, h = found.stream_grad[1].flatten(0, 1), found.hidden[1].flatten(0, 1)  # (B*T, .)
    torch.testing.assert_close(delta.T @ h, models[1].layers[-1].ffn.w_2.weight.grad)

"""tutorial_lib.labs.norms_ensemble: E stacked encoders compute, learn and train as E encoders."""

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import lengths_mask
from tutorial_lib.labs.norms import TinyEncoder
from tutorial_lib.labs.norms_ensemble import EncoderEnsemble, init_gradients, train_runs
from tutorial_lib.training import fit

KINDS = ["layer", "layer", "batch", "batch_masked", "batch_masked"]
PLACEMENTS = ["post", "pre", "pre", "post", "pre"]


def members(causal=False, positions=True, kinds=KINDS, placements=PLACEMENTS):
    out = []
    for e, (kind, placement) in enumerate(zip(kinds, placements, strict=True)):
        torch.manual_seed(e)
        out.append(
            TinyEncoder(
                12,
                3,
                d_model=8,
                n_head=2,
                d_ff=16,
                n_layers=2,
                norm=kind,
                placement=placement,
                max_len=10,
                positions=positions,
                causal=causal,
            ).double()  # float64: Adam turns float32 rounding in zero gradients into full steps
        )
    return out


def batch(E, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = lengths_mask([7, 5, 3, 6], 7)
    return torch.randint(1, 12, (E, 4, 7), generator=g) * mask, mask


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("positions", [False, True])
def test_each_member_computes_and_learns_what_its_encoder_does(causal, positions):
    models = members(causal, positions)
    ensemble = EncoderEnsemble(models)
    tokens, mask = batch(len(models))
    logits = ensemble(tokens, mask)
    logits.square().sum().backward()
    for e, model in enumerate(models):
        alone = model(tokens[e], mask)
        torch.testing.assert_close(logits[e], alone)
        alone.square().sum().backward()
        torch.testing.assert_close(ensemble.embed.grad[e], model.embed.weight.grad)
        for ours, theirs in zip(ensemble.layers, model.layers, strict=True):
            torch.testing.assert_close(ours.w_q.weight.grad[e], theirs.attention.w_q.weight.grad.T)
            torch.testing.assert_close(ours.w_2.bias.grad[e], theirs.ffn.w_2.bias.grad)
            torch.testing.assert_close(ours.norm_2.weight.grad[e], theirs.norm_2.weight.grad)
        # member(e) copies the weights and the running statistics both made in training mode
        copy = ensemble.member(e)
        for (name, ours), (_, theirs) in zip(
            copy.state_dict().items(), model.state_dict().items(), strict=True
        ):
            torch.testing.assert_close(ours, theirs, msg=name)
    ensemble.eval()
    logits = ensemble(tokens, mask)
    for e, model in enumerate(models):
        torch.testing.assert_close(logits[e], model.eval()(tokens[e], mask))


def test_shared_tokens_reach_every_member():
    ensemble = EncoderEnsemble(members())
    tokens, mask = batch(1)
    shared = ensemble(tokens[0], mask)
    torch.testing.assert_close(shared, ensemble(tokens.expand(5, -1, -1), mask))


def test_a_causal_ensemble_takes_a_batch_as_large_as_its_length():
    """Without a padding mask the causal map alone reaches the attention; with B = T it must
    not be read as a (B, T_k) padding mask (the attention refuses a 2-D mask then)."""
    models = members(causal=True)
    ensemble = EncoderEnsemble(models)
    tokens = torch.randint(1, 12, (5, 4, 4), generator=torch.Generator().manual_seed(1))
    logits = ensemble(tokens)
    for e, model in enumerate(models):
        torch.testing.assert_close(logits[e], model(tokens[e]))


@pytest.mark.parametrize("warmup", [None, [0, 3]])
def test_train_runs_trains_each_member_as_fit_trains_it_alone(warmup):
    kinds, placements = ["batch_masked", "layer"], ["post", "pre"]
    ensemble = EncoderEnsemble(members(kinds=kinds, placements=placements))
    data = [batch(2, seed) for seed in range(6)]
    targets = [
        torch.randint(0, 3, (2, 4, 7), generator=torch.Generator().manual_seed(s)) for s in range(6)
    ]

    def ensemble_loss(model, item):
        (tokens, mask), target = item
        logits = model(tokens, mask)[:, mask]  # (E, N, C)
        per = F.cross_entropy(logits.flatten(0, 1), target[:, mask].flatten(), reduction="none")
        return per.view(2, -1).mean(dim=1)

    losses = train_runs(
        ensemble, zip(data, targets, strict=True), ensemble_loss, lr=1e-2, warmup=warmup
    )
    assert losses.shape == (6, 2)
    for e, model in enumerate(members(kinds=kinds, placements=placements)):

        def one_loss(model, item, e=e):
            (tokens, mask), target = item
            return F.cross_entropy(model(tokens[e], mask)[mask], target[e][mask])

        alone = fit(
            model,
            iter(zip(data, targets, strict=True)),
            one_loss,
            steps=6,
            lr=1e-2,
            warmup=0 if warmup is None else warmup[e],
        )
        torch.testing.assert_close(losses[:, e], torch.tensor(alone, dtype=torch.float64))
        for (name, ours), (_, theirs) in zip(
            ensemble.member(e).state_dict().items(), model.state_dict().items(), strict=True
        ):
            torch.testing.assert_close(ours, theirs, msg=name)


def test_init_gradients_match_each_encoder():
    models = members(kinds=["layer"] * 2, placements=["post", "pre"])
    ensemble = EncoderEnsemble(models)
    tokens = torch.randint(1, 12, (2, 3, 6), generator=torch.Generator().manual_seed(1))
    target = torch.randint(0, 3, (2, 3, 6), generator=torch.Generator().manual_seed(2))
    grads, rms = init_gradients(ensemble, tokens, target)
    for e, model in enumerate(models):
        stream = {}
        model.layers[-1].register_forward_hook(
            lambda m, a, out, stream=stream: stream.update(x=out)
        )
        F.cross_entropy(model(tokens[e]).flatten(0, 1), target[e].flatten()).backward()
        expected = [layer.ffn.w_2.weight.grad.norm() for layer in model.layers]
        torch.testing.assert_close(grads[e], torch.stack(expected))
        torch.testing.assert_close(rms[e], stream["x"].pow(2).mean().sqrt())


def test_errors():
    with pytest.raises(ValueError, match="at least one"):
        EncoderEnsemble([])
    small = TinyEncoder(12, 3, d_model=8, n_head=2, d_ff=16)
    wide = TinyEncoder(12, 3, d_model=16, n_head=2, d_ff=16)
    with pytest.raises(ValueError, match="same sizes"):
        EncoderEnsemble([small, wide])
    with pytest.raises(ValueError, match="LayerNorm and BatchNorm"):
        EncoderEnsemble([TinyEncoder(12, 3, d_model=8, n_head=2, d_ff=16, norm="rms")])
    ensemble = EncoderEnsemble([small, small])
    with pytest.raises(ValueError, match=r"\(E, B, T\) with E = 2"):
        ensemble(torch.ones(3, 2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len"):
        ensemble(torch.ones(2, 1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="padding mask"):
        ensemble(torch.ones(2, 2, 4, dtype=torch.long), torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="backward"):
        ensemble.ffn_gradient_norms()
    with pytest.raises(ValueError, match="warmup"):
        train_runs(ensemble, [], lambda m, b: m, lr=1e-3, warmup=[1, 2, 3])
    with pytest.raises(ValueError, match="one loss per member"):
        train_runs(ensemble, [None], lambda m, b: torch.zeros(3, requires_grad=True), lr=1e-3)

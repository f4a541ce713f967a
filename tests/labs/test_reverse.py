"""tutorial_lib.labs.reverse: the ensemble trains each member as if it were alone."""

import math

import pytest
import torch
import torch.nn.functional as F

from tutorial_lib import seeds
from tutorial_lib.data import make_batch, teacher_forcing
from tutorial_lib.labs.reverse import (
    _self_mask,
    _smoothed_cross_entropy,
    chapter_config,
    smoothed_loss_floor,
    train_ensemble,
)
from tutorial_lib.model import Transformer, TransformerConfig
from tutorial_lib.training import fit, teacher_forcing_loss


def small(**changes):
    sizes = dict(
        src_vocab=13, tgt_vocab=13, d_model=16, n_head=2, d_ff=32, n_enc_layers=1,
        n_dec_layers=1, dropout=0.0, max_len=16, token_rms=0.25,
    )  # fmt: skip
    return TransformerConfig(**(sizes | changes))


def test_each_member_trains_as_if_alone():
    """Member e of the ensemble = one model with the same initialisation, the same batches,
    the same Adam and warm-up, trained by the book's one loop."""
    configs = [small(), small(token_rms=1.0), small(causal=False)]
    run = train_ensemble(configs, key="test", steps=4, length=5, target=None)
    for e, config in enumerate(configs):
        seeds.manual_seed("ensemble", "test", "init", e)
        alone = Transformer(config)
        stream = seeds.generator("ensemble", "test", "data", e)
        batches = iter(lambda g=stream: make_batch("reverse", 32, 5, generator=g), None)

        def loss_fn(model, batch):
            return teacher_forcing_loss(model, *batch)[0]

        losses = fit(
            alone, batches, loss_fn, steps=4, lr=5e-3, betas=(0.9, 0.98), eps=1e-9, warmup=50
        )
        torch.testing.assert_close(torch.tensor(run.losses[e]), torch.tensor(losses))
        for (name, p), q in zip(alone.named_parameters(), run.models[e].parameters(), strict=True):
            torch.testing.assert_close(q, p, msg=name)
        assert run.models[e].config == config and not run.models[e].training


def test_members_stop_at_the_target_and_the_rest_go_on():
    """Reverse of length 3 is learned within a few hundred steps; every member stops when its
    held-out check is perfect, and the returned model really is."""
    from tutorial_lib.decoding import sequence_accuracy

    test_set = make_batch("reverse", 200, 3, seed=99)
    run = train_ensemble(
        [small()] * 2, key="stop", steps=400, length=3, test_set=test_set, snapshot_steps=(5,)
    )
    assert all(r is not None for r in run.reached)
    for e, model in enumerate(run.models):
        assert len(run.losses[e]) == run.reached[e] == len(run.batch_accuracy[e])
        assert sequence_accuracy(model, *test_set) == 1.0 == run.accuracy[e]
    assert set(run.snapshots[5]) == {0, 1}


def test_smoothed_loss_is_pytorchs_label_smoothing_per_member():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 5, 7, generator=g)
    target = torch.randint(1, 7, (3, 4, 5), generator=g)
    target[:, :, -1] = 0  # padding, ignored
    eps = torch.tensor([0.0, 0.1, 0.3])
    got = _smoothed_cross_entropy(logits, target, eps)
    for e in range(3):
        want = F.cross_entropy(
            logits[e].flatten(0, 1),
            target[e].flatten(),
            ignore_index=0,
            label_smoothing=eps[e].item(),
        )
        torch.testing.assert_close(got[e], want)


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.5])
def test_smoothed_floor_is_reached_at_p_equal_q_and_nowhere_lower(epsilon):
    V = 13
    floor, top = smoothed_loss_floor(epsilon, V)
    q = torch.full((V,), epsilon / V, dtype=torch.float64)
    q[4] += 1 - epsilon
    at_q = F.cross_entropy(q.log()[None], torch.tensor([4]), label_smoothing=epsilon)
    assert at_q.item() == pytest.approx(floor, abs=1e-9) and q.max().item() == pytest.approx(top)
    g = torch.Generator().manual_seed(1)
    others = torch.randn(500, V, generator=g, dtype=torch.float64) * 3
    losses = F.cross_entropy(
        others, torch.full((500,), 4), label_smoothing=epsilon, reduction="none"
    )
    assert (losses >= floor - 1e-12).all()
    assert smoothed_loss_floor(0.0, V) == (0.0, 1.0)
    assert math.isclose(smoothed_loss_floor(0.1, 13)[1], 0.9 + 0.1 / 13)


def test_the_open_mask_shows_the_future_and_the_causal_one_does_not():
    dec_in, _ = teacher_forcing(make_batch("reverse", 2, 4, min_length=2, seed=3)[1])
    causal, open_ = _self_mask(small(), dec_in), _self_mask(small(causal=False), dec_in)
    assert causal.shape == open_.shape == (2, 5, 5)
    assert not causal.triu(1).any() and open_.triu(1).any()
    torch.testing.assert_close(causal, open_ & torch.ones(5, 5, dtype=torch.bool).tril())


def test_unrelated_targets_carry_nothing_of_the_source():
    run = train_ensemble(
        [small()], key="noise", steps=1, length=4, target=None, unrelated_targets=True
    )
    assert len(run.losses[0]) == 1  # trained; the batches are checked below
    from tutorial_lib.labs.reverse import _batch

    src, tgt = _batch("reverse", 256, 4, torch.Generator().manual_seed(0), True)
    assert (tgt == src.flip(1)).all(dim=1).float().mean() < 0.01


def test_members_must_share_their_shapes_and_modules():
    with pytest.raises(ValueError, match="token_rms and causal"):
        train_ensemble([small(), small(d_ff=64)], key="x", steps=1)
    with pytest.raises(ValueError, match="token_rms and causal"):
        train_ensemble([small(), small(dropout=0.1)], key="x", steps=1)
    with pytest.raises(ValueError, match="label_smoothing"):
        train_ensemble([small()], key="x", steps=1, label_smoothing=1.0)
    with pytest.raises(ValueError, match="start"):
        train_ensemble([small()] * 2, key="x", steps=1, start=[Transformer(small())])
    with pytest.raises(ValueError, match="at least one"):
        train_ensemble([], key="x", steps=1)


def test_the_chapter_config_is_small_and_follows_the_papers_layout():
    config = chapter_config()
    assert (config.d_model, config.n_head, config.d_ff) == (32, 4, 128)
    assert config.n_enc_layers == config.n_dec_layers == 1 and config.dropout == 0.0
    assert chapter_config(dropout=0.1).dropout == 0.1

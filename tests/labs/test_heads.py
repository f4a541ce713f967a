"""tutorial_lib.labs.heads: every copy of the ensemble computes and trains as its single model."""

import pytest
import torch

from tutorial_lib import seeds
from tutorial_lib.labs.heads import (
    FIRST_SCORED,
    LENGTH,
    VOCAB,
    TinyAttentionModel,
    difference_batch,
    scored_loss,
    train_heads,
)
from tutorial_lib.labs.seed_ensemble import Ensemble
from tutorial_lib.training import fit


def models_for(n_heads, seed=0):
    torch.manual_seed(seed)
    return [TinyAttentionModel(h) for h in n_heads]


def test_targets_are_the_difference_of_the_two_previous_digits():
    tokens, target = difference_batch(50, torch.Generator().manual_seed(0))
    assert tokens.shape == target.shape == (50, LENGTH)
    for t in range(FIRST_SCORED, LENGTH):
        assert torch.equal(target[:, t], (tokens[:, t - 1] - tokens[:, t - 2]) % VOCAB)
    assert difference_batch(4, torch.Generator(), copies=3)[0].shape == (3, 4, LENGTH)


# A batch of LENGTH - FIRST_SCORED or LENGTH sentences has as many rows as the scored or
# full length: the causal map must never be mistaken for a padding mask there.
@pytest.mark.parametrize("B", [7, LENGTH - FIRST_SCORED, LENGTH])
@pytest.mark.parametrize("n_heads", [(1, 2), (2, 1, 4, 1), (4, 4)])
def test_every_copy_of_the_ensemble_computes_and_learns_its_single_model(n_heads, B):
    models = models_for(n_heads)
    ensemble = Ensemble(models_for(n_heads))
    tokens, target = difference_batch(B, torch.Generator().manual_seed(1), copies=len(models))
    logits = ensemble.map(lambda model, x: model(x)[0], tokens)  # (R, B, T, V)
    scored_loss(logits[:, :, FIRST_SCORED:], target).sum().backward()
    for r, model in enumerate(models):
        single_logits, _ = model(tokens[r])  # (B, T, V)
        torch.testing.assert_close(logits[r], single_logits)
        scored_loss(single_logits[None, :, FIRST_SCORED:], target[r]).sum().backward()
    for group in ensemble.groups:  # the loss is a sum over copies: each gets its own gradient
        for name, stacked in zip(group.param_names, group.stacked, strict=True):
            for row, r in enumerate(group.members):
                expected = models[r].get_parameter(name).grad
                torch.testing.assert_close(stacked.grad[row], expected, msg=name)


def test_a_copy_trains_as_fit_trains_its_model_alone():
    result = train_heads([2, 1], key="test", steps=4, batch_size=5, n_test=3)
    seeds.manual_seed("test", "init", 1)
    alone = TinyAttentionModel(1)
    data = seeds.generator("test", "data")
    batches = (difference_batch(5, data, copies=2) for _ in range(4))
    copy_1 = ((tokens[1], target[1]) for tokens, target in batches)

    def loss_fn(model, batch):
        return scored_loss(model(batch[0])[0][None, :, FIRST_SCORED:], batch[1]).sum()

    fit(alone, copy_1, loss_fn, steps=4, lr=5e-3)
    for (name, ours), theirs in zip(
        result.models[1].named_parameters(), alone.parameters(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, msg=name)


def test_bad_head_counts_are_refused():
    with pytest.raises(ValueError, match="n_head must be a positive divisor of D"):
        TinyAttentionModel(3)


def test_training_follows_the_seed_and_reports(monkeypatch):
    calls = []

    def report(items, label, total):
        calls.append((label, total))
        yield from items

    a = train_heads([1, 2], key="test", steps=3, batch_size=4, n_test=5, report=report)
    b = train_heads([1, 2], key="test", steps=3, batch_size=4, n_test=5)
    assert calls == [("training 2 runs", 3)]
    assert a.losses == b.losses and torch.equal(a.accuracy, b.accuracy)
    assert len(a.losses) == 3 and a.accuracy.shape == (2,)
    assert a.copies(2) == [1] and [s.shape for s in (a.share(0), a.share(1))] == [
        (1, 5, LENGTH - FIRST_SCORED),
        (2, 5, LENGTH - FIRST_SCORED),
    ]
    assert all(((s >= 0) & (s <= 1)).all() for s in (a.share(0), a.share(1)))
    monkeypatch.setenv("BOOK_SEED", "7")
    c = train_heads([1, 2], key="test", steps=3, batch_size=4, n_test=5)
    assert c.losses != a.losses


def test_the_scored_logits_are_the_full_logits_from_the_first_scored_position():
    model = models_for((2,))[0]
    tokens, _ = difference_batch(5, torch.Generator().manual_seed(3))
    full, attn = model(tokens)
    scored, same_attn = model(tokens, FIRST_SCORED)
    torch.testing.assert_close(scored, full[:, FIRST_SCORED:])
    torch.testing.assert_close(same_attn, attn)

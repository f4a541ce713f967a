"""tutorial_lib.labs.heads: the ensemble computes and trains exactly its single models."""

import pytest
import torch

from tutorial_lib.labs import heads
from tutorial_lib.labs.heads import (
    FIRST_SCORED,
    LENGTH,
    VOCAB,
    HeadsEnsemble,
    TinyAttentionModel,
    difference_batch,
    scored_loss,
    train_heads,
)


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
def test_every_copy_computes_its_single_model(n_heads, B):
    models = models_for(n_heads)
    ensemble = HeadsEnsemble(models)
    tokens, _ = difference_batch(B, torch.Generator().manual_seed(1), copies=len(models))
    logits, attn = ensemble(tokens)
    for r, model in enumerate(models):
        single_logits, single_attn = model(tokens[r])  # (B, T, V), (B, H, T, T)
        torch.testing.assert_close(logits[r], single_logits[:, FIRST_SCORED:])
        weights = ensemble.head_weights(attn)[r]  # (H, B, T_q, T)
        torch.testing.assert_close(weights, single_attn[:, :, FIRST_SCORED:].transpose(0, 1))


def test_copy_state_loads_into_a_single_model():
    ensemble = HeadsEnsemble(models_for((2, 1)))
    model = TinyAttentionModel(2)
    model.load_state_dict(ensemble.copy_state(0))
    tokens, _ = difference_batch(5, torch.Generator().manual_seed(2))
    logits = ensemble(tokens.expand(2, -1, -1))[0]  # (R, B, T_q, V)
    torch.testing.assert_close(model(tokens)[0][:, FIRST_SCORED:], logits[0])
    with pytest.raises(ValueError, match="R = 2 copies"):
        ensemble(tokens[None])


def test_each_copy_gets_its_own_models_gradient():
    # The ensemble's loss is a sum over copies, so copy r's gradient is its model's alone.
    models = models_for((1, 2, 4), seed=3)
    ensemble = HeadsEnsemble(models)
    tokens, target = difference_batch(6, torch.Generator().manual_seed(4), copies=3)
    scored_loss(ensemble(tokens)[0], target).sum().backward()
    for r, model in enumerate(models):
        logits, _ = model(tokens[r])
        scored_loss(logits[None, :, FIRST_SCORED:], target[r]).sum().backward()
        for name, stacked in zip(heads._NAMES, ensemble.params, strict=True):
            torch.testing.assert_close(stacked.grad[r], model.get_parameter(name).grad)


def test_bad_head_counts_are_refused():
    with pytest.raises(ValueError, match="n_head must be a positive divisor of D"):
        TinyAttentionModel(3)
    with pytest.raises(ValueError, match="at least one model"):
        HeadsEnsemble([])


class _ThreeHeads(TinyAttentionModel):
    """A model that claims three heads: 3 and 2 do not nest, which the ensemble must refuse."""

    def __init__(self):
        super().__init__(1)
        self.n_head = 3


def test_head_counts_must_nest():
    with pytest.raises(ValueError, match="every n_head must divide the largest"):
        HeadsEnsemble([TinyAttentionModel(2), _ThreeHeads()])


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

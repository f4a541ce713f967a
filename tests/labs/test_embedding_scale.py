"""The embedding-scale lab (tutorial_lib.labs.embedding_scale): chapter Q3a's sqrt(d_model)
experiment, its model and its checks."""

import numpy as np
import pytest
import torch

from tutorial_lib.labs.embedding_scale import ReversalModel, reversal_experiment, train_reversal


def test_model_shapes_and_numpy_sizes():
    model = ReversalModel(np.int64(5), np.int64(8), np.int32(6), n_head=np.int64(2))
    tokens = torch.randint(0, 5, (3, 6), generator=torch.Generator().manual_seed(0))
    assert model(tokens).shape == (3, 6, 5)
    part_tokens, part_positions = model.inputs(tokens)
    assert part_tokens.shape == (3, 6, 8) and part_positions.shape == (6, 8)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"n_head": 0}, ValueError, "n_head must be a positive integer"),  # was ZeroDivisionError
        ({"n_head": 3}, ValueError, "d_model = 8 must be divisible by n_head = 3"),
        ({"n_head": True}, TypeError, "n_head"),
        ({"positions": "rope"}, ValueError, "positions must be one of"),
        ({"embed_std": -1.0}, ValueError, "embed_std"),
        ({"embed_factor": float("nan")}, ValueError, "embed_factor"),
    ],
)
def test_bad_sizes_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        ReversalModel(**({"vocab": 5, "d_model": 8, "max_len": 6} | kwargs))


def test_token_ids_beyond_the_vocabulary_are_named():
    """Issue 18: "index out of range in self" from inside torch."""
    with pytest.raises(ValueError, match=r"tokens must hold token ids 0..V-1 = 0..4"):
        ReversalModel(5, 8, 6)(torch.full((2, 6), 5))
    with pytest.raises(ValueError, match="vocab = 9 token ids, but the model embeds only 5"):
        train_reversal(ReversalModel(5, 8, 6), 4, 9, steps=1)


def test_short_training_reports_the_mean_of_the_steps_it_took():
    model = ReversalModel(5, 8, 6)
    result = train_reversal(model, 6, 5, steps=3)
    assert 0 < result["loss"] < 10 and 0 <= result["accuracy"] <= 1
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        train_reversal(model, 6, 5, steps=0)


def test_reversal_experiment_rows_and_ratios():
    D = 16
    setups = {
        "paper": dict(embed_std=D**-0.5, embed_factor=D**0.5, n_head=1),
        "unit": dict(embed_std=1.0, n_head=1),
        "learned": dict(positions="learned", embed_std=D**-0.5, n_head=1),
    }
    rows = reversal_experiment(setups, (0, 1), d_model=D, T=6, steps=3, batch=4)
    assert [(r["setup"], r["seed"]) for r in rows] == [
        (name, seed) for name in setups for seed in (0, 1)
    ]
    assert all(0.0 <= r["accuracy"] <= 1.0 and r["loss"] > 0 for r in rows)
    by = {(r["setup"], r["seed"]): r for r in rows}
    # N(0, 1/D) draws times sqrt(D) are the N(0, 1) draws: the same start, the same ratio.
    for seed in (0, 1):
        assert by["paper", seed]["ratio"] == pytest.approx(by["unit", seed]["ratio"], rel=1e-5)
    # The reported accuracy is the trained member's own, measured again here.
    model = by["unit", 1]["model"]
    tokens = torch.randint(0, 10, (50, 6))
    assert isinstance(model, ReversalModel) and model(tokens).shape == (50, 6, 10)


def test_bad_arguments():
    with pytest.raises(ValueError, match="steps"):
        reversal_experiment({"a": {}}, (0,), steps=0)
    with pytest.raises(ValueError, match="at least one"):
        reversal_experiment({}, (0,))
    with pytest.raises(ValueError, match="positions"):
        ReversalModel(10, 8, 6, positions="rotary")
    with pytest.raises(ValueError, match="steps"):
        train_reversal(ReversalModel(10, 8, 6), 6, 10, steps=0)


def test_tied_output_is_the_embedding_table():
    """tie_output=True: the paper's sharing (section 3.4), logits = h E^T with no bias."""
    model = ReversalModel(7, 8, 5, n_head=2, embed_std=8**-0.5, embed_factor=8**0.5,
                          tie_output=True)  # fmt: skip
    assert model.readout is None
    assert sum(p.numel() for p in model.parameters()) == sum(
        p.numel() for p in ReversalModel(7, 8, 5, n_head=2).parameters()
    ) - (8 * 7 + 7)  # the separate readout's weight and bias are gone
    tokens = torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(1))
    logits = model(tokens)
    logits.sum().backward()
    with torch.no_grad():
        h = model.positions(model.embed(tokens) * model.embed_factor)
        h, _ = model.attention(h, h, h)
        h = model.norm(h + model.mlp(h))
    torch.testing.assert_close(logits, h @ model.embed.weight.T)
    assert model.embed.weight.grad is not None  # trained from both ends
    with pytest.raises(TypeError, match="tie_output must be True or False"):
        ReversalModel(7, 8, 5, tie_output="yes")


def test_reversal_experiment_trains_tied_and_untied_set_ups_apart():
    setups = {"untied": dict(n_head=1), "tied": dict(n_head=1, tie_output=True)}
    rows = reversal_experiment(setups, (0, 1), d_model=8, T=4, steps=2, batch=2)
    assert [(r["setup"], r["seed"]) for r in rows] == [
        (name, seed) for name in setups for seed in (0, 1)
    ]
    assert [r["model"].readout is None for r in rows] == [False, False, True, True]
    with pytest.raises(TypeError, match="tie_output"):
        reversal_experiment({"a": dict(tie_output=1)}, (0,), d_model=8, T=4, steps=1)

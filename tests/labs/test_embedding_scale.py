"""The embedding-scale lab (tutorial_lib.labs.embedding_scale): its model and its checks."""

import numpy as np
import pytest
import torch

from tutorial_lib.labs.embedding_scale import ReversalModel, train_reversal


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

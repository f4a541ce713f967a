"""tutorial_lib.masks: which keys each query may read (True = may attend)."""

import pytest
import torch

from tutorial_lib.masks import causal_mask, padding_mask, source_mask, target_mask


def test_causal_mask_is_lower_triangular_and_offsets_for_a_cache():
    assert torch.equal(causal_mask(3), torch.ones(3, 3, dtype=torch.bool).tril())
    m = causal_mask(2, 5)  # the queries are the last 2 of 5 positions
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_causal_mask_refuses_more_queries_than_keys():
    with pytest.raises(ValueError, match=r"causal_mask needs T_q <= T_k; got T_q=5, T_k=3"):
        causal_mask(5, 3)


def test_padding_mask_marks_the_first_lengths_tokens_as_real():
    m = padding_mask([3, 1], 4)
    assert m.shape == (2, 1, 4)
    assert m[:, 0].tolist() == [[True, True, True, False], [True, False, False, False]]


def test_source_mask_hides_padding_from_every_query():
    src = torch.tensor([[4, 5, 0], [6, 0, 0]])
    assert source_mask(src, 0).tolist() == [[[True, True, False]], [[True, False, False]]]


def test_target_mask_is_causal_and_hides_padding():
    tgt = torch.tensor([[1, 5, 6, 0]])
    mask = target_mask(tgt, pad_id=0)[0]
    expected = torch.tensor(
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.bool
    )
    assert torch.equal(mask, expected)

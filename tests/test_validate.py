"""tutorial_lib.validate: what counts as an integer, a number, a tensor of a kind, and the
messages that name the argument."""

import numpy as np
import pytest
import torch

from tutorial_lib import attention
from tutorial_lib.validate import (
    broadcast_shape,
    check_bool,
    check_choice,
    check_int,
    check_real,
    check_shape,
    check_tensor,
    check_token_ids,
    check_tokens,
    format_shape,
)


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3), torch.tensor(3)])
def test_integers_of_every_kind_are_integers(value):
    assert check_int("n", value) == 3 and type(check_int("n", value)) is int


@pytest.mark.parametrize(
    "value, error",
    [
        (True, TypeError),
        (np.bool_(False), TypeError),
        (3.0, TypeError),
        ("3", TypeError),
        (None, TypeError),
        (float("nan"), TypeError),
        (torch.tensor(3.0), TypeError),
        (torch.tensor([3]), TypeError),
        (0, ValueError),
        (-2, ValueError),
    ],
)
def test_what_is_not_a_positive_integer(value, error):
    with pytest.raises(error, match=r"^n_head must be a positive integer"):
        check_int("n_head", value)


def test_integer_ranges_and_evenness():
    assert check_int("T", 0, minimum=0) == 0 and check_int("seed", -5, minimum=None) == -5
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        check_int("d", 7, even=True)
    with pytest.raises(ValueError, match=r"k must be an integer >= 2 \(why\); got k=1"):
        check_int("k", 1, minimum=2, why="(why)")


def test_real_numbers():
    assert check_real("t", np.float32(0.5), above=0) == 0.5
    assert check_real("t", 2, above=0) == 2.0 and check_real("t", torch.tensor(0.25)) == 0.25
    for bad, error in ((float("nan"), ValueError), (float("inf"), ValueError), (0.0, ValueError),
                       (True, TypeError), ("1", TypeError), (None, TypeError)):  # fmt: skip
        with pytest.raises(error, match="temperature must be a finite number > 0"):
            check_real("temperature", bad, above=0)
    with pytest.raises(ValueError, match=r"p must be a finite number >= 0 and <= 1; got p=1.5"):
        check_real("p", 1.5, minimum=0, maximum=1)


def test_bools_choices_and_tensors():
    assert check_bool("causal", np.bool_(True)) is True
    with pytest.raises(TypeError, match="causal must be True or False; got causal='no'"):
        check_bool("causal", "no")
    assert check_choice("task", "copy", ("copy", "sort")) == "copy"
    for bad in ("nope", ["copy"], True):
        with pytest.raises(ValueError, match=r"task must be one of \['copy', 'sort'\]"):
            check_choice("task", bad, ("copy", "sort"))
    with pytest.raises(TypeError, match=r"q must be a tensor \(B, T, D\) \(wrap it"):
        check_tensor("q", [[1.0]], "float", "(B, T, D)")
    with pytest.raises(TypeError, match="mask must be a boolean tensor; got dtype torch.int64"):
        check_tensor("mask", torch.ones(2, dtype=torch.long), "bool")


def test_tokens_and_token_ids():
    with pytest.raises(
        ValueError, match=r"Layer expects x of shape \(B, T, D\) with D = d_model = 4"
    ):
        check_tokens(torch.zeros(2, 3, 5), 4, "Layer")
    with pytest.raises(TypeError, match="x must be a floating-point"):
        check_tokens(torch.zeros(2, 3, 4, dtype=torch.long), 4, "Layer")
    ids = torch.tensor([[0, 3]])
    assert check_token_ids("src", ids, 4) is ids
    with pytest.raises(ValueError, match=r"src must hold token ids 0..V-1 = 0..2 .*got ids 0..3"):
        check_token_ids("src", ids, 3)


def test_broadcast_shape_follows_numpys_rules():
    for shapes in [((2, 1, 4), (3, 1)), ((5,), ()), ((1,), (2, 3)), ((2, 3), (3, 3))]:
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = None
        assert broadcast_shape(*shapes) == expected


def test_the_chapter_helpers_live_here_and_in_attention():
    assert attention.format_shape is format_shape and attention.check_shape is check_shape
    assert format_shape(torch.zeros(2, 5)) == "(2, 5)" and format_shape((np.int64(3),)) == "(3)"
    with pytest.raises(ValueError, match=r"expected shape \(B, T\) = \(2, 4\); got \(2, 5\)"):
        check_shape(torch.zeros(2, 5), (2, np.int64(4)), "(B, T)")
    with pytest.raises(TypeError, match="format_shape takes a tensor or a shape"):
        format_shape(3)

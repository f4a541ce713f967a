"""tutorial_lib.validate, the labs' validators: what counts as an integer, a number, a tensor of
a kind, and the messages that name the argument."""

import numpy as np
import pytest
import torch

from tutorial_lib import attention, checks
from tutorial_lib.validate import (
    format_shape,
    require_bool,
    require_choice,
    require_int,
    require_real,
    require_tensor,
    require_token_ids,
    require_tokens,
)


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3), torch.tensor(3)])
def test_integers_of_every_kind_are_integers(value):
    assert require_int("n", value) == 3 and type(require_int("n", value)) is int


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
        require_int("n_head", value)


def test_integer_ranges_and_evenness():
    assert require_int("T", 0, minimum=0) == 0 and require_int("seed", -5, minimum=None) == -5
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        require_int("d", 7, even=True)
    with pytest.raises(ValueError, match=r"k must be an integer >= 2 \(why\); got k=1"):
        require_int("k", 1, minimum=2, why="(why)")


def test_real_numbers():
    assert require_real("t", np.float32(0.5), above=0) == 0.5
    assert require_real("t", 2, above=0) == 2.0 and require_real("t", torch.tensor(0.25)) == 0.25
    for bad, error in ((float("nan"), ValueError), (float("inf"), ValueError), (0.0, ValueError),
                       (True, TypeError), ("1", TypeError), (None, TypeError)):  # fmt: skip
        with pytest.raises(error, match="temperature must be a finite number > 0"):
            require_real("temperature", bad, above=0)
    with pytest.raises(ValueError, match=r"p must be a finite number >= 0 and <= 1; got p=1.5"):
        require_real("p", 1.5, minimum=0, maximum=1)


def test_bools_choices_and_tensors():
    assert require_bool("causal", np.bool_(True)) is True
    with pytest.raises(TypeError, match="causal must be True or False; got causal='no'"):
        require_bool("causal", "no")
    assert require_choice("task", "copy", ("copy", "sort")) == "copy"
    for bad in ("nope", ["copy"], True):
        with pytest.raises(ValueError, match=r"task must be one of \['copy', 'sort'\]"):
            require_choice("task", bad, ("copy", "sort"))
    with pytest.raises(TypeError, match=r"q must be a tensor \(B, T, D\) \(wrap it"):
        require_tensor("q", [[1.0]], "float", "(B, T, D)")
    with pytest.raises(TypeError, match="mask must be a boolean tensor; got dtype torch.int64"):
        require_tensor("mask", torch.ones(2, dtype=torch.long), "bool")


def test_tokens_and_token_ids():
    with pytest.raises(
        ValueError, match=r"Layer expects x of shape \(B, T, D\) with D = d_model = 4"
    ):
        require_tokens(torch.zeros(2, 3, 5), 4, "Layer")
    with pytest.raises(TypeError, match="x must be a floating-point"):
        require_tokens(torch.zeros(2, 3, 4, dtype=torch.long), 4, "Layer")
    ids = torch.tensor([[0, 3]])
    assert require_token_ids("src", ids, 4) is ids
    with pytest.raises(ValueError, match=r"src must hold token ids 0..V-1 = 0..2 .*got ids 0..3"):
        require_token_ids("src", ids, 3)


def test_format_shape_lives_here_and_in_attention_and_check_shape_in_checks():
    assert attention.format_shape is format_shape
    assert format_shape(torch.zeros(2, 5)) == "(2, 5)" and format_shape((np.int64(3),)) == "(3)"
    check_shape = checks.check_shape  # the chapters' shape asserts
    with pytest.raises(ValueError, match=r"expected shape \(B, T\) = \(2, 4\); got \(2, 5\)"):
        check_shape(torch.zeros(2, 5), (2, np.int64(4)), "(B, T)")
    check_shape(torch.zeros(2, 5), (2, 5))  # quiet when right


def test_validators_are_not_named_like_the_learners_self_checks():
    import tutorial_lib.validate as validate

    assert not [name for name in validate.__all__ if name.startswith("check_")]

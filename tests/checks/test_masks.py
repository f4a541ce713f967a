"""check_causal_mask: correct styles pass, every common mistake is caught and named."""

import re

import pytest
import torch

from tutorial_lib.attention import causal_mask
from tutorial_lib.checks import check_causal_mask


def by_comparison(T):
    i = torch.arange(T)
    return i[:, None] >= i[None, :]  # query i may see key j <= i


def by_loops(T):
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(i + 1):
            mask[i, j] = True
    return mask


CORRECT = {
    "tutorial_lib": causal_mask,
    "tril": lambda T: torch.ones(T, T, dtype=torch.bool).tril(),
    "comparison": by_comparison,
    "loops": by_loops,
    "not triu": lambda T: ~torch.ones(T, T, dtype=torch.bool).triu(1),
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_masks_pass(name):
    assert check_causal_mask(CORRECT[name]) is None


WRONG = {
    "flipped (triu)": (
        lambda T: torch.ones(T, T, dtype=torch.bool).triu(1),
        r"True means \*may attend\*",
    ),
    "transposed (triu with diagonal)": (
        lambda T: torch.ones(T, T, dtype=torch.bool).triu(),
        r"transpose of a causal mask",
    ),
    "diagonal hidden": (
        lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1),
        "hides the diagonal",
    ),
    "one step of future": (
        lambda T: torch.ones(T, T, dtype=torch.bool).tril(1),
        "the future leaks: query 0",
    ),
    "float 0/1": (lambda T: torch.ones(T, T).tril(), r"right pattern but dtype torch.float32"),
    "additive 0/-inf": (
        lambda T: torch.zeros(T, T).masked_fill(
            torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")
        ),
        r"additive mask",
    ),
    "size fixed at 5": (
        lambda T: torch.ones(5, 5, dtype=torch.bool).tril(),
        r"the size seems fixed",
    ),
    "extra batch axis": (
        lambda T: torch.ones(1, T, T, dtype=torch.bool).tril(),
        r"drop the extra axes",
    ),
    "wrong width": (
        lambda T: torch.ones(T, T + 1, dtype=torch.bool).tril(),
        r"\(T, T\) = \(5, 5\); got \(5, 6\)",
    ),
    "only the diagonal": (
        lambda T: torch.eye(T, dtype=torch.bool),
        "query 1 may not attend to key 0",
    ),
    "a list": (lambda T: [[True]], r"should return a torch.Tensor"),
    "no argument": (lambda: torch.ones(5, 5, dtype=torch.bool).tril(), r"cannot be called"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_each_mistake_is_caught_and_named(name):
    fn, feedback = WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_causal_mask: ") as caught:
        check_causal_mask(fn)
    assert re.search(feedback, str(caught.value)), str(caught.value)

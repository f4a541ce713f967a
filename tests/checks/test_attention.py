"""tutorial_lib.checks: correct attention passes, every common mistake is caught and named."""

import math
import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib.attention import scaled_dot_product_attention
from tutorial_lib.checks import (
    Mistake,
    attention_check_inputs,
    check_attention,
    compare_and_explain,
    expect_shape,
)


def attention(
    scale=lambda d_k: 1 / math.sqrt(d_k),
    dim=-1,
    mask_mode="correct",
    returns="output, weights",
):
    """A learner's attention, correct by default, with one mistake switched on by a keyword."""

    def fn(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) * scale(q.shape[-1])  # (B, H, T_q, T_k)
        if mask is not None:
            if mask_mode == "correct":
                scores = scores.masked_fill(~mask, float("-inf"))
            elif mask_mode == "big negative":
                scores = scores.masked_fill(~mask, -1e9)
            elif mask_mode == "flipped":
                scores = scores.masked_fill(mask, float("-inf"))
            elif mask_mode == "zero":
                scores = scores.masked_fill(~mask, 0.0)
        weights = scores.softmax(dim)
        if mask is not None and mask_mode == "after softmax":
            weights = weights * mask
        output = weights @ v  # (B, H, T_q, d_v)
        if returns == "weights, output":
            return weights, output
        if returns == "merged heads":
            B, H, T_q, d_v = output.shape
            return output.transpose(1, 2).reshape(B, T_q, H * d_v), weights
        if returns == "output only":
            return output
        return output, weights

    return fn


def torch_attention(q, k, v, mask=None):
    """PyTorch's own kernel for the output (bool mask: True = take part), weights alongside."""
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return output, scores.softmax(-1)


@pytest.mark.parametrize(
    "fn",
    [
        scaled_dot_product_attention,
        attention(),
        attention(mask_mode="big negative"),
        torch_attention,
        lambda q, k, v, mask=None: scaled_dot_product_attention(
            q.double(), k.double(), v.double(), mask
        ),
    ],
    ids=["tutorial_lib", "by hand", "mask with -1e9", "torch kernel", "float64"],
)
def test_correct_attention_passes(fn):
    assert check_attention(fn) is None


WRONG = {
    "missing scaling": (attention(scale=lambda d_k: 1.0), r"missing scaling.*1/√d_k"),
    "scale 1/d_k": (attention(scale=lambda d_k: 1 / d_k), r"wrong scale 1/d_k"),
    "scale multiplied": (attention(scale=math.sqrt), r"multiplied instead of divided"),
    "mask ignored": (attention(mask_mode="ignored"), r"mask ignored"),
    "mask flipped": (attention(mask_mode="flipped"), r"flipped mask.*True means \*may attend\*"),
    "mask filled with 0": (attention(mask_mode="zero"), r"mask filled with 0"),
    "mask after softmax": (attention(mask_mode="after softmax"), r"after the softmax"),
    "softmax over queries": (attention(dim=-2), r"wrong axis \(dim=-2\).*queries"),
    "softmax over heads": (attention(dim=1), r"wrong axis \(dim=1\).*heads"),
    "output with heads merged": (
        attention(returns="merged heads"),
        r"output.*\(B, H, T_q, d_v\) = \(2, 2, 3, 6\); got \(2, 3, 12\)",
    ),
    "results swapped": (attention(returns="weights, output"), r"returned \(weights, output\)"),
    "weights not returned": (attention(returns="output only"), r"should return two tensors"),
    "two mistakes at once": (
        attention(scale=lambda d_k: 1.0, dim=-2),
        r"sum to 1 over the queries",
    ),
    "no mask argument": (
        lambda q, k, v: scaled_dot_product_attention(q, k, v),
        r"fn\(q, k, v, mask=mask\) raised TypeError",
    ),
    "edits q in place": (
        lambda q, k, v, mask=None: scaled_dot_product_attention(q.mul_(2), k, v, mask),
        r"changed its input q in place",
    ),
    "wrong output": (
        lambda q, k, v, mask=None: (
            scaled_dot_product_attention(q, k, v, mask)[0] + 1,
            scaled_dot_product_attention(q, k, v, mask)[1],
        ),
        r"weights are right, but the output differs",
    ),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_each_mistake_is_caught_and_named(name):
    fn, feedback = WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_attention: ") as caught:
        check_attention(fn)
    assert re.search(feedback, str(caught.value), flags=re.S), str(caught.value)


def test_the_three_scalings_give_clearly_different_weights():
    # A checker whose scores are far apart passes all three: its softmax is one-hot anyway.
    x = attention_check_inputs()
    d_k = x["q"].shape[-1]
    weights = [
        scaled_dot_product_attention(x["q"], x["k"], x["v"], scale=s)[1]
        for s in (1.0, 1 / math.sqrt(d_k), 1 / d_k)
    ]
    for i in range(3):
        for j in range(i + 1, 3):
            assert (weights[i] - weights[j]).abs().max() > 0.2
    assert weights[0].max(-1).values.mean() < 0.9  # even unscaled, far from one-hot


def test_mask_and_its_opposite_leave_every_query_a_key():
    mask = attention_check_inputs()["mask"]
    assert mask.any(-1).all() and (~mask).any(-1).all()


def test_inputs_separate_every_dimension():
    x = attention_check_inputs()
    B, H, T_q, d_k = x["q"].shape
    T_k, d_v = x["v"].shape[-2:]
    assert len({T_q, T_k, d_k, d_v}) == 4 and B * H > 1


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 20.0).filter(lambda s: abs(s - 0.25) > 0.002))
def test_any_other_scale_fails(scale):
    with pytest.raises(AssertionError):
        check_attention(attention(scale=lambda d_k: scale))


def test_compare_and_explain_returns_quietly_when_equal():
    a = torch.arange(6.0)
    assert compare_and_explain("check_x", "your y", a, a.clone(), [], "x") is None


def test_compare_and_explain_names_the_matching_mistake_first():
    expected = torch.zeros(3)
    mistakes = [Mistake("off by one", "add one less", torch.ones(3))]
    with pytest.raises(AssertionError, match=r"check_x: your y match a common mistake \(off by"):
        compare_and_explain("check_x", "your y", torch.ones(3), expected, mistakes, "zeros")


def test_compare_and_explain_then_diagnoses_then_reports_the_difference():
    def diagnose(actual):
        if actual.sum() < 0:
            raise AssertionError("check_x: negative")

    with pytest.raises(AssertionError, match="negative"):
        compare_and_explain("check_x", "y", -torch.ones(3), torch.zeros(3), [], "z", diagnose)
    with pytest.raises(AssertionError, match=r"differ from zeros by up to 2"):
        compare_and_explain("check_x", "y", torch.full((3,), 2.0), torch.zeros(3), [], "zeros")


def test_expect_shape_names_the_letters():
    with pytest.raises(AssertionError, match=r"\(B, T\) = \(2, 3\); got \(3, 2\)"):
        expect_shape("check_x", torch.zeros(3, 2), (2, 3), "x", "(B, T)")
    with pytest.raises(AssertionError, match="torch.Tensor"):
        expect_shape("check_x", [1, 2], (2,), "x", "(T,)")

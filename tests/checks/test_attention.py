"""check_attention: correct styles pass, every common mistake is caught and named."""

import math
import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib.attention import scaled_dot_product_attention
from tutorial_lib.checks import attention_check_inputs, check_attention
from tutorial_lib.checks.attention import CONFIGS, OTHER_CONFIGS

# A learner's configs by index, and the other configs a grader's hidden test tries.
EVERY_CONFIG = [*range(len(CONFIGS)), *OTHER_CONFIGS]


def attention(
    scale=lambda d_k: 1 / math.sqrt(d_k), dim=-1, mask_mode="correct", returns="output, weights"
):
    """A learner's attention, correct by default, with one mistake switched on by a keyword."""

    def fn(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) * scale(q.shape[-1])  # (..., T_q, T_k)
        if mask is not None:
            if mask_mode == "correct":
                scores = scores.masked_fill(~mask, float("-inf"))
            elif mask_mode == "big negative":
                scores = scores.masked_fill(mask == 0, -1e9)
            elif mask_mode == "flipped":
                scores = scores.masked_fill(mask, float("-inf"))
            elif mask_mode == "zero":
                scores = scores.masked_fill(~mask, 0.0)
            elif mask_mode == "added":
                scores = scores + mask
        weights = scores.softmax(dim)
        if mask is not None and mask_mode == "after softmax":
            weights = weights * mask
        output = weights @ v  # (..., T_q, d_v)
        if returns == "weights, output":
            return weights, output
        if returns == "output only":
            return output
        if returns == "transposed weights":
            return weights.transpose(-2, -1) @ v, weights
        return output, weights

    return fn


# Correct implementations in different styles: each must pass.
def by_einsum(q, k, v, mask=None):
    scores = torch.einsum("...id,...jd->...ij", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf")))
    weights = scores.softmax(-1)
    return torch.einsum("...ij,...jd->...id", weights, v), weights


def by_loops(q, k, v, mask=None):
    """Row by row, over flattened leading axes: slow and clear."""
    lead = q.shape[:-2]
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool) if mask is None else mask
    mask = mask.expand(*lead, q.shape[-2], k.shape[-2]).reshape(-1, q.shape[-2], k.shape[-2])
    qs, ks, vs = (t.reshape(-1, *t.shape[-2:]) for t in (q, k, v))
    outs, weights = [], []
    for qb, kb, vb, mb in zip(qs, ks, vs, mask, strict=True):
        rows_o, rows_w = [], []
        for i in range(qb.shape[0]):
            s = torch.stack([qb[i] @ kb[j] for j in range(kb.shape[0])]) / math.sqrt(qb.shape[-1])
            w = torch.softmax(s.masked_fill(~mb[i], float("-inf")), 0)
            rows_w.append(w)
            rows_o.append(w @ vb)
        outs.append(torch.stack(rows_o))
        weights.append(torch.stack(rows_w))
    return (
        torch.stack(outs).reshape(*lead, q.shape[-2], v.shape[-1]),
        torch.stack(weights).reshape(*lead, q.shape[-2], k.shape[-2]),
    )


def with_torch_kernel(q, k, v, mask=None):
    """PyTorch's own kernel for the output (bool mask: True = take part), weights alongside."""
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return output, scores.softmax(-1)


CORRECT = {
    "tutorial_lib": scaled_dot_product_attention,
    "by hand": attention(),
    "mask with -1e9": attention(mask_mode="big negative"),
    "einsum": by_einsum,
    "loops": by_loops,
    "torch kernel": with_torch_kernel,
    "float64": lambda q, k, v, mask=None: scaled_dot_product_attention(
        q.double(), k.double(), v.double(), mask
    ),
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_attention_passes(name):
    assert check_attention(CORRECT[name]) is None


def only_4d(q, k, v, mask=None):
    B, H, T_q, d_k = q.shape  # fails on 3-D inputs
    return scaled_dot_product_attention(q, k, v, mask)


# name -> (wrong implementation, what the feedback must say)
WRONG = {
    "missing scaling": (attention(scale=lambda d_k: 1.0), r"missing scaling.*1/√d_k"),
    "scale 1/d_k": (attention(scale=lambda d_k: 1 / d_k), r"wrong scale 1/d_k"),
    "scale multiplied": (attention(scale=math.sqrt), r"multiplied instead of divided"),
    "scale 1/√T_k": (
        lambda q, k, v, mask=None: scaled_dot_product_attention(
            q, k, v, mask, scale=1 / math.sqrt(k.shape[-2])
        ),
        r"wrong scale 1/√T_k.*number of keys",
    ),
    "scale 1/√d_v": (
        lambda q, k, v, mask=None: scaled_dot_product_attention(
            q, k, v, mask, scale=1 / math.sqrt(v.shape[-1])
        ),
        r"wrong scale 1/√d_v",
    ),
    "mask ignored": (attention(mask_mode="ignored"), r"mask ignored"),
    "mask flipped": (attention(mask_mode="flipped"), r"flipped mask.*True means \*may attend\*"),
    "mask filled with 0": (attention(mask_mode="zero"), r"mask filled with 0"),
    "mask added": (attention(mask_mode="added"), r"mask added to the scores"),
    "mask after softmax": (attention(mask_mode="after softmax"), r"after the softmax"),
    "softmax over queries": (attention(dim=-2), r"wrong axis \(dim=-2\).*queries"),
    "softmax over heads": (attention(dim=1), r"wrong axis \(dim=1\).*heads"),
    "softmax over the batch": (attention(dim=0), r"wrong axis \(dim=0\).*batch"),
    "results swapped": (attention(returns="weights, output"), r"returned \(weights, output\)"),
    "weights not returned": (attention(returns="output only"), r"should return two tensors"),
    "weights transposed for the output": (
        attention(returns="transposed weights"),
        r"raised RuntimeError.*shapes inside your function do not fit",
    ),
    "two mistakes at once": (
        attention(scale=lambda d_k: 1.0, dim=-2),
        r"sum to 1 over the queries",
    ),
    "no mask argument": (
        lambda q, k, v: scaled_dot_product_attention(q, k, v),
        r"calls fn\(q, k, v, mask=mask\), but <lambda>\(q, k, v\) cannot be called",
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
        r"weights \(for .*\) are right, but the output differs",
    ),
    "only 4-D inputs": (only_4d, r"with q \(3, 4, 8\).*raised ValueError"),
    "NaN from a negative root": (
        attention(scale=lambda d_k: 1 / math.sqrt(d_k) * float("nan")),
        r"contains NaN or inf",
    ),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_each_mistake_is_caught_and_named(name):
    fn, feedback = WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_attention: ") as caught:
        check_attention(fn)
    assert re.search(feedback, str(caught.value), flags=re.S), str(caught.value)


def test_the_scalings_give_clearly_different_weights_in_every_config():
    # A checker whose scores are far apart passes them all: its softmax is one-hot anyway.
    for config in EVERY_CONFIG:
        x = attention_check_inputs(config=config)
        d_k, T_k = x["q"].shape[-1], x["k"].shape[-2]
        scales = (1.0, 1 / math.sqrt(d_k), 1 / d_k, 1 / math.sqrt(T_k))
        weights = [scaled_dot_product_attention(x["q"], x["k"], x["v"], scale=s)[1] for s in scales]
        for i in range(len(weights)):
            for j in range(i + 1, len(weights)):
                assert (weights[i] - weights[j]).abs().max() > 0.05  # 5,000 x the tolerance


@pytest.mark.parametrize("config", EVERY_CONFIG)
def test_every_mask_and_its_opposite_leave_every_query_a_key(config):
    x = attention_check_inputs(config=config)
    T_q, T_k = x["q"].shape[-2], x["k"].shape[-2]
    mask = x["mask"].expand(*x["q"].shape[:-2], T_q, T_k)
    assert mask.any(-1).all() and (~mask).any(-1).any()


def test_inputs_separate_every_dimension():
    for config in [0, 1, *OTHER_CONFIGS[:2]]:
        x = attention_check_inputs(config=config)
        T_q, T_k, d_k, d_v = x["q"].shape[-2], x["k"].shape[-2], x["q"].shape[-1], x["v"].shape[-1]
        assert len({T_q, T_k, d_k, d_v}) == 4


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 20.0))
def test_any_other_scale_fails(scale):
    # The right scale differs in each config, so no constant passes them all.
    with pytest.raises(AssertionError):
        check_attention(attention(scale=lambda d_k: scale))

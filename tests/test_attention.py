"""tutorial_lib.attention against PyTorch's own attention, and its errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tests.conftest import rand
from tutorial_lib.attention import (
    MultiHeadAttention,
    ScaledDotProductAttention,
    attention_scores,
    causal_mask,
    masked_softmax,
    padding_mask,
    scaled_dot_product_attention,
)

# -- the functional form against F.scaled_dot_product_attention ---------------------------


MASKS = {
    "none": lambda B, H, Tq, Tk: None,
    "causal (T_q, T_k)": lambda B, H, Tq, Tk: causal_mask(Tq, Tk),
    "padding (B, 1, 1, T_k)": lambda B, H, Tq, Tk: padding_mask([Tk - b for b in range(B)], Tk)[
        :, None
    ],
    "full (B, H, T_q, T_k)": lambda B, H, Tq, Tk: rand(B, H, Tq, Tk, seed=5) > -0.8,
}


@pytest.mark.parametrize("mask_name", list(MASKS))
@pytest.mark.parametrize("T_q,T_k", [(5, 5), (3, 7), (6, 6)])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_matches_torch_sdpa(mask_name, T_q, T_k, scale):
    B, H, d_k, d_v = 2, 3, 4, 6
    q, k, v = (
        rand(B, H, T_q, d_k, seed=1),
        rand(B, H, T_k, d_k, seed=2),
        rand(B, H, T_k, d_v, seed=3),
    )
    mask = MASKS[mask_name](B, H, T_q, T_k)
    if mask is not None:
        mask = mask.expand(B, H, T_q, T_k).clone()
        mask[..., 0] = True  # torch returns NaN on fully masked rows; compare rows that attend
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    torch.testing.assert_close(out, expected)
    assert weights.shape == (B, H, T_q, T_k)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T_q, dtype=torch.float64))


def test_default_scale_is_one_over_sqrt_dk():
    q, k = rand(1, 4, 16, seed=1), rand(1, 5, 16, seed=2)
    torch.testing.assert_close(attention_scores(q, k), q @ k.transpose(-2, -1) / 4.0)


def test_masked_keys_get_exactly_zero_weight():
    q, k, v = rand(2, 4, 8, seed=1), rand(2, 6, 8, seed=2), rand(2, 6, 3, seed=3)
    mask = padding_mask([6, 2], 6)  # (B, 1, T_k)
    _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert torch.all(weights[1, :, 2:] == 0)
    assert torch.all(weights[0] > 0)


def test_fully_masked_row_gives_zero_weights_output_and_finite_gradients():
    q = rand(1, 3, 4, seed=1).requires_grad_()
    k, v = rand(1, 5, 4, seed=2), rand(1, 5, 2, seed=3)
    mask = torch.ones(1, 3, 5, dtype=torch.bool)
    mask[0, 1] = False  # query 1 may attend to nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert torch.all(weights[0, 1] == 0) and torch.all(out[0, 1] == 0)
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(q.grad).all()
    assert torch.all(q.grad[0, 1] == 0)


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 9), i=st.integers(0, 8), seed=st.integers(0, 10_000))
def test_causal_mask_never_lets_the_past_see_the_future(T, i, seed):
    """Changing token j never changes the output at any position before j."""
    j = i % T
    q, k, v = rand(1, T, 4, seed=seed), rand(1, T, 4, seed=seed + 1), rand(1, T, 3, seed=seed + 2)
    out, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(T))
    k2, v2 = k.clone(), v.clone()
    k2[:, j:] += rand(1, T - j, 4, seed=seed + 3)
    v2[:, j:] += rand(1, T - j, 3, seed=seed + 4)
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask=causal_mask(T))
    torch.testing.assert_close(out[:, :j], out2[:, :j], rtol=0, atol=0)
    assert torch.all(weights.triu(diagonal=1) == 0)


def test_causal_mask_with_cache_offset():
    m = causal_mask(2, 5)
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


# -- the module forms ------------------------------------------------------------------------


def copy_into_torch_mha(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    theirs = nn.MultiheadAttention(ours.d_model, ours.n_head, bias=False, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.w_qs.weight, ours.w_ks.weight, ours.w_vs.weight])
        )
        theirs.out_proj.weight.copy_(ours.fc.weight)
    return theirs.double().eval()


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal", "per-query"])
@pytest.mark.parametrize("T_q,T_k", [(5, 5), (4, 7)])
def test_multihead_matches_torch_multihead(mask_kind, T_q, T_k):
    torch.manual_seed(0)
    B, D, H = 3, 12, 4
    ours = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).double().eval()
    theirs = copy_into_torch_mha(ours)
    q, k, v = rand(B, T_q, D, seed=1), rand(B, T_k, D, seed=2), rand(B, T_k, D, seed=3)
    mask = {
        "none": None,
        "padding": padding_mask([T_k, T_k - 1, 2], T_k),  # (B, 1, T_k)
        "causal": causal_mask(T_q, T_k) if T_q <= T_k else None,
        "per-query": rand(B, T_q, T_k, seed=9) > -0.5,
    }[mask_kind]
    if mask is not None:
        mask = mask.expand(B, T_q, T_k).clone()
        mask[..., 0] = True
    out, attn = ours(q, k, v, mask=mask)
    # torch's boolean attn_mask means "blocked", one (T_q, T_k) map per batch element and head.
    attn_mask = None if mask is None else (~mask).repeat_interleave(H, dim=0)
    expected, expected_attn = theirs(
        q, k, v, attn_mask=attn_mask, need_weights=True, average_attn_weights=False
    )
    torch.testing.assert_close(out, ours.layer_norm(expected + q))
    torch.testing.assert_close(attn, expected_attn)


def test_multihead_heads_times_dk_need_not_equal_d_model():
    B, T_q, T_k, D, H, d_k, d_v = 2, 3, 6, 10, 3, 7, 5
    mha = MultiHeadAttention(H, D, d_k, d_v, dropout=0.0).eval()
    out, attn = mha(torch.randn(B, T_q, D), torch.randn(B, T_k, D), torch.randn(B, T_k, D))
    assert out.shape == (B, T_q, D)
    assert attn.shape == (B, H, T_q, T_k)
    assert mha.w_qs.weight.shape == (H * d_k, D) and mha.w_vs.weight.shape == (H * d_v, D)


def test_gradients_reach_every_weight():
    torch.manual_seed(0)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    out, _ = mha(x, memory, memory)
    out.pow(2).sum().backward()
    for name, p in mha.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_sdpa_module_keeps_last_weights_and_applies_temperature():
    attention = ScaledDotProductAttention(temperature=2.0, attn_dropout=0.0)
    q, k, v = rand(1, 3, 4, seed=1), rand(1, 3, 4, seed=2), rand(1, 3, 2, seed=3)
    out, attn = attention(q, k, v)
    expected, weights = scaled_dot_product_attention(q, k, v, scale=0.5)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(attention.attn, weights)


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.5)
    x = torch.randn(1, 6, 8)
    mha.eval()
    torch.testing.assert_close(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.train()
    assert not torch.allclose(mha(x, x, x)[0], mha(x, x, x)[0])


# -- bad input is a teaching moment ----------------------------------------------------------


@pytest.mark.parametrize(
    "q,k,v,mask,message",
    [
        (rand(4), rand(3, 4), rand(3, 2), None, r"at least 2 dimensions.*q of shape \(4\)"),
        (rand(2, 3, 4), rand(2, 3, 5), rand(2, 3, 2), None, r"d_k=4.*d_k=5"),
        (rand(2, 3, 4), rand(2, 5, 4), rand(2, 6, 2), None, r"T_k=5.*T_k=6"),
        (rand(2, 3, 4), rand(3, 5, 4), rand(3, 5, 2), None, r"leading dimensions"),
        (
            rand(2, 3, 4),
            rand(2, 5, 4),
            rand(2, 5, 2),
            torch.ones(2, 3, 4, dtype=torch.bool),
            r"mask of shape \(2, 3, 4\) does not fit the scores' shape \(2, 3, 5\)",
        ),
    ],
)
def test_functional_errors_name_expected_and_given(q, k, v, mask, message):
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(q, k, v, mask=mask)


def test_a_mask_that_is_not_boolean_is_a_type_error():
    q, k, v = rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 2)
    with pytest.raises(TypeError, match=r"mask must be a boolean tensor.*got dtype torch.float32"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 5))


@pytest.mark.parametrize(
    "args,message",
    [
        (
            (0, 8, 4, 4),
            r"n_head must be a positive integer \(H, the number of heads\); got n_head=0",
        ),
        ((-2, 8, 4, 4), r"n_head=-2"),
        ((2, 8, 0, 4), r"d_k must be a positive integer; got d_k=0"),
        ((2, 8, 4, -1), r"d_v=-1"),
        ((2, 0, 4, 4), r"d_model=0"),
    ],
)
def test_multihead_constructor_errors(args, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(*args)


@pytest.mark.parametrize(
    "shapes,mask,message",
    [
        (
            ((2, 8), (2, 8), (2, 8)),
            None,
            r"q of shape \(B, T, D\).*got q of shape \(2, 8\), which is 2-D",
        ),
        (((2, 3, 6), (2, 3, 8), (2, 3, 8)), None, r"D = d_model = 8.*\(2, 3, 6\), so D = 6"),
        (((2, 3, 8), (2, 4, 8), (2, 5, 8)), None, r"same length T_k"),
        (((2, 3, 8), (1, 4, 8), (1, 4, 8)), None, r"batch size B"),
        (
            ((2, 3, 8), (2, 4, 8), (2, 4, 8)),
            torch.ones(2, 3, 5, dtype=torch.bool),
            r"broadcast to \(B, T_q, T_k\) = \(2, 3, 4\).*\(2, 3, 5\)",
        ),
    ],
)
def test_multihead_forward_errors(shapes, mask, message):
    mha = MultiHeadAttention(2, 8, 4, 4)
    q, k, v = (torch.randn(*s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        mha(q, k, v, mask=mask)


def test_mask_helpers_errors():
    with pytest.raises(ValueError, match="T_q=5, T_k=3"):
        causal_mask(5, 3)
    with pytest.raises(ValueError, match="between 0 and T=4"):
        padding_mask([2, 5], 4)


def test_masked_softmax_without_mask_is_softmax():
    s = rand(2, 3, 4)
    torch.testing.assert_close(masked_softmax(s), torch.softmax(s, -1))
    assert math.isclose(masked_softmax(s).sum().item(), 6.0, rel_tol=1e-12)


# -- issue 18: masks that cannot be misread, scalars and types checked ------------------------


def test_a_padding_mask_given_as_2d_when_B_equals_T_q_is_refused_not_misread():
    """The reported case: B = T_q = 2, a (B, T_k) padding mask was read as (T_q, T_k)."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0).eval()
    x, memory = torch.randn(2, 2, 8), torch.randn(2, 5, 8)
    padding = padding_mask([5, 2], 5)[:, 0]  # (B, T_k)
    with pytest.raises(ValueError, match=r"B = T_q = 2.*misread.*padding\[:, None\]"):
        mha(x, memory, memory, mask=padding)
    # The two unambiguous ways give the right answer: no weight on the padded keys.
    _, by_argument = mha(x, memory, memory, key_padding_mask=padding)
    _, by_rank = mha(x, memory, memory, mask=padding[:, None])
    assert by_argument[1, :, :, 2:].abs().max() == 0
    torch.testing.assert_close(by_argument, by_rank)


def test_a_2d_padding_mask_that_cannot_be_T_q_by_T_k_points_to_key_padding_mask():
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0)
    x, memory = torch.randn(3, 4, 8), torch.randn(3, 5, 8)
    with pytest.raises(ValueError, match="key_padding_mask="):
        mha(x, memory, memory, mask=padding_mask([5, 2, 1], 5)[:, 0])
    with pytest.raises(ValueError, match=r"key_padding_mask must be \(B, T_k\) = \(3, 5\)"):
        mha(x, memory, memory, key_padding_mask=torch.ones(3, 4, dtype=torch.bool))


def test_key_padding_mask_matches_torch_multihead_attention():
    torch.manual_seed(0)
    B, T_q, T_k, D, H = 3, 4, 6, 12, 3
    ours = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).double().eval()
    theirs = copy_into_torch_mha(ours)
    q, k, v = rand(B, T_q, D, seed=1), rand(B, T_k, D, seed=2), rand(B, T_k, D, seed=3)
    real = padding_mask([6, 3, 1], T_k)[:, 0]  # (B, T_k), True = a real key
    causal = causal_mask(T_q, T_k)
    out, attn = ours(q, k, v, mask=causal, key_padding_mask=real)
    # torch's masks mean "blocked": the opposite sense.
    expected, expected_attn = theirs(
        q, k, v, key_padding_mask=~real, attn_mask=~causal, average_attn_weights=False
    )
    torch.testing.assert_close(out, ours.layer_norm(expected + q))
    torch.testing.assert_close(attn, expected_attn)


@pytest.mark.parametrize(
    "mask",
    [
        causal_mask(5),  # (T_q, T_k), as chapter Q1 passes it
        padding_mask([5, 3], 5),  # (B, 1, T_k), as chapter Q5 passes it
        causal_mask(5) & padding_mask([5, 3], 5),  # (B, T_q, T_k)
        torch.ones(1, 5, dtype=torch.bool),  # (1, T_k)
    ],
)
def test_every_mask_a_chapter_passes_still_works(mask):
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0)
    x = torch.randn(2, 5, 8)
    out, attn = mha(x, x, x, mask=mask)
    assert out.shape == (2, 5, 8) and torch.isfinite(out).all()
    blocked = ~mask.expand(2, 5, 5)
    assert (attn.masked_select(blocked[:, None].expand_as(attn)) == 0).all()


def test_functional_padding_mask_without_the_head_axis_is_refused_when_B_equals_H():
    """padding_mask gives (B, 1, T_k); against (B, H, T_q, T_k) scores with B = H it used to
    mask head h with sequence h's length."""
    q, k, v = rand(2, 2, 3, 4), rand(2, 2, 5, 4, seed=1), rand(2, 2, 5, 4, seed=2)
    with pytest.raises(ValueError, match=r"does not fit the scores' shape \(2, 2, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=padding_mask([5, 2], 5))
    _, weights = scaled_dot_product_attention(q, k, v, mask=padding_mask([5, 2], 5)[:, None])
    assert weights[1, :, :, 2:].abs().max() == 0 and (weights[0] > 0).all()


def test_functional_2d_mask_is_refused_when_it_could_be_a_padding_mask():
    q, k, v = rand(3, 3, 4), rand(3, 5, 4, seed=1), rand(3, 5, 4, seed=2)
    with pytest.raises(ValueError, match=r"mask\[None\] \(1, T_q, T_k\)"):
        scaled_dot_product_attention(q, k, v, mask=padding_mask([5, 2, 1], 5)[:, 0])
    with pytest.raises(ValueError, match="does not fit"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(5, dtype=torch.bool))  # (T_k,)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: causal_mask(3.0), TypeError, r"T_q must be a non-negative integer; got T_q=3.0"),
        (lambda: causal_mask(True), TypeError, r"T_q .* not True or False"),
        (lambda: causal_mask(3, "4"), TypeError, r"T_k .*got T_k='4'"),
        (lambda: padding_mask([1.5], 2), TypeError, "lengths must be an integer tensor"),
        (lambda: ScaledDotProductAttention(float("nan")), ValueError, "temperature=nan"),
        (lambda: ScaledDotProductAttention(2.0, 1.5), ValueError, "attn_dropout"),
        (lambda: MultiHeadAttention(True, 8, 4, 4), TypeError, "n_head"),
        (lambda: MultiHeadAttention(2, 8, 4, 4, dropout=-0.1), ValueError, "dropout"),
        (lambda: attention_scores(rand(2, 3), rand(2, 3), float("inf")), ValueError, "scale"),
    ],
)
def test_scalars_are_checked(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_numpy_integers_are_integers():
    mha = MultiHeadAttention(np.int64(2), np.int32(8), np.int64(4), np.int64(4), dropout=0.0)
    assert mha(torch.randn(1, 3, 8), torch.randn(1, 3, 8), torch.randn(1, 3, 8))[0].shape == (
        1,
        3,
        8,
    )
    assert causal_mask(np.int64(3)).shape == (3, 3)
    assert padding_mask(np.array([1, 3]), np.int64(3)).shape == (2, 1, 3)


def test_dtypes_are_checked_and_half_precision_works():
    q, k, v = rand(2, 3, 4), rand(2, 5, 4).float(), rand(2, 5, 2)
    with pytest.raises(TypeError, match="share one dtype"):
        scaled_dot_product_attention(q, k, v)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0)
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"q is torch.float64 but MultiHeadAttention's weights"):
        mha(x, x, x)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        out, attn = mha.to(dtype)(x.to(dtype), x.to(dtype), x.to(dtype), mask=causal_mask(3))
        assert out.dtype == attn.dtype == dtype and torch.isfinite(out).all()

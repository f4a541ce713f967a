"""tutorial_lib.attention against PyTorch's attention, the KV cache, and the errors that teach."""

import collections
import math
import os
import sys

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import tutorial_lib
from tests.conftest import rand
from tutorial_lib.attention import (
    Attention,
    KVCache,
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


def test_default_scale_is_one_over_sqrt_dk_and_temperature_is_its_inverse():
    q, k, v = rand(1, 4, 16, seed=1), rand(1, 5, 16, seed=2), rand(1, 5, 3, seed=3)
    torch.testing.assert_close(attention_scores(q, k), q @ k.transpose(-2, -1) / 4.0)
    module = ScaledDotProductAttention(temperature=2.0, attn_dropout=0.0)
    out, weights = module(q, k, v)
    torch.testing.assert_close((out, weights), scaled_dot_product_attention(q, k, v, scale=0.5))
    torch.testing.assert_close(module.weights, weights)  # kept for plotting


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


def test_masked_softmax_without_mask_is_softmax():
    s = rand(2, 3, 4)
    torch.testing.assert_close(masked_softmax(s), torch.softmax(s, -1))
    assert math.isclose(masked_softmax(s).sum().item(), 6.0, rel_tol=1e-12)


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


# -- Attention: against PyTorch, grouped and multi-query ---------------------------------------


def by_torch(layer: Attention, x, context, mask):
    """What F.scaled_dot_product_attention(..., enable_gqa=True) computes with layer's weights."""
    B, T_q, T_k = x.shape[0], x.shape[1], context.shape[1]
    H, H_kv, d_k, d_v = layer.n_head, layer.n_kv_head, layer.d_k, layer.d_v
    q = F.linear(x, layer.w_q.weight).view(B, T_q, H, d_k).transpose(1, 2)
    k = F.linear(context, layer.w_k.weight).view(B, T_k, H_kv, d_k).transpose(1, 2)
    v = F.linear(context, layer.w_v.weight).view(B, T_k, H_kv, d_v).transpose(1, 2)
    attn_mask = None if mask is None else mask.unsqueeze(1)  # one mask for every head
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, enable_gqa=True)
    return F.linear(out.transpose(1, 2).reshape(B, T_q, H * d_v), layer.w_o.weight)


@pytest.mark.parametrize("n_kv_head", [None, 6, 3, 2, 1])
@pytest.mark.parametrize("kind", ["self, causal", "cross, padding"])
def test_attention_matches_torch_with_shared_key_value_heads(n_kv_head, kind):
    torch.manual_seed(0)
    B, T_q, D, H = 3, 5, 24, 6
    layer = Attention(D, H, n_kv_head).double().eval()
    x = rand(B, T_q, D, seed=1)
    if kind == "self, causal":
        context, mask = None, causal_mask(T_q).expand(B, T_q, T_q)
    else:
        context, mask = rand(B, 7, D, seed=2), padding_mask([7, 4, 1], 7)  # (B, 1, T_k)
    out, weights = layer(x, context, mask)
    expected = by_torch(layer, x, x if context is None else context, mask)
    torch.testing.assert_close(out, expected)
    assert weights.shape == (B, H, T_q, T_q if context is None else 7)
    assert layer.w_k.weight.shape == (layer.n_kv_head * layer.d_k, D)


def test_attention_with_every_head_its_own_keys_is_torchs_multihead_attention():
    torch.manual_seed(0)
    B, T_q, T_k, D, H = 2, 4, 6, 12, 3
    ours = Attention(D, H).double().eval()
    theirs = nn.MultiheadAttention(D, H, bias=False, batch_first=True).double().eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
    x, context = rand(B, T_q, D, seed=1), rand(B, T_k, D, seed=2)
    real = padding_mask([6, 3], T_k)[:, 0]  # (B, T_k), True = a real key
    out, weights = ours(x, context, mask=real[:, None])
    expected, expected_weights = theirs(
        x, context, context, key_padding_mask=~real, average_attn_weights=False
    )
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)


def test_query_heads_share_key_value_heads_in_groups():
    """With H_kv = 2 of H = 4, heads 0 and 1 read key/value head 0, heads 2 and 3 head 1."""
    torch.manual_seed(0)
    layer = Attention(8, 4, n_kv_head=2).double()
    with torch.no_grad():  # every query head the same: heads then differ only by their keys
        layer.w_q.weight.copy_(layer.w_q.weight[:2].repeat(4, 1))
    _, weights = layer(rand(1, 5, 8, seed=1))
    torch.testing.assert_close(weights[:, 0], weights[:, 1])
    torch.testing.assert_close(weights[:, 2], weights[:, 3])
    assert not torch.allclose(weights[:, 0], weights[:, 2])


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
def test_a_kv_cache_gives_the_outputs_of_recomputation_and_shrinks_with_fewer_kv_heads(n_kv_head):
    torch.manual_seed(0)
    B, T, D, H = 2, 7, 16, 4
    layer = Attention(D, H, n_kv_head).double().eval()
    x = rand(B, T, D, seed=3)
    full, full_weights = layer(x, mask=causal_mask(T)[None])
    cache = KVCache()
    rows = [layer(x[:, t : t + 1], cache=cache) for t in range(T)]  # one new token a step
    torch.testing.assert_close(torch.cat([out for out, _ in rows], dim=1), full)
    torch.testing.assert_close(rows[-1][1], full_weights[:, :, -1:])
    assert len(cache) == T and cache.k.shape == (B, n_kv_head, T, D // H)
    assert (cache.k.numel() + cache.v.numel()) * (H // n_kv_head) == 2 * B * H * T * (D // H)
    # A prefill of several positions, then one step: the causal mask with T_k > T_q.
    cache = KVCache()
    first, _ = layer(x[:, :4], mask=causal_mask(4)[None], cache=cache)
    rest, _ = layer(x[:, 4:], mask=causal_mask(T - 4, T)[None], cache=cache)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full)


def test_a_kv_cache_follows_its_rows_when_reordered():
    cache = KVCache()
    cache.append(rand(3, 2, 4, 5, seed=1), rand(3, 2, 4, 6, seed=2))
    k, v = cache.k.clone(), cache.v.clone()
    cache.reorder(torch.tensor([2, 2, 0]))
    assert torch.equal(cache.k, k[[2, 2, 0]]) and torch.equal(cache.v, v[[2, 2, 0]])


# -- MultiHeadAttention, the seed's interface, built on Attention ------------------------------


def test_multihead_attention_is_attention_with_the_residual_and_norm_inside():
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 16, 4, 4, dropout=0.0).double().eval()
    assert isinstance(mha, Attention) and mha.w_q is mha.w_qs and mha.w_o is mha.fc
    assert list(mha.state_dict()) == [
        "w_qs.weight", "w_ks.weight", "w_vs.weight", "fc.weight",
        "layer_norm.weight", "layer_norm.bias",
    ]  # fmt: skip
    q, kv = rand(2, 3, 16, seed=1), rand(2, 5, 16, seed=2)
    out, weights = mha(q, kv, kv)
    plain, plain_weights = Attention.forward(mha, q, kv)  # no residual, no norm
    torch.testing.assert_close(out, mha.layer_norm(q + plain))
    torch.testing.assert_close(weights, plain_weights)


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
    out, weights = ours(q, k, v, mask=mask)
    # torch's boolean attn_mask means "blocked", one (T_q, T_k) map per batch element and head.
    attn_mask = None if mask is None else (~mask).repeat_interleave(H, dim=0)
    expected, expected_weights = theirs(
        q, k, v, attn_mask=attn_mask, need_weights=True, average_attn_weights=False
    )
    torch.testing.assert_close(out, ours.layer_norm(expected + q))
    torch.testing.assert_close(weights, expected_weights)


def test_real_keys_is_torchs_key_padding_mask_the_other_way_round():
    torch.manual_seed(0)
    B, T_q, T_k, D, H = 3, 4, 6, 12, 3
    ours = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).double().eval()
    theirs = copy_into_torch_mha(ours)
    q, k, v = rand(B, T_q, D, seed=1), rand(B, T_k, D, seed=2), rand(B, T_k, D, seed=3)
    real = padding_mask([6, 3, 1], T_k)[:, 0]  # (B, T_k), True = a real key
    causal = causal_mask(T_q, T_k)
    out, weights = ours(q, k, v, mask=causal, real_keys=real)
    expected, expected_weights = theirs(
        q, k, v, key_padding_mask=~real, attn_mask=~causal, average_attn_weights=False
    )
    torch.testing.assert_close(out, ours.layer_norm(expected + q))
    torch.testing.assert_close(weights, expected_weights)


def test_multihead_heads_times_dk_need_not_equal_d_model():
    B, T_q, T_k, D, H, d_k, d_v = 2, 3, 6, 10, 3, 7, 5
    mha = MultiHeadAttention(H, D, d_k, d_v, dropout=0.0).eval()
    out, weights = mha(torch.randn(B, T_q, D), torch.randn(B, T_k, D), torch.randn(B, T_k, D))
    assert out.shape == (B, T_q, D) and weights.shape == (B, H, T_q, T_k)
    assert mha.w_qs.weight.shape == (H * d_k, D) and mha.w_vs.weight.shape == (H * d_v, D)


def test_gradients_reach_every_weight():
    torch.manual_seed(0)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    out, _ = mha(x, memory, memory)
    out.pow(2).sum().backward()
    for name, p in mha.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.5)
    x = torch.randn(1, 6, 8)
    mha.eval()
    torch.testing.assert_close(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.train()
    assert not torch.allclose(mha(x, x, x)[0], mha(x, x, x)[0])


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
    out, weights = mha(x, x, x, mask=mask)
    assert out.shape == (2, 5, 8) and torch.isfinite(out).all()
    blocked = ~mask.expand(2, 5, 5)
    assert (weights.masked_select(blocked[:, None].expand_as(weights)) == 0).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_half_and_double_precision_work(dtype):
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0).to(dtype)
    x = torch.randn(2, 3, 8, dtype=dtype)
    out, weights = mha(x, x, x, mask=causal_mask(3))
    assert out.dtype == weights.dtype == dtype and torch.isfinite(out).all()


def test_one_forward_makes_few_python_calls_into_the_library():
    """The checks run once, where the input enters: at most 15 calls of tutorial_lib code."""
    mha = MultiHeadAttention(4, 32, 8, 8, dropout=0.0).eval()
    x, mask = torch.randn(2, 5, 32), causal_mask(5)[None]
    library = os.path.dirname(tutorial_lib.__file__)
    calls = collections.Counter()

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(library):
            calls[frame.f_code.co_name] += 1

    sys.setprofile(count)
    try:
        mha(x, x, x, mask=mask)
    finally:
        sys.setprofile(None)
    assert sum(calls.values()) <= 15, calls


# -- bad input is a teaching moment: what was expected, what was given --------------------------


def test_q_k_and_v_that_do_not_fit_are_named_in_the_books_letters():
    with pytest.raises(ValueError, match=r"q \(\.\.\., T_q, d_k\).*q \(2, 3, 4\), k \(2, 3, 5\)"):
        scaled_dot_product_attention(rand(2, 3, 4), rand(2, 3, 5), rand(2, 3, 2))
    with pytest.raises(
        ValueError, match=r"v \(\.\.\., T_k, d_v\); got .*k \(2, 5, 4\), v \(2, 6, 2\)"
    ):
        scaled_dot_product_attention(rand(2, 3, 4), rand(2, 5, 4), rand(2, 6, 2))


def test_a_mask_that_is_not_boolean_or_does_not_fit_is_refused():
    q, k, v = rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 2)
    with pytest.raises(ValueError, match=r"a torch.float32 mask \(3, 5\).*make it bool"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"mask \(2, 3, 4\) does not read one way.*\(2, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not read one way"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(5, dtype=torch.bool))  # (T_k,)


def test_a_padding_mask_without_the_head_axis_is_refused_when_B_equals_H():
    """padding_mask gives (B, 1, T_k); against (B, H, T_q, T_k) scores with B = H it would mask
    head h with sequence h's length."""
    q, k, v = rand(2, 2, 3, 4), rand(2, 2, 5, 4, seed=1), rand(2, 2, 5, 4, seed=2)
    with pytest.raises(
        ValueError, match=r"mask \(2, 1, 5\) does not read one way .*\(2, 2, 3, 5\)"
    ):
        scaled_dot_product_attention(q, k, v, mask=padding_mask([5, 2], 5))
    _, weights = scaled_dot_product_attention(q, k, v, mask=padding_mask([5, 2], 5)[:, None])
    assert weights[1, :, :, 2:].abs().max() == 0 and (weights[0] > 0).all()


def test_a_2d_padding_mask_when_B_equals_T_q_is_refused_not_misread():
    """B = T_q = 2: a (B, T_k) padding mask has the shape of a (T_q, T_k) map."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0).eval()
    x, memory = torch.randn(2, 2, 8), torch.randn(2, 5, 8)
    padding = padding_mask([5, 2], 5)[:, 0]  # (B, T_k)
    with pytest.raises(ValueError, match=r"\(padding: padding\[:, None\]\).*B = T_q.*misread"):
        mha(x, memory, memory, mask=padding)
    with pytest.raises(ValueError, match=r"padding\[:, None, None\].*B = T_q.*misread"):
        scaled_dot_product_attention(rand(2, 3, 2, 4), rand(2, 3, 5, 4), rand(2, 3, 5, 4), padding)
    # The two unambiguous ways agree, and put no weight on the padded keys.
    _, by_argument = mha(x, memory, memory, real_keys=padding)
    _, by_rank = mha(x, memory, memory, mask=padding[:, None])
    assert by_argument[1, :, :, 2:].abs().max() == 0
    torch.testing.assert_close(by_argument, by_rank)


def test_tokens_of_the_wrong_width_batch_or_length_are_named():
    layer = Attention(8, 2)
    expected = r"Attention takes queries \(B, T_q, D\), keys and values \(B, T_k, D\), D = 8; got "
    with pytest.raises(ValueError, match=expected + r"\(2, 3, 6\)"):
        layer(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match=expected + r"\(2, 8\)"):
        layer(torch.randn(2, 8))
    with pytest.raises(ValueError, match=expected + r"\(2, 3, 8\), \(1, 4, 8\)"):
        layer(torch.randn(2, 3, 8), torch.randn(1, 4, 8))  # two sequences, one context
    mha = MultiHeadAttention(2, 8, 4, 4)
    with pytest.raises(ValueError, match=r"MultiHeadAttention takes.*\(2, 4, 8\), \(2, 5, 8\)"):
        mha(torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"mask \(2, 5\) does not read one way .* \(2, 4\)"):
        mha(torch.randn(2, 3, 8), *[torch.randn(2, 4, 8)] * 2, real_keys=torch.ones(2, 5) > 0)


def test_sizes_that_cannot_make_the_heads_are_refused():
    with pytest.raises(ValueError, match=r"n_head = 6 must be a multiple of n_kv_head = 4"):
        Attention(24, 6, n_kv_head=4)
    with pytest.raises(ValueError, match=r"D = 10 does not split into H = 4 heads; pass d_k, d_v"):
        Attention(10, 4)
    assert Attention(10, 4, d_k=3, d_v=2).w_o.weight.shape == (10, 8)
    for temperature in (0.0, -1.0, float("nan")):
        with pytest.raises(
            ValueError, match=rf"temperature divides the scores.*> 0; got {temperature}"
        ):
            ScaledDotProductAttention(temperature)

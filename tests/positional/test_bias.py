"""Score biases (tutorial_lib.positional.bias): Shaw, Transformer-XL, T5, ALiBi, vs the papers."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import rand
from tutorial_lib.positional import (
    ALiBiBias,
    PositionalAttention,
    ShawRelativePosition,
    T5RelativeBias,
    TransformerXLRelativePosition,
    alibi_slopes,
    relative_position,
    relative_shift,
    t5_relative_bucket,
)


def test_relative_position_convention():
    rel = relative_position(2, 4)  # queries at positions 2 and 3
    assert rel.tolist() == [[-2, -1, 0, 1], [-3, -2, -1, 0]]
    with pytest.raises(ValueError, match="the last T_q of T_k positions; got T_q=5 > T_k=3"):
        relative_position(5, 3)


def test_shaw_against_the_papers_equations():
    B, H, T, d_k, d_v, K = 2, 3, 7, 4, 5, 2
    shaw = ShawRelativePosition(d_k, d_v, K).double()
    q, k, v = rand(B, H, T, d_k, seed=1), rand(B, H, T, d_k, seed=2), rand(B, H, T, d_v, seed=3)
    attn = PositionalAttention(math.sqrt(d_k), 0.0, bias=shaw)
    out, w = attn(q, k, v)
    # e_ij = q_i (k_j + a^K_ij)^T / sqrt(d_k);  z_i = sum_j w_ij (v_j + a^V_ij), pair by pair.
    e = torch.empty(B, H, T, T, dtype=torch.float64)
    for i in range(T):
        for j in range(T):
            r = max(-K, min(K, j - i)) + K
            e[..., i, j] = (q[..., i, :] * (k[..., j, :] + shaw.a_k[r])).sum(-1) / math.sqrt(d_k)
    w_ref = e.softmax(-1)
    z = torch.zeros(B, H, T, d_v, dtype=torch.float64)
    for i in range(T):
        for j in range(T):
            r = max(-K, min(K, j - i)) + K
            z[..., i, :] += w_ref[..., i, j, None] * (v[..., j, :] + shaw.a_v[r])
    torch.testing.assert_close(w, w_ref)
    torch.testing.assert_close(out, z)


def test_relative_shift_against_indexing():
    for T_q, T_k in [(1, 1), (1, 5), (4, 4), (3, 7)]:
        full = rand(2, T_q, T_q + T_k - 1, seed=T_q + T_k)
        col = (T_q - 1) - torch.arange(T_q)[:, None] + torch.arange(T_k)[None, :]  # (T_q, T_k)
        torch.testing.assert_close(
            relative_shift(full, T_k), full[:, torch.arange(T_q)[:, None], col]
        )
    with pytest.raises(ValueError, match="T_q \\+ T_k - 1"):
        relative_shift(torch.zeros(3, 5), 4)


@pytest.mark.parametrize("T_q,T_k", [(5, 5), (2, 6)])
def test_transformer_xl_shift_trick_equals_the_four_terms(T_q, T_k):
    B, H, d_k = 2, 3, 4
    xl = TransformerXLRelativePosition(H, d_k, d_pos=10).double()
    with torch.no_grad():
        xl.u.normal_()
        xl.v.normal_()
    q, k = rand(B, H, T_q, d_k, seed=4), rand(B, H, T_k, d_k, seed=5)
    terms = xl.four_terms(q, k)
    torch.testing.assert_close(terms["a"], q @ k.transpose(-2, -1))
    scale = 0.5
    torch.testing.assert_close(xl(q, k, scale), scale * (terms["b"] + terms["c"] + terms["d"]))
    torch.testing.assert_close(xl.position_terms(q, k, scale), scale * (terms["b"] + terms["d"]))
    with pytest.raises(ValueError, match=r"made for H = n_head = 3 heads.*got q \(2, 2, "):
        xl(q[:, :2], k[:, :2], scale)


T5_KNOWN = {  # (relative position, bidirectional) -> bucket, derived by hand from T5's rule
    (0, True): 0, (-3, True): 3, (3, True): 19, (-7, True): 7, (-8, True): 8,
    (-12, True): 9, (-20, True): 10, (-50, True): 13, (50, True): 29, (-100, True): 15,
    (-127, True): 15, (-128, True): 15, (-1000, True): 15, (1000, True): 31,
    (5, False): 0, (0, False): 0, (-5, False): 5, (-20, False): 17, (-100, False): 30,
    (-127, False): 31, (-200, False): 31,
}  # fmt: skip


def test_t5_buckets_known_values():
    rel = torch.tensor([r for r, _ in T5_KNOWN])
    for bidirectional in (True, False):
        got = t5_relative_bucket(rel, bidirectional=bidirectional)
        for (r, bi), expected in T5_KNOWN.items():
            if bi == bidirectional:
                assert got[rel.tolist().index(r)].item() == expected, (r, bi)


@settings(max_examples=25, deadline=None)
@given(
    num_buckets=st.sampled_from([8, 16, 32, 64]),
    max_distance=st.sampled_from([16, 64, 128, 512]),
    bidirectional=st.booleans(),
)
def test_t5_buckets_monotone_and_saturating(num_buckets, max_distance, bidirectional):
    exact = num_buckets // 4 if bidirectional else num_buckets // 2
    if max_distance <= exact:  # no room for log-spaced buckets: refused
        with pytest.raises(ValueError, match="max_distance"):
            t5_relative_bucket(torch.tensor([1]), bidirectional, num_buckets, max_distance)
        return
    distance = torch.arange(0, 4 * max_distance)
    for sign in (-1, 1) if bidirectional else (-1,):
        b = t5_relative_bucket(sign * distance, bidirectional, num_buckets, max_distance)
        assert (b[1:] >= b[:-1]).all()  # never decreases as |distance| grows
        assert (b[max_distance:] == b[-1]).all()  # one bucket for everything past max_distance
        n = num_buckets // 2 if bidirectional else num_buckets
        offset = n if bidirectional and sign > 0 else 0
        assert b[1 : n // 2].tolist() == (offset + distance[1 : n // 2]).tolist()  # exact when near
        assert b.max() < num_buckets
    if bidirectional:  # the two directions never share a bucket (except distance 0)
        before = set(t5_relative_bucket(-distance, True, num_buckets, max_distance).tolist())
        after = set(t5_relative_bucket(distance[1:], True, num_buckets, max_distance).tolist())
        assert not before & after
    else:
        assert (t5_relative_bucket(distance, False, num_buckets, max_distance) == 0).all()


def test_t5_bias_looks_up_its_table():
    t5 = T5RelativeBias(n_head=2, bidirectional=True, num_buckets=8, max_distance=16)
    bias = t5(torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4), 1.0)
    assert bias.shape == (2, 5, 5)
    assert bias[1, 3, 1].item() == t5.table[t5_relative_bucket(torch.tensor(-2), True, 8, 16), 1]
    with pytest.raises(ValueError, match="num_buckets"):
        t5_relative_bucket(torch.tensor([1]), num_buckets=2)


def test_alibi_slopes_follow_the_paper():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0**-h for h in range(1, 9)]))
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([2.0**-h for h in (2, 4, 6, 8)]))
    # 6 heads: the 4-head slopes, then every other slope of the 8-head sequence.
    expected = [2.0**-h for h in (2, 4, 6, 8)] + [2.0**-1, 2.0**-3]
    torch.testing.assert_close(alibi_slopes(6), torch.tensor(expected))


@pytest.mark.parametrize("n_head", [1, 2, 4, 16, 32])
def test_alibi_slopes_are_geometric_for_powers_of_two(n_head):
    s = alibi_slopes(n_head).double()
    start = 2 ** (-8 / n_head)
    torch.testing.assert_close(s, start ** torch.arange(1, n_head + 1, dtype=torch.float64))


@pytest.mark.parametrize("n_head", [3, 5, 6, 7, 12, 20])
def test_alibi_slopes_other_head_counts(n_head):
    s = alibi_slopes(n_head)
    assert s.shape == (n_head,) and len(set(s.tolist())) == n_head
    p = 2 ** math.floor(math.log2(n_head))
    torch.testing.assert_close(s[:p], alibi_slopes(p))
    torch.testing.assert_close(s[p:], alibi_slopes(2 * p)[0::2][: n_head - p])


def test_alibi_bias_values():
    alibi = ALiBiBias(n_head=2)
    bias = alibi(torch.zeros(1, 2, 4, 3), torch.zeros(1, 2, 4, 3), 1.0)
    slopes = alibi_slopes(2)
    for i in range(4):
        for j in range(i + 1):
            torch.testing.assert_close(bias[:, i, j], -slopes * (i - j))
    symmetric = ALiBiBias(n_head=2, causal=False)(
        torch.zeros(1, 2, 4, 3), torch.zeros(1, 2, 4, 3), 1
    )
    torch.testing.assert_close(symmetric, symmetric.transpose(-2, -1))


def test_transformer_xl_refuses_more_queries_than_keys_like_every_other_bias():
    xl = TransformerXLRelativePosition(2, 4)
    with pytest.raises(ValueError, match="the last T_q of T_k positions; got T_q=5 > T_k=3"):
        xl(rand(1, 2, 5, 4), rand(1, 2, 3, 4), 0.5)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: T5RelativeBias(2, num_buckets=3), r"num_buckets >= 4 \(bidirectional=True\)"),
        (lambda: T5RelativeBias(2, max_distance=8), r"above the 8 exactly-bucketed.*=8"),
        (lambda: t5_relative_bucket(torch.arange(3), False, 1, 4), r"num_buckets >= 2"),
        (
            lambda: TransformerXLRelativePosition(3, 3)(rand(1, 3, 2, 3), rand(1, 3, 2, 3), 1.0),
            r"sinusoids need an even width and base > 0; got 9",
        ),
    ],
)
def test_bucket_and_sinusoid_settings_that_cannot_work_are_refused(make, words):
    """T5's log-spaced buckets need an exact bucket and a max_distance past it (else the bucket
    formula divides by log 1 = 0); Transformer-XL's sinusoids come in pairs."""
    with pytest.raises(ValueError, match=words):
        make()


@pytest.mark.parametrize(
    "bias",
    [lambda: ALiBiBias(4), lambda: T5RelativeBias(4), lambda: TransformerXLRelativePosition(4, 8)],
)
def test_a_bias_made_for_another_head_count_is_refused(bias):
    from tutorial_lib.attention import MultiHeadAttention
    from tutorial_lib.positional import with_positions

    q = rand(1, 2, 5, 8)  # (B, H, T, d_k) with H = 2
    with pytest.raises(ValueError, match=r"made for H = n_head = 4 heads"):
        bias()(q, q, 0.5)
    with pytest.raises(ValueError, match="n_head = 4, but the attention has n_head = 2"):
        with_positions(MultiHeadAttention(2, 16, 8, 8), bias=bias())
    with pytest.raises(ValueError, match=r"\(\.\.\., H, T, d_k\)"):
        bias()(rand(5, 8), rand(5, 8), 0.5)  # no head axis: (H, T, T) would broadcast the scores


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_alibi_and_t5_work_in_half_precision(dtype):
    q = rand(1, 4, 6, 8).to(dtype)
    for bias in (ALiBiBias(4), T5RelativeBias(4).to(dtype)):
        out, _ = PositionalAttention(math.sqrt(8), 0.0, bias=bias)(q, q, q)
        assert out.dtype == dtype and torch.isfinite(out).all()

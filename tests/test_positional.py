"""tutorial_lib.positional: each variant against its paper's definition, properties, errors."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib.attention import MultiHeadAttention, ScaledDotProductAttention, causal_mask
from tutorial_lib.positional import (
    ALiBiBias,
    LearnedPositionalEmbedding,
    PositionalAttention,
    ReRoPE,
    RoPE,
    ShawRelativePosition,
    SinusoidalPositionalEncoding,
    T5RelativeBias,
    TransformerXLRelativePosition,
    alibi_slopes,
    apply_rope,
    relative_position,
    relative_shift,
    rerope_positions,
    rope_layout_permutation,
    sinusoidal_encoding,
    sinusoidal_frequencies,
    sinusoidal_shift_matrix,
    t5_relative_bucket,
    with_positions,
)


def rand(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


# -- 1. absolute encodings -----------------------------------------------------------------


def test_sinusoidal_matches_the_papers_formula():
    T, D = 50, 16
    pe = sinusoidal_encoding(T, D)
    assert pe.shape == (T, D) and pe.dtype == torch.float32
    for p in range(T):
        for i in range(D // 2):
            angle = p / 10000 ** (2 * i / D)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_base_and_wavelengths():
    pe = sinusoidal_encoding(10, 8, base=100.0)
    torch.testing.assert_close(pe[3, 2], torch.tensor(math.sin(3 / 100 ** (2 / 8))))
    omega = sinusoidal_frequencies(512)
    ratios = omega[:-1] / omega[1:]
    torch.testing.assert_close(ratios, torch.full_like(ratios, 10000 ** (2 / 512)))
    assert 2 * math.pi / omega[-1].item() < 2 * math.pi * 10000  # the paper's "up to 10000*2pi"


@pytest.mark.parametrize("d_model", [7, 0, -2])
def test_sinusoidal_rejects_odd_or_empty_width(d_model):
    with pytest.raises(ValueError, match="positive even integer"):
        sinusoidal_encoding(10, d_model)


@settings(max_examples=30, deadline=None)
@given(k=st.integers(-50, 50), half=st.integers(1, 16), base=st.sampled_from([100.0, 1e4, 1e6]))
def test_shift_property(k, half, base):
    D, T = 2 * half, 120
    pe = sinusoidal_encoding(T + 60, D, base).double()
    M = sinusoidal_shift_matrix(k, D, base)
    p = torch.arange(60, T)  # p and p + k both inside the table
    torch.testing.assert_close(pe[p] @ M.T, pe[p + k], atol=1e-6, rtol=0)
    torch.testing.assert_close(M @ M.T, torch.eye(D, dtype=torch.float64))  # a rotation


@settings(max_examples=30, deadline=None)
@given(a=st.integers(-40, 40), b=st.integers(-40, 40), half=st.integers(1, 8))
def test_shift_matrices_compose(a, b, half):
    D = 2 * half
    torch.testing.assert_close(
        sinusoidal_shift_matrix(a, D) @ sinusoidal_shift_matrix(b, D),
        sinusoidal_shift_matrix(a + b, D),
    )


def test_sinusoidal_module_adds_the_encoding_for_any_length():
    module = SinusoidalPositionalEncoding(8, max_len=16)
    x = rand(2, 40, 8, dtype=torch.float32)  # longer than the cached buffer
    torch.testing.assert_close(module(x), x + sinusoidal_encoding(40, 8))
    assert not list(module.parameters())


def test_learned_table_adds_its_rows_and_trains():
    module = LearnedPositionalEmbedding(max_len=10, d_model=4)
    x = rand(3, 6, 4, dtype=torch.float32)
    out = module(x)
    torch.testing.assert_close(out, x + module.table[:6])
    out.sum().backward()
    assert module.table.grad[:6].abs().sum() > 0 and module.table.grad[6:].abs().sum() == 0


def test_learned_table_refuses_positions_past_max_len():
    module = LearnedPositionalEmbedding(max_len=8, d_model=4)
    with pytest.raises(ValueError, match=r"T=9.*max_len=8.*cannot extrapolate"):
        module(torch.zeros(1, 9, 4))


@pytest.mark.parametrize("shape", [(4, 8), (1, 5, 6), (1, 5, 8, 1)])
def test_absolute_encodings_check_shapes(shape):
    for module in (SinusoidalPositionalEncoding(8), LearnedPositionalEmbedding(16, 8)):
        with pytest.raises(ValueError, match=r"\(B, T, D\)"):
            module(torch.zeros(shape))


def _perm_equivariance_error(add_positions: bool, perm: torch.Tensor) -> float:
    torch.manual_seed(0)
    D = 16
    mha = MultiHeadAttention(4, D, 4, 4, dropout=0.0).eval()
    x = rand(1, len(perm), D, seed=3, dtype=torch.float32)
    enc = SinusoidalPositionalEncoding(D)

    def run(tokens):
        return mha(*(3 * [enc(tokens) if add_positions else tokens]))[0]

    with torch.no_grad():
        return (run(x[:, perm]) - run(x)[:, perm]).abs().max().item()


@settings(max_examples=20, deadline=None)
@given(st.permutations(list(range(6))))
def test_self_attention_without_positions_is_permutation_equivariant(perm):
    assert _perm_equivariance_error(False, torch.tensor(perm)) < 1e-5


def test_positions_break_the_symmetry():
    swap = torch.tensor([3, 1, 2, 0, 4, 5])  # 猫爱吃鱼 -> 鱼爱吃猫
    assert _perm_equivariance_error(True, swap) > 1e-2


# -- 2. score biases ----------------------------------------------------------------------


def test_relative_position_convention():
    rel = relative_position(2, 4)  # queries at positions 2 and 3
    assert rel.tolist() == [[-2, -1, 0, 1], [-3, -2, -1, 0]]
    with pytest.raises(ValueError, match="T_q <= T_k"):
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
    with pytest.raises(ValueError, match=r"\(\.\.\., H, T, d_k\)"):
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
    with pytest.raises(ValueError, match="n_head"):
        alibi_slopes(0)


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


# -- 3. rotations -------------------------------------------------------------------------


def test_rope_is_multiplication_by_complex_exponentials():
    x, pos, d = rand(3, 6, 8, seed=6), torch.arange(6), 8
    z = torch.complex(x[..., 0::2], x[..., 1::2])  # pair i as x_2i + i x_2i+1
    theta = pos[:, None].double() * 10000 ** (-torch.arange(0, d, 2).double() / d)
    rotated = z * torch.polar(torch.ones_like(theta), theta)
    expected = torch.stack([rotated.real, rotated.imag], -1).flatten(-2)
    torch.testing.assert_close(apply_rope(x, pos), expected)
    torch.testing.assert_close(apply_rope(x, pos).norm(dim=-1), x.norm(dim=-1))


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 2000),
    n=st.integers(0, 2000),
    shift=st.integers(-500, 500),
    half=st.integers(1, 16),
    layout=st.sampled_from(["interleaved", "half"]),
)
def test_rope_scores_depend_only_on_n_minus_m(m, n, shift, half, layout):
    d = 2 * half
    q, k = rand(d, seed=7), rand(d, seed=8)
    m2, n2 = m + shift + 500, n + shift + 500

    def score(a, b):
        return (
            apply_rope(q[None], torch.tensor([a]), layout=layout)[0]
            @ apply_rope(k[None], torch.tensor([b]), layout=layout)[0]
        )

    torch.testing.assert_close(score(m, n), score(m2, n2), atol=1e-9, rtol=1e-9)


def test_rope_layouts_are_a_permutation_apart():
    d = 10
    p = rope_layout_permutation(d)
    assert p.tolist() == [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]
    x, pos = rand(2, 7, d, seed=9), torch.arange(7)
    torch.testing.assert_close(
        apply_rope(x[..., p], pos), apply_rope(x, pos, layout="half")[..., p]
    )


def test_rope_errors():
    with pytest.raises(ValueError, match="even"):
        apply_rope(torch.zeros(4, 5), torch.arange(4))
    with pytest.raises(ValueError, match="broadcast"):
        apply_rope(torch.zeros(4, 6), torch.arange(3))
    with pytest.raises(ValueError, match="layout"):
        apply_rope(torch.zeros(4, 6), torch.arange(4), layout="neox")


def _direct_clipped_scores(q, k, window, leaky, scale):
    """Rotate q by the clipped relative position of every pair, leave k alone: one pass per pair."""
    T_q, T_k = q.shape[-2], k.shape[-2]
    distance = -relative_position(T_q, T_k)  # (T_q, T_k): i - j
    r = rerope_positions(distance, window, leaky)  # (T_q, T_k)
    q_pairs = apply_rope(q.unsqueeze(-2).expand(*q.shape[:-1], T_k, q.shape[-1]), r)
    return (q_pairs * k.unsqueeze(-3)).sum(-1) * scale  # (..., T_q, T_k)


@pytest.mark.parametrize("leaky", [None, 4.0, 16.0])
@pytest.mark.parametrize("window", [1, 3, 6])
def test_rerope_two_passes_equal_the_clipped_positions(window, leaky):
    q, k = rand(2, 3, 9, 8, seed=10), rand(2, 3, 9, 8, seed=11)
    got = ReRoPE(window, leaky)(q, k, 0.3)
    torch.testing.assert_close(got, _direct_clipped_scores(q, k, window, leaky, 0.3))


def test_rerope_positions_values():
    d = torch.tensor([-2, 0, 3, 4, 10])
    assert rerope_positions(d, 4).tolist() == [-2, 0, 3, 4, 4]
    assert rerope_positions(d, 4, leaky=2.0).tolist() == [-2, 0, 3, 4, 7]


@settings(max_examples=20, deadline=None)
@given(T=st.integers(1, 12), extra=st.integers(0, 5), leaky=st.sampled_from([None, 2.0, 8.0]))
def test_rerope_equals_rope_when_the_window_covers_the_sequence(T, extra, leaky):
    q, k = rand(1, 2, T, 6, seed=T), rand(1, 2, T, 6, seed=T + 1)
    torch.testing.assert_close(ReRoPE(T + extra, leaky)(q, k, 0.5), RoPE()(q, k, 0.5))


def test_leaky_rerope_with_slope_one_is_rope():
    q, k = rand(1, 2, 10, 6, seed=12), rand(1, 2, 10, 6, seed=13)
    torch.testing.assert_close(ReRoPE(3, leaky=1.0)(q, k, 0.5), RoPE()(q, k, 0.5))


# -- plugging in ------------------------------------------------------------------------------

H, D_K = 4, 6


def make(variant):
    return {
        "shaw": lambda: {"bias": ShawRelativePosition(D_K, D_K, 3)},
        "transformer-xl": lambda: {"bias": TransformerXLRelativePosition(H, D_K)},
        "t5": lambda: {"bias": T5RelativeBias(H, bidirectional=False)},
        "alibi": lambda: {"bias": ALiBiBias(H)},
        "rope": lambda: {"rotation": RoPE()},
        "rerope": lambda: {"rotation": ReRoPE(window=3)},
        "leaky rerope": lambda: {"rotation": ReRoPE(window=3, leaky=4.0)},
    }[variant]()


VARIANTS = ["shaw", "transformer-xl", "t5", "alibi", "rope", "rerope", "leaky rerope"]


def test_plain_positional_attention_is_the_parent():
    q, k, v = rand(2, H, 5, D_K, seed=1), rand(2, H, 5, D_K, seed=2), rand(2, H, 5, D_K, seed=3)
    mask = causal_mask(5)
    a = PositionalAttention(2.0, 0.0)(q, k, v, mask)
    b = ScaledDotProductAttention(2.0, 0.0)(q, k, v, mask)
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("variant", VARIANTS)
def test_relative_variants_are_translation_invariant(variant):
    """Prepending tokens leaves the scores among the old tokens unchanged: only j - i matters."""
    torch.manual_seed(0)
    attn = PositionalAttention(math.sqrt(D_K), 0.0, **make(variant)).double()
    for p in attn.parameters():
        torch.nn.init.normal_(p)
    q, k = rand(1, H, 5, D_K, seed=1), rand(1, H, 5, D_K, seed=2)
    q_long = torch.cat([rand(1, H, 3, D_K, seed=3), q], dim=-2)
    k_long = torch.cat([rand(1, H, 3, D_K, seed=4), k], dim=-2)
    short = attn.get_scores(q, k)
    long = attn.get_scores(q_long, k_long)[..., 3:, 3:]
    causal = causal_mask(5)  # ReRoPE is defined for causal attention only
    torch.testing.assert_close(
        long.expand(1, H, 5, 5)[..., causal], short.expand(1, H, 5, 5)[..., causal]
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_plugs_into_multihead_attention(variant):
    torch.manual_seed(0)
    B, T = 2, 7
    mha = with_positions(MultiHeadAttention(H, H * D_K, D_K, D_K, dropout=0.0), **make(variant))
    assert isinstance(mha.attention, PositionalAttention)
    x = torch.randn(B, T, H * D_K, requires_grad=True)
    out, attn = mha(x, x, x, mask=causal_mask(T))
    assert out.shape == (B, T, H * D_K) and attn.shape == (B, H, T, T)
    assert torch.all(attn.masked_select(~causal_mask(T)) == 0)
    out.sum().backward()
    position_params = [p for n, p in mha.attention.named_parameters()]
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in position_params)
    # The positions changed the result: compare with the same layer without them.
    plain = MultiHeadAttention(H, H * D_K, D_K, D_K, dropout=0.0)
    plain.load_state_dict(mha.state_dict(), strict=False)
    assert not torch.allclose(plain(x, x, x, mask=causal_mask(T))[0], out)


def test_rerope_and_rope_check_lengths():
    with pytest.raises(ValueError, match="T_q"):
        RoPE()(torch.zeros(1, 5, 4), torch.zeros(1, 3, 4), 1.0)
    with pytest.raises(ValueError, match="window"):
        ReRoPE(0)


# -- the chapters' experiments and explorers (tutorial_lib.positional_lab / _plots) -----------


def test_toy_tasks_targets():
    from tutorial_lib.positional_lab import IGNORE, hold_last_value_batch, lag_copy_batch

    g = torch.Generator().manual_seed(0)
    tokens, target = lag_copy_batch(4, 12, g, lag=3)
    assert (target[:, :3] == IGNORE).all()
    assert torch.equal(target[:, 3:], tokens[:, :-3])
    tokens, target = hold_last_value_batch(50, 20, g, values=8)
    for row, tgt in zip(tokens.tolist(), target.tolist(), strict=True):
        latest = None
        for tok, t in zip(row, tgt, strict=True):
            latest = tok if tok < 8 else latest
            assert t == latest


@pytest.mark.parametrize("variant", ["none", "learned", "sinusoidal", "shaw", "xl", "t5",
                                     "alibi", "rope", "rerope"])  # fmt: skip
def test_position_model_runs_every_variant_past_its_training_length(variant):
    from tutorial_lib.positional_lab import ExtrapolationConfig, train_and_evaluate

    cfg = ExtrapolationConfig(steps=3, eval_lens=(16, 32), eval_batch=4)
    row = train_and_evaluate(variant, "lag", cfg, seed=0)
    assert set(row["accuracy"]) == {16, 32}
    assert all(0.0 <= a <= 1.0 for a in row["accuracy"].values())
    assert row["far_attention"][16] == 0.0  # at the training length nothing is that far
    assert 0.0 <= row["far_attention"][32] <= 1.0 and 0.0 <= row["focus"][32] <= 1.0
    assert row["best_head"][32] in range(cfg.n_head)
    hold = train_and_evaluate(variant, "hold", ExtrapolationConfig(steps=1, eval_lens=(16,)))
    assert hold["focus"][16] is None and hold["best_head"][16] is None
    with pytest.raises(ValueError, match="variant"):
        train_and_evaluate("fourier", "lag", cfg)


def test_position_part_by_distance():
    from tutorial_lib.positional_lab import (
        ExtrapolationConfig,
        PositionModel,
        position_part_by_distance,
    )

    cfg = ExtrapolationConfig()
    tokens = torch.randint(0, 10, (3, 12), generator=torch.Generator().manual_seed(0))
    # ALiBi's bias is exactly -slope_h * d at distance d, whatever the tokens.
    alibi = position_part_by_distance(PositionModel("alibi", 10, cfg), tokens, first=4)
    expected = -alibi_slopes(cfg.n_head)[:, None] * torch.arange(12.0)  # (H, T)
    torch.testing.assert_close(alibi, expected)
    # Transformer-XL: terms (b) + (d) only, averaged by hand over queries i >= 4.
    torch.manual_seed(0)
    model = PositionModel("xl", 10, cfg)
    with torch.no_grad():
        model.blocks[0].attention.attention.bias.v.normal_()
    profile = position_part_by_distance(model, tokens, first=4)  # (H, T)
    attention = model.blocks[0].attention.attention
    seen = {}
    hook = attention.register_forward_pre_hook(lambda _, args: seen.update(q=args[0], k=args[1]))
    with torch.no_grad():
        model(tokens)
        hook.remove()
        terms = attention.bias.four_terms(seen["q"], seen["k"])
    part = (terms["b"] + terms["d"]) / attention.temperature  # (B, H, T, T)
    for d in (0, 3, 11):
        pairs = [part[:, :, i, i - d] for i in range(max(4, d), 12)]  # each (B, H)
        torch.testing.assert_close(profile[:, d], torch.stack(pairs).mean(dim=(0, 1)))
    with pytest.raises(ValueError, match="no bias"):
        position_part_by_distance(PositionModel("rope", 10, cfg), tokens)


def test_rope_decay_bound_starts_at_the_mean_partial_count():
    from tutorial_lib.positional_plots import rope_decay_bound

    # At distance 0 every term is 1, so |S_j| = j and the mean over j = 1..d/2 is (d/2 + 1)/2.
    bound = rope_decay_bound(torch.tensor([0, 10, 100, 1000]), d=128)
    assert bound[0].item() == pytest.approx(32.5)
    assert bound[0] > bound[1] > bound[2]  # the long-range decay RoFormer describes


@pytest.mark.parametrize("name", ["sinusoidal_explorer", "position_scores_explorer"])
def test_explorers_draw_every_frame_differently(name):
    import tutorial_lib.positional_plots as plots

    explorer = getattr(plots, name)()
    frames = explorer.frames()
    assert len(frames) == explorer.n_frames
    assert len(set(frames.values())) == explorer.n_frames  # every control changes the view
    assert all("<svg" in f for f in frames.values())

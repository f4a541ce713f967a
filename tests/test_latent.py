"""tutorial_lib.latent: MLA against DeepSeek-V2's equations, its cache, the absorbed form, and
why RoPE on the content keys would break absorption."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import rand
from tutorial_lib.attention import causal_mask
from tutorial_lib.latent import LatentAttention, LatentCache
from tutorial_lib.positional import apply_rope


def layer(D=12, H=3, d_c=5, d_rope=4, seed=0, **sizes):
    torch.manual_seed(seed)
    return LatentAttention(D, H, d_c, d_rope, **sizes).double().eval()


def from_the_paper(mla, h, mask=None):
    """DeepSeek-V2, equations (9)-(19) without query compression, one head and token at a time:
    c_t = W^DKV h_t; k^C_t,i = W^UK_i c_t; v^C_t,i = W^UV_i c_t; k^R_t = RoPE(W^KR h_t);
    q^C_t,i = W^Q_i h_t; q^R_t,i = RoPE(W^QR_i h_t); o_t,i = sum_j softmax_j(q_t,i . k_j,i /
    sqrt(d_h + d_h^R)) v^C_j,i with q = [q^C; q^R], k = [k^C; k^R]; u_t = W^O [o_t,1; ...]."""
    B, T, _ = h.shape
    H, d_k, d_v, d_R = mla.n_head, mla.d_k, mla.d_v, mla.d_rope
    W = {name: getattr(mla, name).weight for name in ("w_q", "w_qr", "w_dkv", "w_kr", "w_uk",
                                                       "w_uv", "w_o")}  # fmt: skip
    out = torch.zeros(B, T, mla.d_model, dtype=h.dtype)
    for b in range(B):
        c = [W["w_dkv"] @ h[b, t] for t in range(T)]
        k_rope = [apply_rope((W["w_kr"] @ h[b, t])[None], torch.tensor([t]))[0] for t in range(T)]
        for t in range(T):
            heads = []
            for i in range(H):
                rows_k, rows_r = slice(i * d_k, (i + 1) * d_k), slice(i * d_R, (i + 1) * d_R)
                q_c = W["w_q"][rows_k] @ h[b, t]
                q_r = apply_rope((W["w_qr"][rows_r] @ h[b, t])[None], torch.tensor([t]))[0]
                scores = torch.stack([
                    (q_c @ (W["w_uk"][rows_k] @ c[j]) + q_r @ k_rope[j]) / math.sqrt(d_k + d_R)
                    for j in range(T)
                ])  # fmt: skip
                if mask is not None:
                    scores = scores.masked_fill(~mask[t], float("-inf"))
                weights = scores.softmax(0)
                values = torch.stack([W["w_uv"][i * d_v : (i + 1) * d_v] @ c[j] for j in range(T)])
                heads.append(weights @ values)
            out[b, t] = W["w_o"] @ torch.cat(heads)
    return out


@pytest.mark.parametrize("masked", [False, True])
def test_matches_the_papers_equations(masked):
    mla = layer(d_k=4, d_v=3)
    h = rand(2, 5, 12, seed=1)
    mask = causal_mask(5) if masked else None
    out, weights = mla(h, mask=mask)
    torch.testing.assert_close(out, from_the_paper(mla, h, mask))
    assert weights.shape == (2, 3, 5, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))


@pytest.mark.parametrize("masked", [False, True])
def test_the_absorbed_form_computes_the_same_attention(masked):
    mla = layer()
    h = rand(3, 6, 12, seed=2)
    mask = causal_mask(6)[None] if masked else None
    explicit, w_explicit = mla(h, mask=mask)
    absorbed, w_absorbed = mla(h, mask=mask, absorbed=True)
    torch.testing.assert_close(absorbed, explicit)
    torch.testing.assert_close(w_absorbed, w_explicit)


def test_absorbed_matrices_fold_the_up_projections():
    """q_latent[i] = W^UK_i^T W^Q_i and o_latent[:, i] = W^O_i W^UV_i, as the docstring says."""
    mla = layer(d_k=4, d_v=3)
    q_latent, o_latent = mla.absorbed()
    for i in range(3):
        w_q = mla.w_q.weight[i * 4 : (i + 1) * 4]  # (d_k, D)
        w_uk = mla.w_uk.weight[i * 4 : (i + 1) * 4]  # (d_k, d_c)
        w_uv = mla.w_uv.weight[i * 3 : (i + 1) * 3]  # (d_v, d_c)
        w_o = mla.w_o.weight[:, i * 3 : (i + 1) * 3]  # (D, d_v)
        torch.testing.assert_close(q_latent[i], w_uk.T @ w_q)
        torch.testing.assert_close(o_latent[:, i], w_o @ w_uv)


@pytest.mark.parametrize("absorbed", [False, True])
def test_cached_decoding_equals_recomputation(absorbed):
    mla = layer()
    h = rand(2, 7, 12, seed=3)
    full, _ = mla(h, mask=causal_mask(7))
    cache = LatentCache()
    steps = [mla(h[:, t : t + 1], mask=causal_mask(1, t + 1), cache=cache, absorbed=absorbed)[0]
             for t in range(7)]  # fmt: skip
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    # Several positions at once after a prefix, too.
    cache = LatentCache()
    first, _ = mla(h[:, :3], mask=causal_mask(3), cache=cache)
    rest, _ = mla(h[:, 3:], mask=causal_mask(4, 7), cache=cache, absorbed=absorbed)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full)


def test_the_cache_holds_d_c_plus_d_rope_numbers_per_token():
    mla = layer(d_c=5, d_rope=4)
    cache = LatentCache()
    mla(rand(2, 6, 12, seed=4), mask=causal_mask(6), cache=cache)
    assert len(cache) == 6
    assert cache.c.shape == (2, 6, 5) and cache.k_rope.shape == (2, 6, 4)
    assert cache.numbers_per_token() == 5 + 4
    # Against multi-head attention of the same heads: 2 H d_k = 2 * 3 * 4 = 24 per token.


def test_the_rope_part_depends_only_on_the_offset():
    """Shift every position by the same amount: the scores do not change (RoPE is relative)."""
    mla = layer()
    h = rand(1, 5, 12, seed=5)
    cache = LatentCache()
    mla(rand(1, 3, 12, seed=6), cache=cache)  # three earlier tokens: positions move by 3
    _, w_start = mla(h, mask=causal_mask(5))
    # The same five tokens at positions 3..7 attending only to themselves.
    mask = causal_mask(5, 8).clone()
    mask[:, :3] = False
    _, w_shifted = mla(h, mask=mask, cache=cache)
    torch.testing.assert_close(w_shifted[..., 3:], w_start)


def test_rope_on_the_content_keys_would_break_absorption():
    """With the content keys rotated, the matrix between h_t and c_j is W^Q_i^T R(j - t) W^UK_i:
    it changes with the offset, so no one matrix can be folded into the queries."""
    mla = layer(d_k=4)
    w_q = mla.w_q.weight[:4]  # (d_k, D), head 0
    w_uk = mla.w_uk.weight[:4]  # (d_k, d_c)
    eye = torch.eye(4, dtype=torch.float64)

    def folded(offset):  # R(offset) applied to the key side: rotate the columns of W^UK
        rotation = apply_rope(eye, torch.full((4,), float(offset)))  # rows: R^T e_r
        return w_q.T @ rotation.T @ w_uk  # (D, d_c)

    without = w_q.T @ w_uk
    torch.testing.assert_close(folded(0), without)  # offset 0: no rotation
    for offset in (1, 2, 5):
        assert (folded(offset) - without).abs().max() > 0.1 * without.abs().max()
    # The scores with rotated content keys, against the best that one folded matrix can do.
    T = 16  # T^2 = 256 pairs (t, j), more than the D d_c = 60 numbers of one matrix
    h, c = rand(T, 12, seed=7), rand(T, 5, seed=8)
    pos = torch.arange(T)
    q_rot = apply_rope(h @ w_q.T, pos)  # (T, d_k)
    k_rot = apply_rope(c @ w_uk.T, pos)
    true = q_rot @ k_rot.T  # (T, T)
    pairs = torch.einsum("td,jc->tjdc", h, c).reshape(T * T, -1)  # every (t, j): h_t c_j^T
    fit = torch.linalg.lstsq(pairs, true.reshape(-1, 1)).solution
    residual = (pairs @ fit - true.reshape(-1, 1)).abs().max()
    assert residual > 0.1 * true.abs().max()
    # Without the rotation the same fit is exact: one matrix does it.
    plain = (h @ w_q.T) @ (c @ w_uk.T).T
    fit = torch.linalg.lstsq(pairs, plain.reshape(-1, 1)).solution
    torch.testing.assert_close(pairs @ fit, plain.reshape(-1, 1))


@settings(max_examples=25, deadline=None)
@given(
    H=st.integers(1, 4),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 6),
    d_c=st.integers(1, 8),
    d_rope=st.sampled_from([2, 4, 6]),
    T=st.integers(1, 6),
    seed=st.integers(0, 1000),
)
def test_absorbed_equals_explicit_for_any_sizes(H, d_k, d_v, d_c, d_rope, T, seed):
    mla = layer(D=10, H=H, d_c=d_c, d_rope=d_rope, d_k=d_k, d_v=d_v, seed=seed)
    h = rand(2, T, 10, seed=seed)
    mask = causal_mask(T)[None]  # (1, T, T): a 2-D mask is refused when B = T_q
    explicit, _ = mla(h, mask=mask)
    absorbed, _ = mla(h, mask=mask, absorbed=True)
    torch.testing.assert_close(absorbed, explicit)


def test_float32_absorption_agrees_to_rounding():
    mla = layer().float()
    h = rand(2, 6, 12, seed=9, dtype=torch.float32)
    torch.testing.assert_close(mla(h, absorbed=True)[0], mla(h)[0], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"d_rope": 3}, r"d_rope must be even and >= 2; got 3"),
        ({"d_rope": 0}, r"d_rope must be even and >= 2; got 0"),
        ({"H": 5}, r"D = 12 does not split into H = 5 heads; pass d_k, d_v"),
    ],
)
def test_construction_errors_say_what_was_expected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        layer(**kwargs)


def test_a_wrong_width_is_named():
    with pytest.raises(ValueError, match=r"x \(B, T, D\) with D = 12; got \(2, 5, 10\)"):
        layer()(rand(2, 5, 10))


def test_a_mask_for_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="does not read one way"):
        layer()(rand(2, 5, 12), mask=causal_mask(4))

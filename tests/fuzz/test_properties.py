"""Property suite: invariants that hold for drawn sizes, masks and every positional variant of
the registry (tutorial_lib.positional.VARIANTS), checked against references."""

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib.attention import Attention, KVCache, causal_mask, masked_softmax
from tutorial_lib.positional import VARIANTS, Settings, with_positions

SOME = settings(max_examples=20, deadline=None, derandomize=True, database=None)
ON_SCORES = [row for row in VARIANTS if row.acts in ("bias", "rotation")]


def normal(draw, *shape):
    g = torch.Generator().manual_seed(draw(st.integers(0, 9999)))
    return torch.randn(*shape, generator=g, dtype=torch.float64)


@SOME
@given(st.data())
def test_masked_softmax_rows_sum_to_one_or_to_zero_and_masked_keys_get_nothing(data):
    B, T_q, T_k = (data.draw(st.integers(1, 4)) for _ in range(3))
    scores = normal(data.draw, B, T_q, T_k) * data.draw(st.sampled_from([1.0, 30.0]))
    mask = normal(data.draw, B, T_q, T_k) > data.draw(st.floats(-1.5, 1.5))
    weights = masked_softmax(scores, mask)
    assert (weights[~mask] == 0).all()
    torch.testing.assert_close(weights.sum(-1), mask.any(-1).double())


@SOME
@given(st.data())
def test_attention_with_shared_key_value_heads_is_torchs_enable_gqa(data):
    draw = data.draw
    n_kv_head = draw(st.sampled_from([1, 2, 3]))
    H, d_k, d_v = (
        n_kv_head * draw(st.integers(1, 3)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 4)),
    )
    B, T_q, T_k, D = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 5)), 6
    torch.manual_seed(draw(st.integers(0, 99)))
    layer = Attention(D, H, n_kv_head, d_k, d_v).double()
    x, context = normal(draw, B, T_q, D), normal(draw, B, T_k, D)
    mask = normal(draw, B, T_q, T_k) > -1.0
    mask[..., 0] = True  # PyTorch gives NaN for a query that may read nothing
    out, _ = layer(x, context, mask)
    q = F.linear(x, layer.w_q.weight).view(B, T_q, H, d_k).transpose(1, 2)
    k = F.linear(context, layer.w_k.weight).view(B, T_k, n_kv_head, d_k).transpose(1, 2)
    v = F.linear(context, layer.w_v.weight).view(B, T_k, n_kv_head, d_v).transpose(1, 2)
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None], enable_gqa=True)
    expected = F.linear(heads.transpose(1, 2).reshape(B, T_q, H * d_v), layer.w_o.weight)
    torch.testing.assert_close(out, expected)


@SOME
@given(st.data())
def test_every_variant_decodes_with_a_kv_cache_as_it_attends_all_at_once(data):
    """Positions enter where the scores are made, from the cache's length: a cached step sees
    what full causal attention sees, for every bias and rotation in the registry."""
    draw = data.draw
    row = draw(st.sampled_from(ON_SCORES))
    n_kv_head = draw(st.sampled_from([1, 2]))
    H, B, T = 2 * n_kv_head, draw(st.integers(1, 3)), draw(st.integers(1, 7))
    D = 4 * H  # d_k = 4: even, as the rotations need
    torch.manual_seed(draw(st.integers(0, 99)))
    part = row.make(Settings(D, H, shaw_clip=2, rerope_window=3))
    layer = with_positions(Attention(D, H, n_kv_head).double(), **{row.acts: part.double()})
    x = normal(draw, B, T, D)
    full, _ = layer(x, mask=causal_mask(T)[None])
    cache = KVCache()
    steps = [layer(x[:, t : t + 1], cache=cache)[0] for t in range(T)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)

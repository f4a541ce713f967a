"""check_grouped_attention: correct styles pass, every common mistake is caught and named."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from tutorial_lib.checks import check_grouped_attention
from tutorial_lib.checks.grouped import CONFIGS, _grouped


def by_torch(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def by_repeat_interleave(q, k, v):
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)  # (B, H, T_k, d)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v


def by_groups(q, k, v):
    """q read as (B, H_kv, G, T_q, d_k): every group against its own key/value head."""
    B, H, T_q, d_k = q.shape
    H_kv = k.shape[1]
    q = q.view(B, H_kv, H // H_kv, T_q, d_k)
    scores = q @ k[:, :, None].transpose(-2, -1) / d_k**0.5  # (B, H_kv, G, T_q, T_k)
    out = scores.softmax(-1) @ v[:, :, None]  # (B, H_kv, G, T_q, d_v)
    return out.flatten(1, 2)


def by_loop(q, k, v):
    G = q.shape[1] // k.shape[1]
    heads = []
    for h in range(q.shape[1]):
        kh, vh = k[:, h // G], v[:, h // G]
        w = torch.softmax(q[:, h] @ kh.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        heads.append(w @ vh)
    return torch.stack(heads, dim=1)


CORRECT = {
    "torch": by_torch,
    "repeat_interleave": by_repeat_interleave,
    "groups": by_groups,
    "loop": by_loop,
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_grouped_attention_passes(name):
    assert check_grouped_attention(CORRECT[name]) is None


def test_the_reference_is_torchs_grouped_attention():
    g = torch.Generator().manual_seed(0)
    for B, H, H_kv, T_q, T_k, d_k, d_v in CONFIGS:
        q = torch.randn(B, H, T_q, d_k, generator=g, dtype=torch.float64)
        k = torch.randn(B, H_kv, T_k, d_k, generator=g, dtype=torch.float64)
        v = torch.randn(B, H_kv, T_k, d_v, generator=g, dtype=torch.float64)
        torch.testing.assert_close(_grouped(q, k, v), by_torch(q, k, v))


def test_the_configurations_tell_tiling_from_interleaving():
    """Some configuration must have H_kv >= 2 and G >= 2, or repeat and repeat_interleave agree."""
    assert any(H_kv >= 2 and H // H_kv >= 2 for _, H, H_kv, *_ in CONFIGS)
    assert any(H_kv == 1 for _, H, H_kv, *_ in CONFIGS)  # multi-query
    assert any(H_kv == H for _, H, H_kv, *_ in CONFIGS)  # multi-head


def tiled(q, k, v):
    G = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat(1, G, 1, 1), v.repeat(1, G, 1, 1))


def split_wrong_way(q, k, v):
    """q read as (B, G, H_kv, ...): the same mapping as tiling."""
    B, H, T_q, d_k = q.shape
    H_kv = k.shape[1]
    q = q.view(B, H // H_kv, H_kv, T_q, d_k)
    out = by_torch(q.flatten(0, 1), k.repeat(H // H_kv, 1, 1, 1), v.repeat(H // H_kv, 1, 1, 1))
    return out.view(B, H // H_kv, H_kv, T_q, -1).flatten(1, 2)


def keys_interleaved_values_tiled(q, k, v):
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(G, dim=1), v.repeat(1, G, 1, 1)
    return F.scaled_dot_product_attention(q, k, v)


def values_interleaved_keys_tiled(q, k, v):
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat(1, G, 1, 1), v.repeat_interleave(G, dim=1)
    return F.scaled_dot_product_attention(q, k, v)


def reversed_groups(q, k, v):
    G = q.shape[1] // k.shape[1]
    index = k.shape[1] - 1 - torch.arange(q.shape[1]) // G
    return F.scaled_dot_product_attention(q, k[:, index], v[:, index])


def first_head_only(q, k, v):
    H = q.shape[1]
    k, v = k[:, :1].expand(-1, H, -1, -1), v[:, :1].expand(-1, H, -1, -1)  # head 0 for all
    return F.scaled_dot_product_attention(q, k, v)


def no_scale(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, scale=1.0, enable_gqa=True)


def scale_all_kv_heads(q, k, v):
    return F.scaled_dot_product_attention(
        q, k, v, scale=1 / math.sqrt(k.shape[1] * k.shape[-1]), enable_gqa=True
    )


def scale_model_width(q, k, v):
    return F.scaled_dot_product_attention(
        q, k, v, scale=1 / math.sqrt(q.shape[1] * q.shape[-1]), enable_gqa=True
    )


def scale_d_v(q, k, v):
    scale = 1 / math.sqrt(v.shape[-1])
    return F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)


def softmax_over_queries(q, k, v):
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)
    return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-2) @ v


def returns_weights_too(q, k, v):
    return by_torch(q, k, v), None


def repeat_over_the_batch(q, k, v):
    G = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(
        q, k.repeat_interleave(G, dim=0), v.repeat_interleave(G, dim=0)
    )


WRONG = {
    "tiled": (tiled, r"repeated in the wrong order \(tiled, not interleaved\)"),
    "q split as (B, G, H_kv)": (split_wrong_way, r"repeated in the wrong order"),
    "keys interleaved, values tiled": (
        keys_interleaved_values_tiled,
        r"keys and values repeated in different orders",
    ),
    "values interleaved, keys tiled": (
        values_interleaved_keys_tiled,
        r"values repeated in a different order from the keys",
    ),
    "groups reversed": (reversed_groups, r"maps groups to the wrong query heads: query head 0"),
    "first head only": (first_head_only, r"only the first key/value head used"),
    "no scale": (no_scale, r"the scale of d_k lost"),
    "scale sqrt(H_kv d_k)": (scale_all_kv_heads, r"sqrt\(H_kv d_k\)"),
    "scale sqrt(H d_k)": (scale_model_width, r"sqrt\(H d_k\)"),
    "scale sqrt(d_v)": (scale_d_v, r"scale 1/sqrt\(d_v\)"),
    "softmax over the queries": (softmax_over_queries, r"softmax over the queries"),
    "a tuple": (returns_weights_too, r"should return the output alone"),
    "repeated over the batch": (repeat_over_the_batch, r"raised RuntimeError|should have shape"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_each_mistake_is_caught_and_named(name):
    fn, feedback = WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_grouped_attention: ") as caught:
        check_grouped_attention(fn)
    assert re.search(feedback, str(caught.value)), str(caught.value)


def test_a_mistake_only_some_configurations_show_is_named_where_it_shows():
    """Tiling agrees with interleaving for multi-query and multi-head attention: the check must
    not call those right answers wrong, and must still catch tiling elsewhere."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 3, 2, 4, generator=g), torch.randn(1, 1, 3, 4, generator=g)
    v = torch.randn(1, 1, 3, 2, generator=g)
    torch.testing.assert_close(tiled(q, k, v), by_torch(q, k, v))  # H_kv = 1: the same
    with pytest.raises(AssertionError, match="B=2, H=4, H_kv=2"):
        check_grouped_attention(tiled)


def test_an_input_changed_in_place_is_named():
    def scales_q_in_place(q, k, v):
        q /= math.sqrt(q.shape[-1])
        return F.scaled_dot_product_attention(q, k, v, scale=1.0, enable_gqa=True)

    with pytest.raises(AssertionError, match="changed its input q in place"):
        check_grouped_attention(scales_q_in_place)

"""PositionalAttention and with_positions (tutorial_lib.positional): every variant plugs in."""

import math

import pytest
import torch

from tests.conftest import rand
from tutorial_lib.attention import MultiHeadAttention, ScaledDotProductAttention, causal_mask
from tutorial_lib.positional import (
    VARIANTS,
    PositionalAttention,
    ReRoPE,
    RoPE,
    Settings,
    variant,
    with_positions,
)

H, D_K = 4, 6
SETTINGS = Settings(d_model=H * D_K, n_head=H, shaw_clip=3, rerope_window=3)


def make(name):
    """The keyword for PositionalAttention: every registry row that acts on the scores, and
    leaky ReRoPE (a setting of ReRoPE that has no row of its own)."""
    if name == "leaky rerope":
        return {"rotation": ReRoPE(window=3, leaky=4.0)}
    row = variant(name)
    return {row.acts: row.make(SETTINGS)}


VARIANTS_ON_SCORES = [row.name for row in VARIANTS if row.acts in ("bias", "rotation")]
VARIANTS_ON_SCORES.append("leaky rerope")


def test_plain_positional_attention_is_the_parent():
    q, k, v = rand(2, H, 5, D_K, seed=1), rand(2, H, 5, D_K, seed=2), rand(2, H, 5, D_K, seed=3)
    mask = causal_mask(5)
    a = PositionalAttention(2.0, 0.0)(q, k, v, mask)
    b = ScaledDotProductAttention(2.0, 0.0)(q, k, v, mask)
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("variant", VARIANTS_ON_SCORES)
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


@pytest.mark.parametrize("variant", VARIANTS_ON_SCORES)
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

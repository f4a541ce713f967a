"""The seed code's MultiHeadAttention runs on our ScaledDotProductAttention unchanged."""

import pytest
import torch

from tutorial_lib.attention import MultiHeadAttention, causal_mask, padding_mask

from .seed_multihead import MultiHeadAttention as SeedMultiHeadAttention


@pytest.mark.parametrize("mask_kind", ["none", "padding (B, 1, T_k)", "causal (B, T, T)"])
def test_seed_class_matches_ours(mask_kind):
    torch.manual_seed(0)
    B, T, D, H = 2, 6, 16, 4
    seed = SeedMultiHeadAttention(H, D, D // H, D // H, dropout=0.0).eval()
    ours = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).eval()
    ours.load_state_dict(seed.state_dict())  # same attribute names, so the weights load as-is
    seed.attention.dropout.p = 0.0
    x = torch.randn(B, T, D)
    mask = {
        "none": None,
        "padding (B, 1, T_k)": padding_mask([6, 3], T),
        "causal (B, T, T)": causal_mask(T).expand(B, T, T),
    }[mask_kind]
    out_seed, attn_seed = seed(x, x, x, mask=mask)
    out_ours, attn_ours = ours(x, x, x, mask=mask)
    torch.testing.assert_close(out_seed, out_ours)
    torch.testing.assert_close(attn_seed, attn_ours)
    if mask is not None:
        assert torch.all(attn_seed.masked_select(~mask.unsqueeze(1).expand_as(attn_seed)) == 0)

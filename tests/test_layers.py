"""tutorial_lib.layers: the feed-forward block and the two layers against PyTorch's own, each
showing both residuals in its forward, and the seed-style calls chapter Q5 still makes."""

import inspect

import torch
from torch import nn

from tutorial_lib.attention import Attention, KVCache, causal_mask
from tutorial_lib.layers import DecoderLayer, EncoderLayer, FeedForward, LayerCache
from tutorial_lib.masks import source_mask
from tutorial_lib.model import TransformerConfig


def tiny(**changes) -> TransformerConfig:
    base = dict(src_vocab=13, tgt_vocab=13, d_model=16, n_head=4, d_ff=32, dropout=0.0)
    return TransformerConfig(**(base | changes))


def copy_attention(ours: Attention, theirs: nn.MultiheadAttention):
    with torch.no_grad():
        w = torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight])  # (3D, D)
        theirs.in_proj_weight.copy_(w)
        theirs.out_proj.weight.copy_(ours.w_o.weight)


def test_feed_forward_is_the_papers_formula():
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, on every position on its own."""
    torch.manual_seed(0)
    ffn = FeedForward(8, 24).eval()
    with torch.no_grad():
        ffn.w_2.bias.normal_()  # non-zero, so a missing b_2 would show
    x = torch.randn(2, 5, 8)
    inner = torch.relu(x @ ffn.w_1.weight.T + ffn.w_1.bias) @ ffn.w_2.weight.T + ffn.w_2.bias
    torch.testing.assert_close(ffn(x), inner)
    torch.testing.assert_close(ffn(x[:, 2:3]), ffn(x)[:, 2:3])  # position-wise


def test_encoder_layer_matches_torch():
    torch.manual_seed(0)
    ours = EncoderLayer(tiny(ffn_bias=False)).eval()
    theirs = nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.0, batch_first=True, bias=False, layer_norm_eps=1e-6
    ).eval()
    copy_attention(ours.self_attention, theirs.self_attn)
    with torch.no_grad():
        theirs.linear1.weight.copy_(ours.ffn.w_1.weight)
        theirs.linear2.weight.copy_(ours.ffn.w_2.weight)
    x = torch.randn(3, 6, 16)
    src = torch.tensor([[5] * 6, [5] * 4 + [0] * 2, [5] * 2 + [0] * 4])
    mask = source_mask(src, 0)  # (B, 1, T): True = may attend
    expected = theirs(x, src_key_padding_mask=~mask[:, 0])  # torch: True = padding
    got, _ = ours(x, mask)
    real = mask[:, 0]  # torch's fast path may zero padded rows; compare the real ones
    torch.testing.assert_close(got[real], expected[real])


def test_decoder_layer_matches_torch():
    torch.manual_seed(0)
    ours = DecoderLayer(tiny(ffn_bias=False)).eval()
    theirs = nn.TransformerDecoderLayer(
        16, 4, 32, dropout=0.0, batch_first=True, bias=False, layer_norm_eps=1e-6
    ).eval()
    copy_attention(ours.self_attention, theirs.self_attn)
    copy_attention(ours.cross_attention, theirs.multihead_attn)
    with torch.no_grad():
        theirs.linear1.weight.copy_(ours.ffn.w_1.weight)
        theirs.linear2.weight.copy_(ours.ffn.w_2.weight)
    y, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    src = torch.tensor([[4] * 7, [4] * 3 + [0] * 4])
    causal = causal_mask(5)
    expected = theirs(
        y, memory, tgt_mask=~causal, memory_key_padding_mask=~source_mask(src, 0)[:, 0]
    )
    got, _, cross = ours(y, memory, causal, source_mask(src, 0))
    torch.testing.assert_close(got, expected)
    assert cross[1, :, :, 3:].abs().max() == 0  # no weight on the padded source positions


def test_every_sub_layer_shows_its_residual_and_norm_in_the_layers_forward():
    for layer, sublayers in ((EncoderLayer, 2), (DecoderLayer, 3)):
        source = inspect.getsource(layer.forward)
        assert (
            source.count("_norm(x + self.dropout(") + source.count("_norm(y + self.dropout(")
            == sublayers
        ), layer.__name__


def test_the_seed_style_calls_of_chapter_q5_compute_the_layers_sub_layers():
    torch.manual_seed(0)
    enc, dec = EncoderLayer(tiny()).eval(), DecoderLayer(tiny()).eval()
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    mask = source_mask(torch.tensor([[4] * 5, [4] * 2 + [0] * 3]), 0)
    out, weights = enc.self_attn(x, x, x, mask=mask)  # the seed's interface: norm inside
    attended, expected_weights = enc.self_attention(x, mask=mask)
    torch.testing.assert_close(out, enc.self_attention_norm(x + attended))
    torch.testing.assert_close(weights, expected_weights)
    assert enc.ffn_layer_norm is enc.ffn_norm
    out, _ = dec.cross_attn(x, memory, memory)
    torch.testing.assert_close(out, dec.cross_attention_norm(x + dec.cross_attention(x, memory)[0]))


def test_a_layer_cache_reorders_its_keys_values_and_padding_together():
    cache = LayerCache(torch.zeros(3, 4, 2, 4), torch.zeros(3, 4, 2, 4), KVCache())
    cache.past.append(torch.randn(3, 4, 5, 4), torch.randn(3, 4, 5, 4))
    cache.real = torch.rand(3, 5) > 0.5
    k, real = cache.past.k.clone(), cache.real.clone()
    cache.reorder(torch.tensor([1, 1, 2]))
    assert torch.equal(cache.past.k, k[[1, 1, 2]]) and torch.equal(cache.real, real[[1, 1, 2]])

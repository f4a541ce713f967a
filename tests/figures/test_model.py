"""tutorial_lib.figures.model and .decoding: the shape tour, the figures, the decoding explorer."""

import pytest
import torch
from matplotlib.figure import Figure

from tutorial_lib.data import EOS, from_text, make_batch, teacher_forcing, vocab_size
from tutorial_lib.decoding import greedy_decode
from tutorial_lib.figures.model import (
    decoding_explorer,
    draw_masks,
    draw_trained_attention,
    model_shape_html,
    model_shape_trace,
    record_decoding,
    token_table_html,
)
from tutorial_lib.model import Transformer, TransformerConfig

V = vocab_size(10)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = TransformerConfig(
        src_vocab=V,
        tgt_vocab=V,
        d_model=16,
        n_head=2,
        d_ff=32,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,
        max_len=32,
    )
    return Transformer(config).eval()


def _meta_model(D, H, N, vocab=37000):
    sizes = {"d_model": D, "n_head": H, "d_ff": 4 * D, "n_enc_layers": N, "n_dec_layers": N}
    config = TransformerConfig(src_vocab=vocab, tgt_vocab=vocab, dropout=0.0, max_len=512, **sizes)
    with torch.device("meta"):
        return Transformer(config).eval()


@pytest.mark.parametrize("B,T_src,T_tgt,D,H", [(1, 5, 4, 64, 2), (3, 7, 9, 48, 6), (2, 1, 1, 8, 8)])
def test_tour_shapes_are_those_of_a_direct_run(B, T_src, T_tgt, D, H):
    """Every row's shape equals the shape hooks record when the model runs at these sizes."""
    rows, _ = model_shape_trace(B, T_src, T_tgt, D, H, 1)
    model = _meta_model(D, H, 1)
    seen = {}

    def keep(name):
        return lambda module, args, output: seen.setdefault(name, output)

    encoder_attention, cross = "encoder.layers.0.self_attention", "decoder.layers.0.cross_attention"
    for name in ("encoder.embed", encoder_attention, cross, "encoder.layers.0.ffn.w_1", "decoder"):
        model.get_submodule(name).register_forward_hook(keep(name))
    with torch.device("meta"):
        model(torch.zeros(B, T_src, dtype=torch.long), torch.zeros(B, T_tgt, dtype=torch.long))
    shape = {}
    for r in rows:  # the first of two same-named rows is the encoder's
        shape.setdefault(r.tensor, r.shape)
    assert shape["self-attention weights"] == tuple(seen[encoder_attention][1].shape)
    assert shape["cross-attention weights"] == tuple(seen[cross][1].shape)
    assert shape["embedding × √D + positions"] == tuple(seen["encoder.embed"].shape)
    assert shape["feed-forward hidden"] == tuple(seen["encoder.layers.0.ffn.w_1"].shape)
    assert shape["logits (tied: y Eᵀ)"] == tuple(seen["decoder"][0].shape)
    assert shape["target mask (causal & padding)"] == (B, T_tgt, T_tgt)


@pytest.mark.parametrize("N", [1, 2, 6])
def test_tour_total_is_the_full_models_parameter_count(N):
    _, total = model_shape_trace(2, 5, 4, 64, 4, N)
    assert total == sum(p.numel() for p in _meta_model(64, 4, N).parameters())


def test_shape_html_shows_the_measured_shapes_and_the_total():
    page = model_shape_html(B=3, T_src=7, T_tgt=5, d_model=64, n_head=4, N=2)
    assert "(3, 4, 5, 7)" in page  # cross-attention weights (B, H, T_tgt, T_src)
    assert "(3, 5, 37000)" in page  # logits (B, T_tgt, V)
    assert f"{sum(p.numel() for p in _meta_model(64, 4, 2).parameters()):,}" in page
    assert page.count("<tr>") == 1 + 19  # header and one row per traced tensor
    rows, _ = model_shape_trace(3, 7, 5, 64, 4, 2)
    attention = next(r for r in rows if r.tensor == "self-attention output")
    assert attention.params == 4 * 64**2  # W^Q, W^K, W^V, W^O: norms are on no row
    cross = next(r for r in rows if r.tensor == "cross-attention output")
    assert cross.params == 4 * 64**2
    for tensor in ("self-attention weights", "cross-attention keys, values (= memory)"):
        assert next(r for r in rows if r.tensor == tensor).params is None  # not a module's output
    ffn = next(r for r in rows if r.tensor == "feed-forward output")
    assert ffn.params == 2 * 64 * 256 + 256 + 64  # W_1, b_1, W_2, b_2


def test_shape_tour_refuses_what_it_cannot_cover():
    with pytest.raises(ValueError, match="T_src, T_tgt <= 512"):
        model_shape_html(B=1, T_src=600, T_tgt=5, d_model=64, n_head=4, N=1)
    with pytest.raises(ValueError, match="divisible by H"):
        model_shape_trace(1, 4, 4, 64, 3, 1)


def test_mask_figure_draws_the_three_masks_and_a_key():
    src = torch.tensor([5, 6, 7, 0, 0])
    dec_in = teacher_forcing(torch.tensor([[7, 6, 5, 0, 0]]))[0][0]
    fig = Figure()
    axes = draw_masks(fig, src, dec_in)
    images = [ax.get_images()[0].get_array() for ax in axes]
    assert [im.shape for im in images] == [(5, 5), (6, 6), (6, 5)]
    assert images[0][:, 3:].max() == 0 and images[0][:, :3].min() == 1  # padding columns off
    assert images[1][0, 1] == 0 and images[1][1, 0] == 1  # causal: no peeking ahead
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["True: may attend", "False: masked"]


def test_trained_attention_figure_has_three_maps(model):
    src, tgt = make_batch("reverse", 1, 6, seed=0)
    fig = Figure()
    axes = draw_trained_attention(fig, model, src[0], teacher_forcing(tgt)[0][0])
    shapes = [ax.get_images()[0].get_array().shape for ax in axes]
    assert shapes == [(6, 6), (7, 7), (7, 6)]


def test_recorded_decoding_is_greedy_decoding(model):
    record = record_decoding(model, "3 1 4 1 5")
    tokens, logits = greedy_decode(model, from_text("3 1 4 1 5"), record.tokens.shape[0])
    assert torch.equal(record.tokens, tokens[0])
    torch.testing.assert_close(record.probs, logits[0].softmax(-1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(record.cross.sum(-1), torch.ones(record.cross.shape[0]))
    assert (record.tokens == EOS).sum() <= 1


def test_decoding_explorer_frames_name_the_step_and_its_top_tokens(model):
    explorer = decoding_explorer(model, ["3 1 4", "2 7 1 8"])
    assert explorer.n_frames == 2 * 5  # inputs x steps (the longest input decodes 5 steps)
    record = record_decoding(model, "2 7 1 8")
    frame = explorer.render(input="2 7 1 8", step=3)
    assert "step 3 of 5" in frame and "← greedy" in frame
    assert f"{record.probs[2].max().item():.3f}" in frame
    assert len(set(explorer.frames().values())) == explorer.n_frames


def test_token_table_marks_cells():
    page = token_table_html({"a": ["1", "2"], "b": ["x"]}, marked={"a": [False, True]})
    assert page.count("<tr>") == 3
    assert "<b style='color:#B34700'>2</b>" in page

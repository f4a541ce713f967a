"""tutorial_lib.figures.model: the shape tour's table, the figures, the decoding explorer."""

import base64
import io
import re

import PIL.Image
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


def test_shape_html_shows_the_measured_shapes_and_the_total():
    page = model_shape_html(B=3, T_src=7, T_tgt=5, d_model=64, n_head=4, N=2)
    assert "(3, 4, 5, 7)" in page  # cross-attention weights (B, H, T_tgt, T_src)
    assert "(3, 5, 37000)" in page  # logits (B, T_tgt, V)
    with torch.device("meta"):
        m = Transformer(
            TransformerConfig(d_model=64, n_head=4, d_ff=256, n_enc_layers=2, n_dec_layers=2)
        )
    assert f"{sum(p.numel() for p in m.parameters()):,}" in page
    assert page.count("<tr>") == 1 + 19  # header and one row per traced tensor


def test_shape_tour_refuses_what_it_cannot_cover():
    with pytest.raises(ValueError, match="T_src, T_tgt <= 512"):
        model_shape_html(B=1, T_src=600, T_tgt=5, d_model=64, n_head=4, N=1)


def test_mask_figure_draws_the_three_masks():
    src = torch.tensor([5, 6, 7, 0, 0])
    dec_in = teacher_forcing(torch.tensor([[7, 6, 5, 0, 0]]))[0][0]
    fig = Figure()
    axes = draw_masks(fig, src, dec_in)
    images = [ax.get_images()[0].get_array() for ax in axes]
    assert [im.shape for im in images] == [(5, 5), (6, 6), (6, 5)]
    assert images[0][:, 3:].max() == 0 and images[0][:, :3].min() == 1  # padding columns off
    assert images[1][0, 1] == 0 and images[1][1, 0] == 1  # causal: no peeking ahead


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


def test_decoding_explorer_frames_are_small_pngs(model):
    explorer = decoding_explorer(model, ["3 1 4", "2 7 1 8"])
    assert explorer.n_frames == 2 * 5  # inputs x steps (the longest input decodes 5 steps)
    raw = explorer.render(input="2 7 1 8", step=3)
    assert raw.startswith(b"\x89PNG")
    page = explorer.static_html()
    frames = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    assert frames, "the static page carries its frames"
    palette = PIL.Image.open(io.BytesIO(base64.b64decode(frames[0])))
    assert palette.mode == "P"  # 64-colour palette in the page
    assert len(base64.b64decode(frames[0])) < len(raw)


def test_token_table_marks_cells():
    page = token_table_html({"a": ["1", "2"], "b": ["x"]}, marked={"a": [False, True]})
    assert page.count("<tr>") == 3
    assert "<b style='color:#D55E00'>2</b>" in page

"""The architecture diagrams: valid, accessible SVG whose shapes and sizes come from the library."""

import re
import xml.etree.ElementTree as ET

import pytest

from tutorial_lib.figures.common import HEAD_COLOURS
from tutorial_lib.figures.diagrams import (
    CHAPTER_TAGS,
    FILL,
    MIN_FONT_PX,
    PAPER,
    Canvas,
    figure_html,
    multihead_shapes,
    multihead_svg,
    transformer_shapes,
    transformer_svg,
)
from tutorial_lib.model import TransformerConfig

SVG = "{http://www.w3.org/2000/svg}"
SMALL = TransformerConfig(
    src_vocab=100, tgt_vocab=100, d_model=96, n_head=12, d_ff=384, n_enc_layers=2, n_dec_layers=3
)
DIAGRAMS = {
    "transformer": transformer_svg,
    "transformer, chapters": lambda config=None: transformer_svg(config, chapters=True),
    "multihead": multihead_svg,
    "multihead, no norm": lambda config=None: multihead_svg(config, add_norm=False),
}


def parse(svg):
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root):
    """Every line of text as a reader sees it: sub- and superscripts joined in."""
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def plain(letters):
    """'(B, T_src, H·d_k)' as drawn: '(B, Tsrc, H·dk)'."""
    return re.sub(r"[_^]\{?([A-Za-z0-9]+)\}?", r"\1", letters)


def luminance(colour):
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a, b):
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("name", DIAGRAMS)
@pytest.mark.parametrize("config", [None, SMALL], ids=["paper", "small"])
def test_valid_svg_with_a_title_and_description(name, config):
    root = parse(DIAGRAMS[name](config))
    assert root.get("role") == "img"
    title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
    assert title is not None and title.text
    assert desc is not None and len(desc.text) > 100
    assert root.get("aria-labelledby").split() == [title.get("id"), desc.get("id")]


@pytest.mark.parametrize("name", DIAGRAMS)
def test_text_is_at_least_11_px_at_natural_size(name):
    root = parse(DIAGRAMS[name]())
    width = float(root.get("width"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    scale = width / float(root.get("viewBox").split()[2])  # px on screen per unit drawn
    sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
    assert sizes and min(sizes) * scale >= MIN_FONT_PX
    for text in root.iter(f"{SVG}text"):
        assert text.get("font-size"), "every line sets its size"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_opaque_light_panel_and_readable_colours(name):
    """Dark mode: the drawing sits on its own white panel, so its colours never meet the page's."""
    root = parse(DIAGRAMS[name]())
    panel = root.find(f"{SVG}rect")
    assert panel.get("fill") == PAPER and panel.get("width") == root.get("width")
    assert panel.get("height") == root.get("height") and not panel.get("fill-opacity")
    lightest_box = [PAPER, *FILL.values()]  # the chapter tags' pill too
    default = root.get("fill")
    for text in root.iter(f"{SVG}text"):
        colour = text.get("fill", default)
        assert min(contrast(colour, box) for box in lightest_box) >= 4.5, colour


@pytest.mark.parametrize("name", DIAGRAMS)
def test_everything_is_drawn_inside_the_panel(name):
    root = parse(DIAGRAMS[name](SMALL))
    width, height = float(root.get("width")), float(root.get("height"))
    points = []
    for e in root.iter():
        if e.get("x") is not None and e.tag != f"{SVG}tspan":
            points.append((float(e.get("x")), float(e.get("y"))))
        if e.get("points"):
            points += [tuple(map(float, p.split(","))) for p in e.get("points").split()]
    for x, y in points:
        assert 0 <= x <= width and 0 <= y <= height, (x, y)


def test_shapes_are_read_from_the_library_in_the_books_letters():
    s = transformer_shapes()
    assert s["src_embedded"] == "(B, T_src, D)"
    assert s["src_mask"] == "(B, 1, T_src)"
    assert s["tgt_mask"] == "(B, T_tgt, T_tgt)"
    assert s["cross_weights"] == "(B, H, T_tgt, T_src)"
    assert s["enc_hidden"] == "(B, T_src, d_ff)"
    assert s["logits"] == "(B, T_tgt, V)"
    m = multihead_shapes()
    assert m["q_proj"] == "(B, T_q, H·d_k)" and m["v_proj"] == "(B, T_k, H·d_v)"
    assert m["q_heads"] == "(B, H, T_q, d_k)" and m["v_heads"] == "(B, H, T_k, d_v)"
    assert m["weights"] == "(B, H, T_q, T_k)"
    assert m["concat"] == "(B, T_q, H·d_v)" and m["out"] == "(B, T_q, D)"


@pytest.mark.parametrize(
    "draw,shapes",
    [(transformer_svg, transformer_shapes), (multihead_svg, multihead_shapes)],
    ids=["transformer", "multihead"],
)
def test_every_shape_appears_on_the_drawing(draw, shapes):
    drawn = " ".join(texts(parse(draw())))
    desc = parse(draw()).find(f"{SVG}desc").text
    for name, letters in shapes().items():
        if name in ("enc_weights", "self_weights", "cross_weights", "cross_kv"):
            assert letters in desc  # in the description; the drawing shows them another way
            continue
        assert plain(letters) in drawn, (name, letters)


@pytest.mark.parametrize("config", [TransformerConfig(), SMALL], ids=["paper", "small"])
def test_the_legend_gives_the_configs_sizes(config):
    d_k, d_v = config.head_dims
    drawn = " ".join(texts(parse(transformer_svg(config))))
    assert f"D = {config.d_model:,}" in drawn and f"H = {config.n_head}" in drawn
    assert f"dff = {config.d_ff:,}" in drawn and f"V = {config.tgt_vocab:,}" in drawn
    heads = " ".join(texts(parse(multihead_svg(config))))
    assert f"D = {config.d_model}" in heads and f"H = {config.n_head}" in heads
    assert f"dk = dv = {d_k}" in heads if d_k == d_v else f"dk = {d_k}" in heads
    if config.n_enc_layers == config.n_dec_layers:
        assert f"N = {config.n_enc_layers}" in drawn
    else:
        assert f"N = {config.n_enc_layers}" in drawn and f"N = {config.n_dec_layers}" in drawn


def test_the_three_masks_are_named():
    lines = texts(parse(transformer_svg()))
    assert lines.count("mask: source padding") == 2  # encoder self-attention, cross-attention
    assert "mask: causal ∧ padding" in lines
    assert lines.count("Add & Norm") == 5  # post-LN: after each of the 2 + 3 sub-layers


def test_chapter_tags_only_when_asked():
    tagged = texts(parse(transformer_svg(chapters=True)))
    untagged = texts(parse(transformer_svg()))
    for label in CHAPTER_TAGS.values():
        assert label in tagged and label not in untagged


def test_heads_are_coloured_one_slice_each():
    svg = multihead_svg(TransformerConfig(d_model=64, n_head=4))
    for colour in HEAD_COLOURS[:4]:
        assert f'fill="{colour}"' in svg
    assert f'fill="{HEAD_COLOURS[4]}"' not in svg.split("<desc")[1].split("Scaled")[0]


def test_add_norm_is_optional():
    assert "Add &amp; Norm" in multihead_svg()
    assert "Add &amp; Norm" not in multihead_svg(add_norm=False)


def test_figure_html_keeps_natural_size_and_scrolls():
    html = figure_html(multihead_svg(), caption="Multi-head attention")
    assert "overflow-x:auto" in html and "max-width:none" in html
    assert "<figcaption" in html and "Multi-head attention" in html


def test_small_text_and_overflowing_boxes_are_refused():
    canvas = Canvas(100, 100, "t", "d")
    with pytest.raises(ValueError, match="at least 11 px"):
        canvas.text(0, 0, "tiny", 9)
    with pytest.raises(ValueError, match="does not fit"):
        canvas.box(0, 0, 40, ["a title far too long for forty pixels"], PAPER)


def test_subscripts_and_superscripts():
    canvas = Canvas(200, 50, "t", "d")
    canvas.text(10, 20, "(B, T_src, H·d_k) W^O", 12, anchor="start")
    svg = canvas.render()
    text = parse(svg).find(f"{SVG}text")
    assert "".join(text.itertext()) == "(B, Tsrc, H·dk) WO"
    shifts = [float(t.get("dy", 0)) for t in text.iter(f"{SVG}tspan")]
    assert sum(shifts[:-1]) == pytest.approx(0.0)  # back on the baseline before the superscript

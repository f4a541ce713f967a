"""Q0's soft-lookup explorer: its arithmetic is attention's, its frames are readable SVG."""

import re
import xml.etree.ElementTree as ET

import pytest
import torch

from tutorial_lib.figures.diagrams import MIN_FONT_PX, PAPER
from tutorial_lib.figures.lookup import (
    INK_ON_WHITE,
    KEYS,
    QUERY_STEPS,
    TEMPERATURES,
    VALUES,
    draw_weights_against_temperature,
    hard_lookup,
    lookup_explorer,
    lookup_svg,
    soft_lookup,
)

from .test_diagrams import SVG, contrast, texts


def test_soft_lookup_is_softmax_of_dot_products_over_tau():
    query = torch.tensor([0.7, -1.3])
    for tau in TEMPERATURES:
        out, weights = soft_lookup(query, tau)
        expected = torch.softmax(KEYS @ query / tau, dim=0)
        torch.testing.assert_close(weights, expected)
        torch.testing.assert_close(out, expected @ VALUES)
        torch.testing.assert_close(weights.sum(), torch.tensor(1.0))


def test_keys_have_one_length_so_the_best_key_is_the_nearest_in_angle():
    lengths = KEYS.norm(dim=1)
    torch.testing.assert_close(lengths, torch.full_like(lengths, lengths[0].item()))


def test_temperature_interpolates_between_hard_lookup_and_average():
    query = torch.tensor([2.0, 1.0])
    value, index = hard_lookup(query)
    sharp, _ = soft_lookup(query, 0.01)
    flat, weights = soft_lookup(query, 1e4)
    torch.testing.assert_close(sharp, value)
    torch.testing.assert_close(flat, VALUES.mean(0), atol=1e-2, rtol=0)
    assert index == int(weights.argmax())


def test_scaling_the_query_is_dividing_the_temperature():
    query = torch.tensor([1.0, -2.0])
    torch.testing.assert_close(soft_lookup(2 * query, 1.0), soft_lookup(query, 0.5))


def test_bad_input_names_the_expected_shape():
    with pytest.raises(ValueError, match=r"\(d_k,\) = \(2,\)"):
        soft_lookup(torch.zeros(3))
    with pytest.raises(ValueError, match="positive"):
        soft_lookup(torch.zeros(2), 0.0)


@pytest.mark.parametrize("x,y,tau", [(2.0, 1.0, 1.0), (0.0, 0.0, 0.25), (-2.0, 2.0, 4.0)])
def test_a_frame_shows_the_weights_and_output_it_computes(x, y, tau):
    root = ET.fromstring(lookup_svg(x, y, tau))
    out, weights = soft_lookup(torch.tensor([x, y]), tau)
    lines = texts(root)
    for w in weights.tolist():
        assert f"{w:.2f}" in lines
    assert f"output = Σ weight × value = {out.item():.1f}" in lines
    assert root.find(f"{SVG}title").text and root.get("role") == "img"


def test_a_tie_is_said_not_hidden():
    lines = texts(ET.fromstring(lookup_svg(0.0, 0.0, 1.0)))
    assert any("tie" in line for line in lines)


def test_frames_are_readable():
    root = ET.fromstring(lookup_svg(1.0, -1.0, 1.0))
    assert root.find(f"{SVG}rect").get("fill") == PAPER
    sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
    assert min(sizes) >= MIN_FONT_PX
    for colour in INK_ON_WHITE:
        assert contrast(colour, PAPER) >= 4.5


def test_the_explorer_covers_the_grid_and_stays_light():
    explorer = lookup_explorer()
    assert explorer.n_frames == len(QUERY_STEPS) ** 2 * len(TEMPERATURES)
    html = explorer.static_html()
    assert len(html) < 700_000  # a few kB a frame
    shown = html.split("<script>")[0]
    assert len(re.findall(r"<svg ", shown)) == 1  # one frame in the page, the others in the script


def test_weights_against_temperature_draw_one_curve_per_key():
    from matplotlib.figure import Figure

    fig = Figure()
    temperatures = torch.logspace(-1, 1, 9)
    query = torch.tensor([2.0, 1.0])
    draw_weights_against_temperature(fig, query, temperatures)
    (ax,) = fig.axes
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == len(temperatures)]
    assert len(curves) == KEYS.shape[0]
    for i, line in enumerate(curves):
        expected = [soft_lookup(query, float(t))[1][i].item() for t in temperatures]
        assert list(line.get_ydata()) == pytest.approx(expected)
    assert ax.get_xscale() == "log"

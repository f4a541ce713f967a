"""Figures of the position chapters (tutorial_lib.figures.positional and .relative)."""

import pytest
import torch
from matplotlib.figure import Figure

from tutorial_lib.figures.positional import (
    SCORE_VARIANTS,
    draw_length_ratio,
    position_scores_html,
    rope_decay_bound,
)


def test_rope_decay_bound_starts_at_the_mean_partial_count():
    # At distance 0 every term is 1, so |S_j| = j and the mean over j = 1..d/2 is (d/2 + 1)/2.
    bound = rope_decay_bound(torch.tensor([0, 10, 100, 1000]), d=128)
    assert bound[0].item() == pytest.approx(32.5)
    assert bound[0] > bound[1] > bound[2]  # the long-range decay RoFormer describes


@pytest.mark.parametrize("name", ["sinusoidal_explorer", "position_scores_explorer"])
def test_explorers_draw_every_frame_differently(name):
    import tutorial_lib.figures.positional as plots

    explorer = getattr(plots, name)()
    frames = explorer.frames()
    assert len(frames) == explorer.n_frames
    assert len(set(frames.values())) == explorer.n_frames  # every control changes the view
    assert all("<svg" in f for f in frames.values())


def _title(frame: str) -> str:
    return frame.split('font-weight="bold">', 1)[1].split("<", 1)[0]


def test_every_variant_has_its_own_title_and_a_colour_key():
    titles = {_title(position_scores_html(v, 16)) for v in SCORE_VARIANTS}
    assert len(titles) == len(SCORE_VARIANTS)
    assert all("matrix colour = value" in position_scores_html(v, 16) for v in SCORE_VARIANTS)


@pytest.mark.parametrize("variant", SCORE_VARIANTS)
def test_the_masked_key_appears_exactly_when_cells_are_masked(variant):
    frame = position_scores_html(variant, 16)
    causal = variant not in ("Shaw (K=8)", "RoPE")  # these two are drawn bidirectional
    assert ("masked future keys" in frame) == causal


def test_bad_variant_and_too_short_maps_are_refused():
    with pytest.raises(ValueError, match="variant must be one of"):
        position_scores_html("NoPE", 16)
    with pytest.raises(ValueError, match="T must be an integer >= 2"):
        position_scores_html("ALiBi", 1)


def test_length_ratio_labels_stay_inside_the_axes():
    fig = Figure(figsize=(6.4, 3.2))
    points = [(0.3, 0.1), (3.0, 0.9), (30.0, 1.0), (800.0, 0.2)]
    results = {f"setting {i}": {"ratio": r, "accuracy": a} for i, (r, a) in enumerate(points)}
    draw_length_ratio(fig, results)
    fig.canvas.draw()
    box = fig.axes[0].get_window_extent()
    for text in fig.axes[0].texts:
        extent = text.get_window_extent()
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, text.get_text()

"""tutorial_lib.figures.softmax: the saturation explorer of chapter Q2."""

import math
import re

import pytest

from tutorial_lib.figures.softmax import saturation_explorer, saturation_html
from tutorial_lib.softmax import SCALINGS, random_dot_products, sharpness


def _xticks(frame: str) -> list[str]:
    """Tick labels of the scores panel (the first SVG), in order."""
    first = frame.split("</svg>")[0]
    return re.findall(r'text-anchor="middle">(-?\d+)</text>', first)


@pytest.mark.parametrize(("scaling", "half_width"), [("none", 4.5 * 32), ("1/√d_k", 4.5)])
def test_scores_axis_is_the_same_for_every_d_k_so_the_histogram_visibly_widens(scaling, half_width):
    explorer = saturation_explorer()
    frames = {d_k: explorer.render(d_k=d_k, scaling=scaling, T=64) for d_k in explorer.grid["d_k"]}
    ticks = {tuple(_xticks(f)) for f in frames.values()}
    assert len(ticks) == 1, ticks  # one x-axis for all d_k of this scaling
    for d_k, frame in frames.items():
        assert f"the axis spans ±{half_width:.3g} for every d_k at this scaling" in frame
        std = math.sqrt(d_k) if scaling == "none" else 1.0
        assert f"standard deviation {std:.3g}" in frame


def test_scaled_frames_get_an_axis_of_their_own_size():
    explorer = saturation_explorer()
    unscaled, scaled = (explorer.render(d_k=64, scaling=s, T=64) for s in ("none", "1/√d_k"))
    assert max(int(t) for t in _xticks(scaled)) < max(int(t) for t in _xticks(unscaled)) / 10


@pytest.mark.parametrize("scaling", list(SCALINGS))
def test_bars_show_the_medians_the_chapter_can_quote(scaling):
    frame = saturation_html(64, scaling, 64)
    scale = {"none": 1.0, "1/√d_k": 1 / 8, "1/d_k": 1 / 64}[scaling]
    stats = sharpness(scale * random_dot_products(64, 64, 64, 0))
    for name, key in [
        ("entropy / log T", "entropy_fraction"),
        ("largest weight", "max_weight"),
        ("‖J‖_F, the softmax Jacobian", "jacobian_norm"),  # the norm itself, not divided by 1/2
    ]:
        assert f"{name}: <b>{stats[key].median().item():.3f}</b>" in frame


def test_explorer_grid_is_small_and_every_frame_differs():
    explorer = saturation_explorer()
    assert explorer.n_frames <= 40
    assert explorer.initial == {"d_k": 64, "scaling": "none", "T": 64}
    frames = explorer.frames()
    assert len(set(frames.values())) == explorer.n_frames
    assert all(f.count('role="img"') == 2 for f in frames.values())  # two panels


def test_live_widget_redraws_when_a_control_moves():
    box = saturation_explorer(d_ks=(4, 16), Ts=(8,)).widget()
    before = box.view.value
    box.controls["d_k"].value = 16
    wider = box.view.value
    assert wider != before
    box.controls["scaling"].value = "1/√d_k"
    assert box.view.value not in (before, wider)

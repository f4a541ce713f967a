"""tutorial_lib.figures.softmax: the saturation explorer of chapter Q2."""

import matplotlib
import pytest
from matplotlib.figure import Figure

from tutorial_lib.figures.softmax import draw_saturation, saturation_explorer
from tutorial_lib.softmax import SCALINGS

matplotlib.use("Agg")


@pytest.mark.parametrize("scaling", list(SCALINGS))
def test_draw_saturation_draws_on_the_given_figure_only(scaling):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = Figure()
    axes = draw_saturation(fig, 16, scaling, 8)
    assert len(axes) == 2 and all(ax.figure is fig for ax in axes)
    assert len(fig.texts) >= 3  # the three averages
    assert plt.get_fignums() == before


def test_explorer_grid_is_small_and_toggling_changes_the_frame():
    explorer = saturation_explorer()
    assert explorer.n_frames <= 40
    assert explorer.initial == {"d_k": 64, "scaling": "none", "T": 64}
    unscaled = explorer.render(d_k=64, scaling="none", T=8)
    scaled = explorer.render(d_k=64, scaling="1/√d_k", T=8)
    assert unscaled[:8] == b"\x89PNG\r\n\x1a\n" and unscaled != scaled


def test_live_widget_redraws_when_a_control_moves():
    box = saturation_explorer(d_ks=(4, 16), Ts=(8,)).widget()
    before = box.view.value
    box.controls["d_k"].value = 16
    wider = box.view.value
    assert wider != before
    box.controls["scaling"].value = "1/√d_k"
    assert box.view.value not in (before, wider)


def test_kept_figure_frames_equal_frames_drawn_on_a_new_figure():
    """The explorer updates one figure's artists; every frame must look as if drawn afresh."""
    explorer = saturation_explorer(d_ks=(4, 256), Ts=(8, 512))
    frames = [
        {"d_k": d_k, "scaling": scaling, "T": T}
        for d_k in (4, 256)
        for scaling in explorer.grid["scaling"]
        for T in (8, 512)
    ]
    kept = [explorer.render(**params) for params in frames]
    for params, png in zip(frames, kept, strict=True):
        fresh = saturation_explorer(d_ks=(4, 256), Ts=(8, 512)).render(**params)
        assert png == fresh, params

"""tutorial_lib.figures.norms.draw_position_influence: exact zeros are marked, not coloured."""

import numpy as np
import torch
from matplotlib.figure import Figure

from tutorial_lib.figures.norms import draw_position_influence


def test_every_map_gets_a_panel_and_zeros_a_grey_dot():
    causal = torch.tril(torch.rand(4, 4, generator=torch.Generator().manual_seed(0)) + 0.1)
    leaky = causal + 0.01
    fig = Figure(figsize=(8, 3), layout="constrained")
    draw_position_influence(fig, {"causal": causal, "leaky": leaky})
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["causal", "leaky"]
    assert len(fig.axes) == 3  # and one colour bar
    image = panels[0].images[0].get_array()
    assert np.ma.is_masked(image) and image.mask.sum() == 6  # the zeros above the diagonal
    dots = panels[0].lines[0]
    assert len(dots.get_xdata()) == 6 and len(panels[1].lines[0].get_xdata()) == 0

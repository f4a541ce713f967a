"""Figures of the position chapters (tutorial_lib.figures.positional)."""

import pytest
import torch


def test_rope_decay_bound_starts_at_the_mean_partial_count():
    from tutorial_lib.figures.positional import rope_decay_bound

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

"""tutorial_lib.figures.norms: the axes explorer highlights what each layer really averages over."""

import numpy as np
import pytest

from tutorial_lib.figures.norms import (
    _GROUP,
    AXES_ELEMENTS,
    AXES_LENGTHS,
    AXES_NORMS,
    AXES_SHAPE,
    axes_padding_mask,
    norm_axes_explorer,
    norm_axes_html,
    statistic_group,
)

B, T, D = AXES_SHAPE
N_REAL = sum(AXES_LENGTHS)
EXPECTED_SIZE = {
    "BatchNorm": B * T,
    "BatchNorm, masked": N_REAL,
    "LayerNorm": D,
    "RMSNorm": D,
    "InstanceNorm1d": T,
    "GroupNorm (2 groups)": (D // 2) * T,
    "LayerNorm over (T, D)": T * D,
}


def test_every_norm_has_an_expected_size():
    assert set(EXPECTED_SIZE) == set(AXES_NORMS)


@pytest.mark.parametrize("norm", list(AXES_NORMS))
@pytest.mark.parametrize("element", AXES_ELEMENTS)
def test_group_sizes_and_membership(norm, element):
    group = statistic_group(norm, element)
    assert group.shape == AXES_SHAPE
    assert group.sum() == EXPECTED_SIZE[norm]
    assert group[element]  # an output always depends on its own input
    b, t, d = element
    real = axes_padding_mask().numpy()
    if norm in ("LayerNorm", "RMSNorm"):
        expected = np.zeros(AXES_SHAPE, dtype=bool)
        expected[b, t, :] = True
        assert np.array_equal(group, expected)
    if norm.startswith("BatchNorm"):
        assert group[:, :, d].sum() == group.sum()  # one feature only
    if norm == "BatchNorm, masked":
        assert not group[~real].any()  # no padded position
    if norm == "BatchNorm":
        assert group[~real].any()  # padding counted


@pytest.mark.parametrize("norm", list(AXES_NORMS))
def test_frame_colours_exactly_the_measured_cells(norm):
    frame = norm_axes_html(norm=norm, element="b=0, t=3, d=2")
    assert frame.count(f'height="22" fill="{_GROUP}"') == EXPECTED_SIZE[norm]  # one per input
    assert frame.count("<svg") >= B  # one panel per sequence, so they stack on a phone
    assert frame.count('stroke-width="3"') == 1  # the outlined output
    assert f"uses the <b>{EXPECTED_SIZE[norm]}</b> orange numbers" in frame


def test_bad_choices_raise():
    with pytest.raises(ValueError, match="element must be one of"):
        norm_axes_html(norm="LayerNorm", element="b=9, t=0, d=0")
    with pytest.raises(ValueError, match="norm must be one of"):
        statistic_group("WeightNorm", AXES_ELEMENTS[0])


def test_explorer_is_small_and_renders():
    explorer = norm_axes_explorer()
    assert explorer.n_frames <= 40
    assert len(set(explorer.frames().values())) == explorer.n_frames

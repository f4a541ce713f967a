"""tutorial_lib.positional.VARIANTS: one table of positional variants, read by the lab and the
figures; a new row changes no chapter."""

import pytest
from matplotlib.figure import Figure

from tutorial_lib.figures.relative import VARIANT_COLOURS, draw_extrapolation, variant_style
from tutorial_lib.labs.extrapolation import (
    CHAPTER_VARIANTS,
    VOCAB,
    ExtrapolationConfig,
    PositionModel,
    train_ensemble,
)
from tutorial_lib.positional import (
    VARIANTS,
    AbsolutePositionalEncoding,
    Rotation,
    ScoreBias,
    Settings,
    SinusoidalPositionalEncoding,
    Variant,
    variant,
)

KINDS = {"absolute": AbsolutePositionalEncoding, "bias": ScoreBias, "rotation": Rotation}


@pytest.mark.parametrize("row", VARIANTS, ids=lambda row: row.name)
def test_every_row_makes_a_module_of_the_group_it_names(row):
    made = row.make(Settings(d_model=16, n_head=4))
    if row.acts == "none":
        assert made is None
    else:
        assert isinstance(made, KINDS[row.acts])
    assert row.label and variant(row.name) is row


def test_names_are_unique_and_an_unknown_one_lists_them():
    names = [row.name for row in VARIANTS]
    assert len(set(names)) == len(names)
    with pytest.raises(ValueError, match=r"variant must be one of \['none', 'learned'.*got 'nope'"):
        variant("nope")


def test_colours_and_markers_follow_the_tables_order():
    styles = [variant_style(row.name) for row in VARIANTS]
    assert styles[0][1] == "#999999"  # no positions: grey
    q3b = [variant_style(name) for name in CHAPTER_VARIANTS]
    assert len({colour for _, colour, _ in q3b}) == len(q3b)  # Q3b's nine rows, nine colours
    assert VARIANT_COLOURS == {row.name: variant_style(row.name)[1] for row in VARIANTS}


@pytest.fixture
def tenth_row():
    """A variant the book does not have: sinusoids with a short base."""
    row = Variant(
        "sinusoidal-100", "absolute", lambda s: SinusoidalPositionalEncoding(s.d_model, 100.0),
        "sinusoidal, base 100",
    )  # fmt: skip
    VARIANTS.append(row)
    try:
        yield row
    finally:
        VARIANTS.remove(row)


def test_a_tenth_row_reaches_the_lab_and_the_figures_and_leaves_chapter_q3b_alone(tenth_row):
    assert ExtrapolationConfig().variants == CHAPTER_VARIANTS  # Q3b names the nine it compares
    cfg = ExtrapolationConfig(
        variants=(*CHAPTER_VARIANTS, tenth_row.name), seeds=(0,), steps=2, eval_lens=(16, 32),
        eval_batch=4,
    )  # fmt: skip
    model = PositionModel(tenth_row.name, VOCAB, cfg)
    assert isinstance(model.absolute, SinusoidalPositionalEncoding) and model.absolute.base == 100
    rows = [r for name in cfg.variants for r in train_ensemble(name, cfg)]
    assert {r["variant"] for r in rows} == set(cfg.variants)
    fig = Figure()
    draw_extrapolation(fig, rows, cfg)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels[-1] == "sinusoidal, base 100" and len(labels) == 10
    assert variant_style(tenth_row.name)[1] != variant_style("none")[1]


def test_more_rows_than_colours_cycle_instead_of_failing():
    before = list(VARIANTS)
    VARIANTS.extend(
        Variant(f"extra-{i}", "rotation", lambda s: None, f"extra {i}") for i in range(12)
    )
    try:
        styles = [variant_style(row.name) for row in VARIANTS]
        assert len(styles) == len(before) + 12
        assert all(colour and marker for _, colour, marker in styles)
    finally:
        del VARIANTS[len(before) :]
    assert VARIANTS == before

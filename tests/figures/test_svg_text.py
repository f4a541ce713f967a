"""Text in a matplotlib figure the book shows reads at MIN_TEXT_PX or more, however wide.

The browser tests measure the built pages; this checks the rule where it is made, for
figures narrower and wider than the column (a wide one is scaled down to fit it).
"""

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from tutorial_lib.figures.common import COLUMN_PX, MIN_TEXT_PX, _svg_figure, use_book_style  # noqa: E402


@pytest.mark.parametrize("width_in", [4.0, 7.0, 9.6, 14.0])
def test_text_reads_at_the_minimum_where_the_book_shows_it(width_in):
    use_book_style()
    fig, axes = plt.subplots(1, 3, figsize=(width_in, 2.5))
    for ax in axes:
        ax.plot([0, 1000, 2000], [0.1, 0.5, 0.9])
        ax.set_xlabel("distance past the training length")
    fig.suptitle("accuracy by distance")
    svg = _svg_figure(fig)
    plt.close(fig)
    width_pt = float(re.search(r'<svg[^>]* width="([0-9.]+)pt"', svg).group(1))
    shown_px = min(width_pt * 4 / 3, COLUMN_PX)  # the viewBox is in points
    sizes = [float(s) for s in re.findall(r"font[^;\"]*?([0-9.]+)px", svg)]
    assert sizes, "no text found in the SVG"
    assert min(sizes) * shown_px / width_pt >= MIN_TEXT_PX


def test_the_saved_width_has_the_last_word(monkeypatch):
    """The width measured before saving can miss the saved one (Q7's distance profile came
    out 0.24 pt wider, its text at 10.996 px): with that measure skipped entirely, the check
    of the saved SVG alone still brings the text up to the minimum."""
    from tutorial_lib.figures import common

    monkeypatch.setattr(common, "_raise_small_text", lambda fig: None)
    test_text_reads_at_the_minimum_where_the_book_shows_it(14.0)

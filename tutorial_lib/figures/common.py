"""Drawing helpers every figure module shares: the palette."""

from __future__ import annotations

__all__ = ["HEAD_COLOURS", "use_book_style"]

# Colour-blind-safe palette (Okabe-Ito) for heads.
HEAD_COLOURS = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
]


def use_book_style() -> None:
    """Figures every chapter draws with matplotlib: sharp on 2x screens, text large enough.

    Chapters call this once, in their first cell. In a kernel with the inline backend the
    figures are sent at twice their size (``retina``); everywhere, matplotlib's default text
    sizes are raised so that ticks and labels read at 11 CSS px or more.
    """
    import matplotlib as mpl

    mpl.rcParams.update(
        {"font.size": 11, "axes.titlesize": 11, "axes.labelsize": 11, "legend.fontsize": 10}
    )
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # no IPython here: nothing to configure
        return
    set_matplotlib_formats("retina")

"""Chapter Q4 (LayerNorm or BatchNorm?): the axes explorer's redraw time."""

from __future__ import annotations

from common import Result, time_explorer


def bench_q4_axes_explorer() -> list[Result]:
    """Redraw time of every frame of the norm-axes explorer (7 norms x 5 elements)."""
    from tutorial_lib.figures.norms import norm_axes_explorer

    explorer = norm_axes_explorer()
    return time_explorer("q4 axes explorer", explorer)

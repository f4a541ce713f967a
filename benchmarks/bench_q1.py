"""Chapter Q1's explorer: the shape table for every grid point."""

from common import time_explorer

from tutorial_lib.figures import Explorer
from tutorial_lib.figures.attention import shape_trace_html


def bench_q1_shape_explorer():
    explorer = Explorer(
        shape_trace_html,
        {"B": [1, 2, 4], "T": [4, 16, 64], "d_model": [64, 512], "n_head": [1, 2, 4, 8]},
        kind="html",
    )
    return time_explorer("Q1 shape explorer", explorer)

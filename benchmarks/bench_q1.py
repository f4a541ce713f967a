"""Chapter Q1: the shape explorer's redraw, the heads experiment, the chapter's execution."""

from __future__ import annotations

import time

from common import Result, chapter_execution, time_explorer

from tutorial_lib.figures import Explorer
from tutorial_lib.figures.attention import shape_trace_html
from tutorial_lib.labs.heads import train_heads
from tutorial_lib.training import one_thread


def bench_q1_shape_explorer():
    explorer = Explorer(
        shape_trace_html,
        {"B": [1, 2, 4], "T": [5, 16, 64], "d_model": [64, 512], "n_head": [1, 2, 4, 8]},
        kind="html",
    )
    return time_explorer("Q1 shape explorer", explorer)


def bench_q1_heads_experiment():
    """The chapter's 16 one-head and 16 two-head runs, 500 steps each, trained as one ensemble."""
    with one_thread():
        start, cpu = time.perf_counter(), time.process_time()
        result = train_heads([1] * 16 + [2] * 16, key="q1-heads")
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    solved = [int((result.accuracy[result.copies(h)] > 0.95).sum()) for h in (1, 2)]
    note = f"runs over 95%: {solved[0]} of 16 with one head, {solved[1]} of 16 with two"
    return [
        Result("Q1 heads experiment (32 runs x 500 steps), wall", wall, "s", None, note),
        Result("Q1 heads experiment, CPU", cpu, "s", None),
    ]


def bench_q1_chapter_execution():
    return chapter_execution("Q1", 20.0)

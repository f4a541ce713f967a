"""Chapter Q2: the saturation explorer's redraw time, and the chapter's execution time."""

from __future__ import annotations

import os

from common import chapter_execution, time_explorer

from tutorial_lib.figures import Explorer
from tutorial_lib.figures.softmax import saturation_explorer


def _one_line(fig, slope, label):
    ax = fig.subplots()
    ax.plot([0, 1], [0, slope])
    ax.set_title(label)


def bench_q2_saturation_explorer():
    """Redraw per frame; a one-line figure of the same size, timed alongside, gauges the machine."""
    rows = time_explorer("Q2 saturation explorer", saturation_explorer())
    reference = time_explorer(
        "one-line figure",
        Explorer(_one_line, {"slope": [1, 2, 3, 4, 5], "label": ["a", "b"]}, figsize=(8.0, 3.1)),
    )
    ratio = rows[0].value / reference[0].value
    rows[0].note += (
        f"; {ratio:.1f}x the median of a one-line figure timed alongside "
        f"({reference[0].value:.0f} ms), load average {os.getloadavg()[0]:.1f}"
    )
    return rows


def bench_q2_chapter_execution():
    # Issue 21 trains the sixteen unscaled copies up to ten times longer, each stopping once its
    # loss is below 0.1: about 9 s of CPU (about 12 s when every copy ran all 4,000 steps).
    return chapter_execution("Q2", 30.0)

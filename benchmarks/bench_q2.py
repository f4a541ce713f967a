"""Chapter Q2: the saturation explorer's redraw time, and the chapter's execution time."""

from __future__ import annotations

import os
import time
from pathlib import Path

from common import Result, time_explorer

from tutorial_lib.figures import Explorer
from tutorial_lib.figures.softmax import saturation_explorer

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTER = BOOK / "q2_scaling.ipynb"


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


def chapter_execution(notebook: Path, label: str, budget_s: float) -> list[Result]:
    """A chapter top to bottom in a fresh kernel, as the build runs it (kernel start included).

    Wall time is what a reader waits; the kernel's CPU time and the load average
    say how much of it was other processes on a shared machine.
    """
    import nbformat
    import psutil
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}
    )
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    with client.setup_kernel():
        kernel = psutil.Process(client.km.provisioner.process.pid)
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        cpu = kernel.cpu_times()
    wall = time.perf_counter() - start
    note = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on 2 cores"
    return [
        Result(f"{label} chapter execution, wall (fresh kernel)", wall, "s", budget_s, note),
        Result(f"{label} chapter execution, kernel CPU", cpu.user + cpu.system, "s", None),
    ]


def bench_q2_chapter_execution():
    # Issue 21 trains the sixteen unscaled copies up to ten times longer, each stopping once its
    # loss is below 0.1: about 9 s of CPU (about 12 s when every copy ran all 4,000 steps).
    return chapter_execution(CHAPTER, "Q2", 30.0)

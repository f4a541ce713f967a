"""Shared timing helpers for `make bench`.

A benchmark module is a file ``benchmarks/bench_*.py`` with functions named
``bench_*``; each returns a list of :class:`Result` rows. ``run.py`` finds
them, prints one table and writes it to ``_build/bench.json``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import book_toc  # noqa: E402  (the chapters, in the order of _toc.yml)


@dataclass
class Result:
    name: str  # what was measured
    value: float  # the measurement
    unit: str  # s, ms, MB, %, ...
    budget: float | None = None  # the goal it should stay under (None: reported only)
    note: str = ""  # anything a reader needs to interpret the number

    @property
    def within_budget(self) -> bool | None:
        return None if self.budget is None else self.value <= self.budget

    def as_dict(self) -> dict:
        return asdict(self) | {"within_budget": self.within_budget}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def time_explorer(name: str, explorer, budget_ms: float = 60.0) -> list[Result]:
    """Redraw time per frame, as a live kernel pays it the first time a control moves there.

    Every frame of the grid is drawn uncached (``Explorer.render``) after one
    warm-up frame, so the numbers include matplotlib's drawing and PNG encoding.
    Displaying it in a live kernel (after the warm-up) is timed too: the starting
    frame and the widget.
    """
    import itertools
    import os

    from tutorial_lib.figures.explorer import STATIC_ENV

    names = list(explorer.grid)
    combos = [dict(zip(names, v, strict=True)) for v in itertools.product(*explorer.grid.values())]
    explorer.render(**combos[-1])  # warm-up: imports, fonts, caches, the kept figure

    # Showing the explorer in a live kernel: the starting frame and the widget, nothing more.
    os.environ.pop(STATIC_ENV, None)
    start = time.perf_counter()
    explorer._repr_mimebundle_()
    display_ms = 1000 * (time.perf_counter() - start)

    times = []
    for params in combos:
        start = time.perf_counter()
        explorer.render(**params)
        times.append(1000 * (time.perf_counter() - start))
    return [
        Result(
            f"{name}: redraw median", statistics.median(times), "ms", None, f"{len(times)} frames"
        ),
        Result(f"{name}: redraw p95", percentile(times, 95), "ms", budget_ms),
        Result(f"{name}: display in a live kernel", display_ms, "ms", None,
               "starting frame and widget; the other frames are drawn when asked for"),
    ]  # fmt: skip


def chapter(label: str) -> Path:
    """The notebook of chapter ``label`` ("Q1", "Q3b"), found in ``_toc.yml`` as the tests do."""
    prefix = label.lower() + "_"
    found = [path for path in book_toc.chapters(ROOT) if path.stem.startswith(prefix)]
    if len(found) != 1:
        raise ValueError(
            f"no single chapter {label} in _toc.yml; its chapters: {book_toc.chapters(ROOT)}"
        )
    return found[0]


def chapter_execution(label: str, budget_s: float | None = None) -> list[Result]:
    """Chapter ``label`` top to bottom in a fresh kernel, as the build runs it (kernel start
    included).

    Wall time is what a reader waits; the kernel's CPU time and the load average
    say how much of it was other processes on a shared machine.
    """
    import nbformat
    import psutil
    from nbclient import NotebookClient

    notebook = chapter(label)
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
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

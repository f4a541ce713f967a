"""Shared timing helpers for `make bench`.

A benchmark module is a file ``benchmarks/bench_*.py`` with functions named
``bench_*``; each returns a list of :class:`Result` rows. ``run.py`` finds
them, prints one table and writes it to ``_build/bench.json``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass


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

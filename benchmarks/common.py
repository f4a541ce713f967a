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
    """
    import itertools

    names = list(explorer.grid)
    combos = [dict(zip(names, v, strict=True)) for v in itertools.product(*explorer.grid.values())]
    explorer.render(**combos[0])  # warm-up: fonts, caches, the kept figure
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
    ]

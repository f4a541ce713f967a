"""Chapters Q3a and Q3b (positions): explorer redraw times; the length-extrapolation run.

``bench_q3b_extrapolation`` runs the FULL experiment (both toy tasks, three seeds), a
larger setting than the book executes, and reports its time and its table.
"""

from __future__ import annotations

from common import Result, time_explorer


def bench_q3a_sinusoidal_explorer() -> list[Result]:
    """Redraw time of every frame of the sinusoidal-encoding explorer (3 x 3 x 3 frames)."""
    from tutorial_lib.figures.positional import sinusoidal_explorer

    return time_explorer("q3a sinusoidal explorer", sinusoidal_explorer())


def bench_q3b_position_scores_explorer() -> list[Result]:
    """Redraw time of every frame of the what-each-variant-adds explorer (6 x 3 frames)."""
    from tutorial_lib.figures.positional import position_scores_explorer

    return time_explorer("q3b position-scores explorer", position_scores_explorer())


# The full experiment: three seeds and an extra length (8L); the book runs seed 0 up to 4L.
FULL = {"seeds": (0, 1, 2), "tasks": ("lag", "hold"), "eval_lens": (16, 32, 64, 128)}


def bench_q3b_extrapolation() -> list[Result]:
    """The full length-extrapolation experiment: its time, then mean accuracy per cell."""
    import time

    from tutorial_lib.labs.extrapolation import (
        ExtrapolationConfig,
        extrapolation_experiment,
        summarise,
    )

    cfg = ExtrapolationConfig(**FULL)
    start = time.perf_counter()
    rows = extrapolation_experiment(cfg)
    seconds = time.perf_counter() - start
    results = [
        Result(
            "q3b extrapolation: full experiment time", seconds, "s", None,
            f"{len(rows)} runs: {len(cfg.tasks)} tasks x {len(cfg.variants)} variants x "
            f"{len(cfg.seeds)} seeds, {cfg.steps} steps each, trained at L={cfg.train_len}",
        )
    ]  # fmt: skip
    for (task, variant, T), values in summarise(rows).items():
        mean = 100 * sum(values) / len(values)
        spread = ", ".join(f"{100 * v:.0f}" for v in values)
        results.append(Result(f"q3b {task:4s} {variant:10s} T={T:<3d} accuracy", mean, "%",
                              None, f"seeds: {spread}"))  # fmt: skip
    return results

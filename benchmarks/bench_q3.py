"""Chapters Q3a and Q3b (positions): explorer redraw times; their experiments at full size.

The chapters train eight seeds of every set-up; here the same experiments run with more
seeds (and, for Q3b, length 128 too), and again in a larger setting, so that a reader can
check that the chapters' claims do not hang on their small budget. Every row gives the mean
over seeds with the worst and best seed in its note.
"""

from __future__ import annotations

import time

from common import Result, time_explorer


def bench_q3a_sinusoidal_explorer() -> list[Result]:
    """Redraw time of every frame of the sinusoidal-encoding explorer (3 x 3 x 3 frames)."""
    from tutorial_lib.figures.positional import sinusoidal_explorer

    return time_explorer("q3a sinusoidal explorer", sinusoidal_explorer())


def bench_q3b_position_scores_explorer() -> list[Result]:
    """Redraw time of every frame of the what-each-variant-adds explorer (6 x 3 frames)."""
    from tutorial_lib.figures.positional import position_scores_explorer

    return time_explorer("q3b position-scores explorer", position_scores_explorer())


def _spread(values: list[float]) -> tuple[float, str]:
    mean = 100 * sum(values) / len(values)
    return mean, f"{len(values)} seeds: worst {100 * min(values):.0f}, best {100 * max(values):.0f}"


# Chapter Q3a's seven set-ups: initialisation x the sqrt(D) factor, with a separate output
# layer and with the table tied to it (as in the paper).
Q3A_SETTINGS = {
    "chapter (D=32, 1 head, 150 steps, B=16, lr 1e-2)": dict(
        d_model=32, n_head=1, steps=150, batch=16, lr=1e-2
    ),
    "larger (D=64, 4 heads, 200 steps, B=32, lr 3e-3)": dict(
        d_model=64, n_head=4, steps=200, batch=32, lr=3e-3
    ),
}


def bench_q3a_embedding_scale() -> list[Result]:
    """The sqrt(d_model) experiment with 16 seeds, at the chapter's size and a larger one."""
    from tutorial_lib.labs.embedding_scale import reversal_experiment

    results = []
    for setting, options in Q3A_SETTINGS.items():
        D = options["d_model"]
        setups = {
            "N(0,1/D), no factor": dict(embed_std=D**-0.5),
            "N(0,1/D) x sqrt(D)": dict(embed_std=D**-0.5, embed_factor=D**0.5),
            "N(0,1) x sqrt(D)": dict(embed_std=1.0, embed_factor=D**0.5),
            "N(0,1), no factor": dict(embed_std=1.0),
            "tied N(0,1/D) x sqrt(D) (paper)": dict(
                embed_std=D**-0.5, embed_factor=D**0.5, tie_output=True
            ),
            "tied N(0,1/D), no factor": dict(embed_std=D**-0.5, tie_output=True),
            "tied N(0,1), no factor": dict(embed_std=1.0, tie_output=True),
        }
        model = {"positions": "sinusoidal", "n_head": options["n_head"]}
        start = time.perf_counter()
        runs = reversal_experiment(
            {name: setup | model for name, setup in setups.items()}, range(16),
            d_model=D, steps=options["steps"], batch=options["batch"], lr=options["lr"],
        )  # fmt: skip
        seconds = time.perf_counter() - start
        results.append(
            Result(f"q3a sqrt(D) {setting}: time", seconds, "s", None, f"{len(runs)} runs")
        )
        for name in setups:
            mean, note = _spread([r["accuracy"] for r in runs if r["setup"] == name])
            ratio = next(r["ratio"] for r in runs if r["setup"] == name)
            results.append(Result(f"q3a sqrt(D) {setting}: {name}", mean, "%", None,
                                  f"token/position {ratio:.2f}; {note}"))  # fmt: skip
    return results


def _extrapolation_table(label: str, cfg) -> list[Result]:
    from tutorial_lib.labs.extrapolation import train_ensemble

    start = time.perf_counter()
    rows = [row for variant in cfg.variants for row in train_ensemble(variant, cfg)]
    seconds = time.perf_counter() - start
    results = [
        Result(
            f"q3b {label}: time", seconds, "s", None,
            f"{len(rows)} runs: {len(cfg.tasks)} tasks x {len(cfg.variants)} variants x "
            f"{len(cfg.seeds)} seeds, {cfg.steps} steps each, trained at L={cfg.train_len}",
        )
    ]  # fmt: skip
    for task in cfg.tasks:
        for variant in cfg.variants:
            mine = [r for r in rows if (r["task"], r["variant"]) == (task, variant)]
            for T in cfg.eval_lens:
                key = "accuracy" if T == cfg.train_len else "accuracy_beyond_L"
                where = "all positions" if T == cfg.train_len else f"positions >= {cfg.train_len}"
                mean, note = _spread([r[key][T] for r in mine])
                results.append(Result(f"q3b {label}: {task} {variant} T={T}", mean, "%", None,
                                      f"{where}; {note}"))  # fmt: skip
    return results


def bench_q3b_extrapolation() -> list[Result]:
    """The chapter's length-extrapolation experiment with 16 seeds and length 128 as well."""
    from tutorial_lib.labs.extrapolation import ExtrapolationConfig

    cfg = ExtrapolationConfig(seeds=tuple(range(16)), eval_lens=(16, 32, 64, 128), eval_batch=64)
    return _extrapolation_table("chapter setting", cfg)


def bench_q3b_extrapolation_larger() -> list[Result]:
    """The same experiment in a larger setting: feed-forward block, batches of 32, 300 steps."""
    from tutorial_lib.labs.extrapolation import ExtrapolationConfig

    cfg = ExtrapolationConfig(d_ff=128, batch=32, steps=300, lr=3e-3, seeds=tuple(range(8)))
    return _extrapolation_table("larger setting", cfg)


def bench_q3b_alibi_depth() -> list[Result]:
    """Q3b's exercise on depth: ALiBi and no encoding with two layers, two training budgets."""
    from tutorial_lib.labs.extrapolation import ExtrapolationConfig, train_ensemble

    results = []
    budgets = {  # the exercise's two settings: the chapter's, and a larger, longer one
        "chapter setting": ExtrapolationConfig(n_layer=2),
        "d_ff 128, B 32, 1500 steps": ExtrapolationConfig(
            n_layer=2, d_ff=128, batch=32, steps=1500, lr=3e-3
        ),
    }
    for label, cfg in budgets.items():
        for variant in ("alibi", "none"):
            start = time.perf_counter()
            runs = train_ensemble(variant, cfg, tasks=("lag",))
            seconds = time.perf_counter() - start
            for T in cfg.eval_lens:
                key = "accuracy" if T == cfg.train_len else "accuracy_beyond_L"
                mean, note = _spread([r[key][T] for r in runs])
                results.append(Result(f"q3b 2 layers, {label}: lag {variant} T={T}", mean,
                                      "%", None, f"{note}; {seconds:.0f} s"))  # fmt: skip
    return results

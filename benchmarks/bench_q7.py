"""Chapter Q7 (reading past the training length): the explorer's redraw time, the chapter's
experiment with more seeds and in a larger setting, and interpolation with longer fine-tunes.

The chapter trains four seeds per task at L = 256 and fine-tunes for 20 steps; here the same
experiment runs with eight seeds, then in a larger setting (L = 512, D = 64, four heads of
d_k = 16, longer training and fine-tune), so that a reader can check that the chapter's claims
do not hang on its small budget. Every row gives the mean over seeds, the worst and best seed
in its note.
"""

from __future__ import annotations

import time

from common import Result, time_explorer


def bench_q7_pairs_explorer() -> list[Result]:
    """Redraw time of every frame of the pairs explorer (6 scales x 2 settings)."""
    from tutorial_lib.figures.long_context import pairs_explorer

    return time_explorer("q7 pairs explorer", pairs_explorer())


def _spread(values: list[float]) -> tuple[float, str]:
    mean = 100 * sum(values) / len(values)
    return mean, f"{len(values)} seeds: worst {100 * min(values):.0f}, best {100 * max(values):.0f}"


def _table(label: str, cfg) -> list[Result]:
    from tutorial_lib.labs.long_context_reading import long_context_experiment

    start = time.perf_counter()
    result = long_context_experiment(cfg)
    seconds = time.perf_counter() - start
    S = len(cfg.seeds)
    rows = [Result(f"q7 {label}: time", seconds, "s", None,
                   f"{len(cfg.tasks)} tasks x {S} seeds trained once at L={cfg.train_len}, "
                   f"{cfg.steps} steps; read every way; {len(cfg.methods)} fine-tunes of "
                   f"{cfg.finetune_steps} steps")]  # fmt: skip
    for phase in ("trained", "finetuned"):
        for method, runs in result[phase].items():
            for c, task in enumerate(cfg.tasks):
                for T in cfg.eval_lens:
                    mean, note = _spread([r["accuracy"][T] for r in runs[c * S : (c + 1) * S]])
                    rows.append(Result(f"q7 {label}: {phase} {method} {task} {T // cfg.train_len}L",
                                       mean, "%", None, note))  # fmt: skip
    for method, runs in result["static"].items():
        for c, task in enumerate(cfg.tasks):
            mean, note = _spread([r["accuracy"][cfg.train_len] for r in runs[c * S : (c + 1) * S]])
            rows.append(Result(f"q7 {label}: static {method} set for {max(cfg.scales)}L, {task} 1L",
                               mean, "%", None, note))  # fmt: skip
    return rows


def bench_q7_chapter_setting() -> list[Result]:
    """The chapter's experiment with eight seeds per task instead of four."""
    from tutorial_lib.labs.long_context import LongContextConfig

    return _table("chapter setting, 8 seeds", LongContextConfig(seeds=tuple(range(8))))


def bench_q7_larger_setting() -> list[Result]:
    """A larger setting: L = 512, D = 64 with four heads, 300 steps, a 60-step fine-tune."""
    from tutorial_lib.labs.long_context import LongContextConfig

    cfg = LongContextConfig(train_len=512, d_model=64, n_head=4, steps=300, batch=8,
                            finetune_steps=60, rerope_window=128)  # fmt: skip
    return _table("larger setting", cfg)


def bench_q7_interpolation_steps() -> list[Result]:
    """The chapter's exercise: interpolation fine-tuned for 100 and 300 steps instead of 20."""
    from tutorial_lib.labs.long_context import LongContextConfig, finetune_readers, train_readers
    from tutorial_lib.labs.long_context_reading import read_at_lengths

    cfg = LongContextConfig()
    models = train_readers(cfg)
    S, results = len(cfg.seeds), []
    for steps in (100, 300):
        start = time.perf_counter()
        tuned = finetune_readers(models, "interpolation", LongContextConfig(finetune_steps=steps))
        rows = read_at_lengths(tuned, ("interpolation",), cfg)["interpolation"]
        seconds = time.perf_counter() - start
        for c, task in enumerate(cfg.tasks):
            for T in cfg.eval_lens:
                mean, note = _spread([r["accuracy"][T] for r in rows[c * S : (c + 1) * S]])
                results.append(Result(f"q7 interpolation, {steps} tuning steps: {task} "
                                      f"{T // cfg.train_len}L", mean, "%", None,
                                      f"{note}; {seconds:.0f} s"))  # fmt: skip
    return results

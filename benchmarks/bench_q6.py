"""Chapter Q6 (shared keys and values): the experiment, four times the steps, decoding time with
each cache, the explorer, and the chapter's execution time.

The chapter counts FLOPs and bytes and never times decoding: at its size a step costs far more
Python and PyTorch overhead than arithmetic or memory traffic, and a loaded machine would make
any timing claim false. The decoding rows here show it on this machine.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

from bench_q2 import chapter_execution
from common import Result, time_explorer

from tutorial_lib.labs import kv_heads as lab

BOOK = Path(__file__).resolve().parents[1] / "book"
SPECS = [lab.KVSpec(n_kv_head=4), lab.KVSpec(n_kv_head=2), lab.KVSpec(n_kv_head=1),
         lab.KVSpec(d_c=8), lab.KVSpec(d_c=16), lab.KVSpec(d_c=32)]  # fmt: skip


@functools.lru_cache(maxsize=1)
def chapter_runs():
    """The chapter's experiment (six variants, six seeds, 200 steps), with its seconds."""
    start, cpu = time.perf_counter(), time.process_time()
    runs = {spec: lab.train_variant(spec) for spec in SPECS}
    return runs, time.perf_counter() - start, time.process_time() - cpu


def _accuracy_rows(runs, prefix: str) -> list[Result]:
    rows = []
    for spec, run in runs.items():
        acc = 100 * run.accuracy
        note = f"seeds {acc.min():.1f}-{acc.max():.1f}%, cache {4 * lab.cache_numbers(spec)} B"
        rows.append(Result(f"{prefix} {spec.name}: digits right", acc.mean().item(), "%", None,
                           note))  # fmt: skip
    return rows


def bench_q6_experiment() -> list[Result]:
    """The chapter's six variants, six seeds each, 200 steps: time and accuracy per variant."""
    runs, wall, cpu = chapter_runs()
    return [
        Result("q6 experiment (6 variants x 6 seeds)", wall, "s", None, f"CPU {cpu:.1f} s"),
        *_accuracy_rows(runs, "q6"),
    ]


def bench_q6_four_times_the_steps() -> list[Result]:
    """MHA, GQA-2 and MQA trained 800 steps instead of 200 (four seeds): whether MQA's gap,
    which the chapter measures at a fixed budget, closes with more training."""
    start = time.perf_counter()
    runs = {spec: lab.train_variant(spec, copies=4, steps=800, eval_every=200)
            for spec in SPECS[:3]}  # fmt: skip
    wall = time.perf_counter() - start
    rows = _accuracy_rows(runs, "q6 800 steps,")
    curve = runs[SPECS[2]].curve
    note = "MQA at steps " + ", ".join(f"{s}: {100 * a.mean():.0f}%" for s, a in curve.items())
    return [Result("q6 800 steps, 3 variants x 4 seeds", wall, "s", None, note), *rows]


def bench_q6_decoding() -> list[Result]:
    """Decoding 256 positions one at a time with each cache, batch 1, one thread: ms per
    position, best of 3. MLA decodes in its absorbed form too."""
    import torch

    from tutorial_lib.training import one_thread

    records = torch.randint(0, lab.DIGITS, (1, 256, lab.FIELDS), generator=torch.Generator())
    rows = []
    with one_thread(), torch.no_grad():
        for spec in (*SPECS[:3], SPECS[4]):
            model = lab.RecordModel(spec).eval()
            forms = {"": {}} if spec.d_c is None else {"": {}, ", absorbed": {"absorbed": True}}
            for suffix, kwargs in forms.items():
                attention = model.attention
                if kwargs:  # the same model, its attention called in the absorbed form
                    attention.forward = functools.partial(type(attention).forward, attention,
                                                          **kwargs)  # fmt: skip
                times = []
                for _ in range(3):
                    cache = model.new_cache()
                    start = time.perf_counter()
                    for t in range(records.shape[1]):
                        model(records[:, t : t + 1], cache)
                    times.append(1000 * (time.perf_counter() - start) / records.shape[1])
                if kwargs:
                    del attention.forward  # back to the class's forward
                note = f"cache {4 * lab.cache_numbers(spec)} B per position"
                rows.append(Result(f"q6 decode {spec.name}{suffix}", min(times), "ms", None, note))
    spread = [r.value for r in rows]
    rows.append(Result("q6 decode: slowest / fastest", max(spread) / min(spread), "x", None,
                       "Python and PyTorch overhead, not the cache, sets these times"))  # fmt: skip
    return rows


def bench_q6_cache_explorer() -> list[Result]:
    """Redraw time of every frame of the cache explorer (3 n_kv_head x 3 d_c, HTML)."""
    from tutorial_lib.figures.kv_heads import cache_explorer

    runs, _, _ = chapter_runs()
    return time_explorer("q6 cache explorer", cache_explorer(runs))


def bench_q6_chapter_execution() -> list[Result]:
    """The notebook top to bottom in a fresh kernel, as the build runs it. Budget: 30 s."""
    return chapter_execution(BOOK / "q6_kv_heads.ipynb", "Q6", 30.0)

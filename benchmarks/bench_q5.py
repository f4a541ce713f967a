"""Chapter Q5 (the whole Transformer): time to learn reversal, alone and as the chapter's
ensemble of eight runs, explorer redraws, the KV cache, beam search."""

from __future__ import annotations

import functools
import statistics
import time

from common import Result, time_explorer

from tutorial_lib import seeds
from tutorial_lib.labs.reverse import LENGTH, chapter_config, train_ensemble, train_reverse
from tutorial_lib.training import one_thread

SEEDS = (0, 1, 2)


@functools.lru_cache(maxsize=1)
def trained_model():
    with one_thread():
        return train_reverse(0)[0]


def bench_q5_reverse_time_to_100() -> list[Result]:
    """Reverse, length 8, 10 symbols, one model at a time (``train``, batch 32): seconds until
    greedy decoding gets 1,000 held-out sequences all exactly right (evaluation included)."""
    seconds, steps = [], []
    with one_thread():
        for seed in SEEDS:
            _, result = train_reverse(seed)
            seconds.append(result.seconds if result.reached else float("inf"))
            steps.append(result.steps)
    runs = zip(seconds, steps, strict=True)
    note = f"seeds {SEEDS}: " + ", ".join(f"{s:.1f} s/{n} steps" for s, n in runs)
    return [
        Result("q5 reverse to 100%: median", statistics.median(seconds), "s", 10.0, note),
        Result("q5 reverse to 100%: slowest seed", max(seconds), "s", 10.0, "1 torch thread"),
        Result("q5 reverse to 100%: median steps", statistics.median(steps), "steps", None),
    ]


def bench_q5_ensemble_to_100() -> list[Result]:
    """The chapter's experiment: eight runs trained as one batched model (batch 32 each) until
    every run gets its 1,000 held-out sequences right; the chapter's largest cost."""
    with one_thread():
        start = time.perf_counter()
        run = train_ensemble([chapter_config()] * 8, key="q5/reverse", steps=600)
        seconds = time.perf_counter() - start
    steps = [s if s is not None else float("inf") for s in run.reached]
    note = "steps " + ", ".join(str(s) for s in steps)
    return [
        Result("q5 ensemble of 8 to 100%", seconds, "s", 15.0, note),
        Result("q5 ensemble: median steps", statistics.median(steps), "steps", None),
        Result("q5 ensemble: slowest run", max(steps), "steps", None),
    ]


def bench_q5_decoding_explorer() -> list[Result]:
    """Redraw time of the decoding explorer (2 inputs x 9 steps) on the trained model."""
    from tutorial_lib.figures.model import decoding_explorer

    model = trained_model()
    with one_thread():
        explorer = decoding_explorer(model, ["3 7 2 2 5 3 6 0", "0 1 2 3 4 5 6 7"])
        return time_explorer("q5 decoding explorer", explorer)


def bench_q5_shape_explorer() -> list[Result]:
    """Redraw time of the whole-model shape tour (32 HTML frames at B=2, meta-device model)."""
    from tutorial_lib.figures import Explorer
    from tutorial_lib.figures.model import model_shape_html

    grid = {
        "T_src": [5, 16],
        "T_tgt": [4, 12],
        "d_model": [64, 512],
        "n_head": [2, 8],
        "N": [1, 6],
    }
    draw = functools.partial(model_shape_html, B=2)
    return time_explorer("q5 shape tour", Explorer(draw, grid, kind="html"))


def bench_q5_kv_cache() -> list[Result]:
    """Greedy decoding of 100 tokens for one source, recomputing everything vs a KV cache."""
    import torch

    from tutorial_lib.data import BOS, make_batch
    from tutorial_lib.model import Transformer

    seeds.manual_seed("bench", "q5", "kv cache")
    model = Transformer(chapter_config()).eval()
    src = make_batch("reverse", 1, LENGTH, seed=0)[0]
    steps = 100

    @torch.no_grad()
    def recompute():
        memory, mask = model.encode(src)
        out = torch.full((1, 1), BOS)
        for _ in range(steps):
            logits = model.decode(out, memory, mask)[:, -1:]
            out = torch.cat([out, logits.argmax(-1)], dim=1)

    @torch.no_grad()
    def cached():
        memory, mask = model.encode(src)
        caches = model.decoder.start_cache(memory)
        token = torch.full((1, 1), BOS)
        for t in range(steps):
            token = model.decoder.step(token, t, caches, mask)[0].argmax(-1)

    def best_of(fn, repeats=3):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return 1000 * min(times)

    with one_thread():
        full_ms, cached_ms = best_of(recompute), best_of(cached)
    return [
        Result("q5 decode 100 tokens: recompute", full_ms, "ms", None, "best of 3"),
        Result(
            "q5 decode 100 tokens: KV cache",
            cached_ms,
            "ms",
            None,
            f"{full_ms / cached_ms:.1f}x faster",
        ),
    ]


def bench_q5_beam_search() -> list[Result]:
    """Beam search (beam 4, alpha 0.6) against greedy decoding, 500 sources of 8 digits."""
    from tutorial_lib.data import make_batch
    from tutorial_lib.decoding import beam_search, greedy_decode_cached

    model = trained_model()
    src = make_batch("reverse", 500, LENGTH, seed=1)[0]
    with one_thread():
        start = time.perf_counter()
        greedy_decode_cached(model, src, LENGTH + 1)
        greedy_ms = 1000 * (time.perf_counter() - start)
        start = time.perf_counter()
        beam_search(model, src, LENGTH + 1, beam_size=4, alpha=0.6)
        beam_ms = 1000 * (time.perf_counter() - start)
    return [
        Result("q5 greedy, 500 sources", greedy_ms, "ms", None),
        Result("q5 beam 4, 500 sources", beam_ms, "ms", None, f"{beam_ms / greedy_ms:.1f}x greedy"),
    ]

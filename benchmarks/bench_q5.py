"""Chapter Q5 (the whole Transformer): time to learn reversal, explorer redraws, the KV cache."""

from __future__ import annotations

import functools
import statistics
import time

from common import Result, time_explorer

from tutorial_lib.labs.reverse import chapter_config, train_reverse
from tutorial_lib.training import one_thread

SEEDS = (0, 1, 2)


@functools.lru_cache(maxsize=1)
def trained_model():
    with one_thread():
        return train_reverse(0)[0]


def bench_q5_reverse_time_to_100() -> list[Result]:
    """Reverse, length 16, 10 symbols: seconds until greedy decoding gets 1,000 held-out
    sequences all exactly right (evaluation included), for three seeds."""
    seconds, steps = [], []
    with one_thread():
        for seed in SEEDS:
            _, result = train_reverse(seed)
            if not result.reached:
                seconds.append(float("inf"))
            else:
                seconds.append(result.seconds)
            steps.append(result.steps)
    runs = zip(seconds, steps, strict=True)
    note = f"seeds {SEEDS}: " + ", ".join(f"{s:.1f} s/{n} steps" for s, n in runs)
    return [
        Result("q5 reverse to 100%: median", statistics.median(seconds), "s", 10.0, note),
        Result("q5 reverse to 100%: slowest seed", max(seconds), "s", 10.0, "1 torch thread"),
        Result("q5 reverse to 100%: median steps", statistics.median(steps), "steps", None),
    ]


def bench_q5_decoding_explorer() -> list[Result]:
    """Redraw time of the decoding explorer (2 inputs x 17 steps) on the trained model."""
    from tutorial_lib.figures.model import decoding_explorer

    model = trained_model()
    with one_thread():
        explorer = decoding_explorer(
            model, ["3 7 2 2 5 3 6 0 7 5 0 7 1 9 8 4", "0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5"]
        )
        return time_explorer("q5 decoding explorer", explorer)


def bench_q5_shape_explorer() -> list[Result]:
    """Redraw time of the whole-model shape tour (64 HTML frames, meta-device model)."""
    from tutorial_lib.figures import Explorer
    from tutorial_lib.figures.model import model_shape_html

    grid = {
        "B": [1, 2],
        "T_src": [5, 16],
        "T_tgt": [4, 12],
        "d_model": [64, 512],
        "n_head": [2, 8],
        "N": [1, 6],
    }
    return time_explorer("q5 shape tour", Explorer(model_shape_html, grid, kind="html"))


def bench_q5_kv_cache() -> list[Result]:
    """Greedy decoding of 100 tokens for one source, recomputing everything vs a KV cache."""
    import torch

    from tutorial_lib.data import BOS, make_batch
    from tutorial_lib.model import Transformer

    torch.manual_seed(0)
    model = Transformer(chapter_config()).eval()
    src = make_batch("reverse", 1, 16, seed=0)[0]
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

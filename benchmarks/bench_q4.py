"""Chapter Q4 (LayerNorm or BatchNorm?): the axes explorer, the ensemble, the execution time."""

from __future__ import annotations

import os
import time

from common import Result, chapter_execution, time_explorer


def bench_q4_axes_explorer() -> list[Result]:
    """Redraw time of every frame of the norm-axes explorer (7 norms x 5 elements)."""
    from tutorial_lib.figures.norms import norm_axes_explorer

    explorer = norm_axes_explorer()
    return time_explorer("q4 axes explorer", explorer)


def bench_q4_ensemble_step() -> list[Result]:
    """One training step of the chapter's 24 runs: stacked in one ensemble, and one by one.

    The chapter trains 8 runs of each of 3 norms (2 layers, D = 32, batches of 8 sentences
    of up to 16 tokens) as one Ensemble (one group per norm); the same 24 models trained one
    after another with ``training.fit`` are the alternative it avoids. Medians of 10 steps.
    """
    import statistics

    import torch
    import torch.nn.functional as F

    from tutorial_lib.labs.norms import TinyEncoder
    from tutorial_lib.labs.norms_runs import train_runs
    from tutorial_lib.labs.seed_ensemble import Ensemble
    from tutorial_lib.training import fit, one_thread

    def members():
        out = []
        for kind in ("layer", "batch", "batch_masked"):
            for run in range(8):
                torch.manual_seed(run)
                out.append(
                    TinyEncoder(16, 2, d_model=32, n_head=2, d_ff=64, norm=kind, positions=False)
                )
        return out

    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 17, (8,), generator=g)
    mask = torch.arange(int(lengths.max())) < lengths[:, None]  # (B, T)
    tokens = torch.randint(1, 16, (24, *mask.shape), generator=g) * mask  # (E, B, T)
    target = torch.randint(0, 2, (24, *mask.shape), generator=g)

    def run_losses(model, _):
        logits = model(tokens, shared=(mask,))[:, mask]  # (E, N, 2)
        return F.cross_entropy(logits.transpose(1, 2), target[:, mask], reduction="none").mean(1)

    with one_thread():
        ensemble = Ensemble(members())
        stacked = []
        for _ in range(11):
            start = time.perf_counter()
            train_runs(ensemble, [None], run_losses, steps=1, lr=3e-3)
            stacked.append(1000 * (time.perf_counter() - start))
        separate = []
        models = members()
        for _ in range(11):
            start = time.perf_counter()
            for e, model in enumerate(models):
                fit(
                    model,
                    iter([None]),
                    lambda m, _, e=e: F.cross_entropy(m(tokens[e], mask)[mask], target[e][mask]),
                    steps=1,
                    lr=3e-3,
                )
            separate.append(1000 * (time.perf_counter() - start))
    ensemble_ms, separate_ms = statistics.median(stacked[1:]), statistics.median(separate[1:])
    note = f"load average {os.getloadavg()[0]:.1f}"
    return [
        Result("Q4 one step of 24 runs, one ensemble", ensemble_ms, "ms", None, note),
        Result(
            "Q4 one step of 24 runs, one by one (fit)",
            separate_ms,
            "ms",
            None,
            f"{separate_ms / ensemble_ms:.1f}x the ensemble's",
        ),
    ]


def bench_q4_chapter_execution() -> list[Result]:
    """The notebook top to bottom in a fresh kernel, as the build runs it. Budget: 15 s."""
    return chapter_execution("Q4", 15.0)


def bench_q4_rmsnorm_timing() -> list[Result]:
    """LayerNorm against RMSNorm, forward and backward on a (32, 128, 512) batch, one thread.

    Zhang and Sennrich (2019) report RMSNorm 7% to 64% faster than LayerNorm in their
    models; the chapter quotes them and says that whether the saving shows depends on the
    code. Here: PyTorch's own layers (a fused LayerNorm kernel against ``nn.RMSNorm``) and
    ``tutorial_lib.norms``' versions (both written from the same elementary operations).
    Medians of 20 passes after two warm-up passes; reported, not asserted.
    """
    import statistics

    import torch

    from tutorial_lib.norms import LayerNorm, RMSNorm
    from tutorial_lib.training import one_thread

    B, T, D = 32, 128, 512
    x = torch.randn(B, T, D, generator=torch.Generator().manual_seed(0), requires_grad=True)
    layers = {
        "nn.LayerNorm": torch.nn.LayerNorm(D),
        "nn.RMSNorm": torch.nn.RMSNorm(D),
        "tutorial_lib LayerNorm": LayerNorm(D),
        "tutorial_lib RMSNorm": RMSNorm(D),
    }

    def median_ms(layer) -> float:
        times = []
        for i in range(22):
            start = time.perf_counter()
            layer(x).sum().backward()
            if i >= 2:
                times.append(1000 * (time.perf_counter() - start))
        return statistics.median(times)

    with one_thread():
        ms = {name: median_ms(layer) for name, layer in layers.items()}
    rows = []
    for kind in ("nn.", "tutorial_lib "):
        ln, rms = ms[f"{kind}LayerNorm"], ms[f"{kind}RMSNorm"]
        note = f"RMSNorm takes {rms / ln:.2f}x LayerNorm's time"
        rows.append(Result(f"Q4 {kind}LayerNorm, forward + backward", ln, "ms", None))
        rows.append(Result(f"Q4 {kind}RMSNorm, forward + backward", rms, "ms", None, note))
    return rows

"""Figures of chapter Q7 (tutorial_lib.figures.long_context)."""

import pytest
from matplotlib.figure import Figure

from tutorial_lib.figures.long_context import (
    METHOD_COLOURS,
    accuracy_table_html,
    draw_accuracy,
    draw_distance_profile,
    draw_entropy,
    pairs_explorer,
    pairs_html,
)
from tutorial_lib.labs.long_context import LongContextConfig
from tutorial_lib.labs.long_context_reading import long_context_experiment

TINY = dict(train_len=16, queries=4, short_len=8, batch=2, short_batch=2, steps=2,
            finetune_steps=1, rerope_window=4, eval_batch=2, seeds=(0,), scales=(1, 2))  # fmt: skip


def test_the_pairs_explorer_draws_every_frame_differently():
    explorer = pairs_explorer()
    frames = explorer.frames()
    assert len(frames) == explorer.n_frames == 12
    assert len(set(frames.values())) == explorer.n_frames
    assert all(f.count("<svg") >= 2 for f in frames.values())


def test_the_caption_counts_the_pairs_on_each_side_of_the_thresholds():
    text = pairs_html(8, "this chapter (d_k 16, L 256)")
    assert "8 pairs: 1 turn more than β = 32 times within L = 256, 4 less than once" in text
    llama = pairs_html(2, "LLaMA 2 7B (d_k 128, L 4096)")
    assert "64 pairs: 21 turn more than" in llama and "18 less than once" in llama


@pytest.fixture(scope="module")
def reading():
    cfg = LongContextConfig(**TINY)
    return cfg, long_context_experiment(cfg)


def test_the_figures_and_the_table_draw_every_method(reading):
    cfg, result = reading
    fig = Figure(figsize=(8, 6))
    draw_accuracy(fig, result, cfg)
    labels = fig.legends[0].get_texts()
    assert len(labels) == len(cfg.methods)
    fig = Figure()
    draw_entropy(fig, result, cfg)
    assert len(fig.axes[0].lines) == 3
    table = accuracy_table_html(result, cfg)
    for label in ("RoPE", "interpolation", "NTK-aware", "YaRN", "ReRoPE", "leaky ReRoPE"):
        assert f">{label}<" in table
    fig = Figure()
    profile = result["trained"]  # any (T,) tensor will do for the drawing
    import torch

    draw_distance_profile(fig, {"rope": torch.full((32,), 1 / 32)}, lag=3, far_from=16)
    assert "50% at 16 or more" in fig.axes[0].get_legend().get_texts()[0].get_text()
    assert profile and set(METHOD_COLOURS) >= set(cfg.methods)

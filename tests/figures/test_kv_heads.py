"""Figures of chapter Q6 (tutorial_lib.figures.kv_heads), on tiny trained runs."""

import functools

import pytest
from matplotlib.figure import Figure

from tutorial_lib.figures import kv_heads as figs
from tutorial_lib.labs import kv_heads as lab

SPECS = [lab.KVSpec(n_kv_head=4), lab.KVSpec(n_kv_head=2), lab.KVSpec(n_kv_head=1),
         lab.KVSpec(d_c=8), lab.KVSpec(d_c=16)]  # fmt: skip


@functools.cache
def runs():
    return {s: lab.train_variant(s, key="test-q6-figures", copies=2, steps=4, eval_every=2)
            for s in SPECS}  # fmt: skip


def test_the_explorer_draws_a_different_frame_for_every_setting():
    explorer = figs.cache_explorer(runs())
    assert explorer.grid == {"n_kv_head": [1, 2, 4], "d_c": [8, 16]}
    frames = explorer.frames()
    assert len(frames) == explorer.n_frames == 6
    assert len(set(frames.values())) == 6  # every control changes the view
    assert all(f.count("<svg xmlns") == 2 for f in frames.values())  # two panels


@pytest.mark.parametrize("n_kv_head,d_c", [(1, 8), (2, 16), (4, 8)])
def test_a_frame_says_what_its_two_variants_keep_and_score(n_kv_head, d_c):
    frame = figs.cache_frame_html(runs(), n_kv_head, d_c)
    gqa, mla = lab.KVSpec(n_kv_head=n_kv_head), lab.KVSpec(d_c=d_c)
    for spec in (gqa, mla):
        mean = 100 * runs()[spec].accuracy.mean().item()
        assert f"{spec.name}: {4 * lab.cache_numbers(spec)} bytes, {mean:.0f}% right" in frame
    # The bars: each part's bytes add up to the cache, written after the bar.
    assert f">{4 * lab.cache_numbers(gqa)}</text>" in frame
    assert f">{4 * lab.cache_numbers(mla)}</text>" in frame


def test_curves_and_uptraining_draw_one_line_per_run():
    fig = Figure(figsize=(7, 3))
    figs.draw_curves(fig, runs())
    assert len(fig.axes[0].get_lines()) == len(SPECS) + 1  # and the chance line
    pooled = [lab.pool_kv_heads(m, 2) for m in runs()[SPECS[0]].models]
    up = lab.fine_tune(pooled, key="test-q6-figures-up", steps=2, eval_every=1)
    fig = Figure(figsize=(7, 3))
    figs.draw_uptraining(fig, runs(), up, pooled_from=2)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[:2] == ["from scratch", "pooled from MHA, then trained"]


def test_the_table_scrolls_sideways_on_a_narrow_screen():
    html = figs.table_html(["model", "numbers"], [["a", "1"], ["b", "2"]])
    assert html.startswith('<div style="overflow-x:auto">') and html.count("<tr>") == 3

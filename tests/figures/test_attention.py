"""The shape trace runs the real MultiHeadAttention.forward, so its shapes and lines are real."""

import inspect

import pytest
import torch

import tutorial_lib.attention as attention_module
from tutorial_lib.attention import MultiHeadAttention
from tutorial_lib.figures.attention import multihead_shape_trace, shape_trace_html
from tutorial_lib.figures.trace import letters_of, trace_tensors


@pytest.mark.parametrize("B,T,D,H", [(1, 4, 8, 1), (2, 5, 12, 3), (3, 2, 16, 8)])
def test_trace_output_equals_the_module(B, T, D, H):
    torch.manual_seed(0)
    mha = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).eval()
    x = torch.randn(B, T, D)
    steps, out = multihead_shape_trace(mha, x)
    torch.testing.assert_close(out, mha(x, x, x)[0])
    d_k = D // H
    rows = {(s.op, s.letters, s.shape) for s in steps}
    assert ("view", "(B, T, H, d_k)", (B, T, H, d_k)) in rows  # the queries, split into heads
    assert ("view", "(B, T, H, d_v)", (B, T, H, d_k)) in rows  # the values
    assert ("matmul", "(B, H, T, T)", (B, H, T, T)) in rows  # the scores
    assert ("softmax", "(B, H, T, T)", (B, H, T, T)) in rows
    assert steps[-1].op == "layer_norm" and steps[-1].letters == "(B, T, D)"
    heads_back = next(s for s in steps if s.step.startswith("5.") and s.op == "transpose")
    # A transpose that swaps an axis of size 1 moves nothing, so it stays contiguous.
    assert heads_back.contiguous == (H == 1 or T == 1)
    assert all(s.contiguous for s in steps if s.op == "contiguous")


def test_every_row_names_its_line_and_step_of_the_real_forward():
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.0).eval()
    steps, _ = multihead_shape_trace(mha, torch.zeros(1, 3, 8))
    source = inspect.getsource(attention_module)
    for s in steps:
        assert s.code and s.code in source  # a real line of tutorial_lib.attention
    numbered = [s.step.split(".")[0].split(" ")[0] for s in steps]
    assert numbered[0] == "1" and numbered[-1] == "6"
    assert "4" in numbered and "5" in numbered


def test_letters_of_reads_products_of_probe_sizes():
    sizes = {"B": 2, "T": 3, "H": 5, "d_k": 7}
    assert letters_of((2, 5, 3, 7), sizes) == "(B, H, T, d_k)"
    assert letters_of((2, 3, 35), sizes) == "(B, T, H·d_k)"
    assert letters_of((2, 4), sizes) == "(B, 4)"


def test_trace_tensors_returns_the_result_and_skips_bookkeeping():
    mha = MultiHeadAttention(2, 8, 4, 4, dropout=0.5).eval()
    x = torch.randn(1, 3, 8)
    (out, _), traced = trace_tensors(mha, x, x, x)
    torch.testing.assert_close(out, mha(x, x, x)[0])
    assert {"detach", "dropout"}.isdisjoint(t.op for t in traced)


def test_shape_table_reports_weights_count_and_indivisible_sizes():
    html = shape_trace_html(2, 4, 512, 8)
    assert "d_k=d_v=64" in html and "256 numbers" in html  # 8 * 2 * 4 * 4
    assert "(2, 8, 4, 64)" in html
    assert "not divisible" in shape_trace_html(1, 4, 64, 3)


def test_attention_maps_share_one_y_label_and_whole_position_ticks():
    from matplotlib.figure import Figure

    from tutorial_lib.figures.attention import draw_attention_maps

    fig = Figure(figsize=(9, 3.4))
    weights = torch.softmax(torch.randn(3, 11, 11), dim=-1)
    axes = draw_attention_maps(fig, weights, ["a\n1", "b\n2", "c\n3"])
    fig.draw_without_rendering()
    assert [ax.get_ylabel() for ax in axes] == ["query position i", "", ""]
    for ax in axes:
        ticks = list(ax.get_xticks()) + list(ax.get_yticks())
        assert all(float(t).is_integer() for t in ticks), ticks
    assert len(fig.axes) == 4  # three maps and their shared colour bar


@pytest.mark.parametrize(
    "B,T,D,H", [(2, 4, 512, 8), (1, 16, 64, 1), (4, 1, 64, 2), (1, 1, 8, 8), (3, 5, 12, 3)]
)
def test_shape_steps_equal_a_direct_run_at_those_sizes(B, T, D, H):
    from tutorial_lib.figures.attention import shape_steps

    mha = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).eval()
    with torch.no_grad():
        direct, _ = multihead_shape_trace(mha, torch.zeros(B, T, D))
    assert shape_steps(B, T, D, H) == direct

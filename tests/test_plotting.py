"""The shape tracer runs the same steps as MultiHeadAttention, so its shapes are real."""

import pytest
import torch

from tutorial_lib.attention import MultiHeadAttention
from tutorial_lib.plotting import multihead_shape_trace, shape_trace_html


@pytest.mark.parametrize("B,T,D,H", [(1, 4, 8, 1), (2, 5, 12, 3), (3, 2, 16, 8)])
def test_trace_output_equals_the_module(B, T, D, H):
    torch.manual_seed(0)
    mha = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0).eval()
    x = torch.randn(B, T, D)
    steps, out = multihead_shape_trace(mha, x)
    torch.testing.assert_close(out, mha(x, x, x)[0])
    shapes = {(s.code, s.shape) for s in steps}
    assert ("q.view(B, T, H, d_k)", (B, T, H, D // H)) in shapes
    assert ("q @ k.transpose(-2, -1) / sqrt(d_k)", (B, H, T, T)) in shapes
    not_contiguous = [s.code for s in steps if not s.contiguous]
    # A transpose that swaps an axis of size 1 moves nothing, so it stays contiguous.
    assert ("out.transpose(1, 2)" in not_contiguous) == (H > 1 and T > 1)
    assert ".contiguous()" not in not_contiguous


def test_shape_table_reports_weights_count_and_indivisible_sizes():
    html = shape_trace_html(2, 4, 512, 8)
    assert "d_k=d_v=64" in html and "256 numbers" in html  # 8 * 2 * 4 * 4
    assert "(2, 8, 4, 64)" in html
    assert "not divisible" in shape_trace_html(1, 4, 64, 3)

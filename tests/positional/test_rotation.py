"""Rotations (tutorial_lib.positional.rotation): RoPE and ReRoPE, against the papers."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import rand
from tutorial_lib.positional import (
    ReRoPE,
    RoPE,
    apply_rope,
    relative_position,
    rerope_positions,
    rope_layout_permutation,
)


def test_rope_is_multiplication_by_complex_exponentials():
    x, pos, d = rand(3, 6, 8, seed=6), torch.arange(6), 8
    z = torch.complex(x[..., 0::2], x[..., 1::2])  # pair i as x_2i + i x_2i+1
    theta = pos[:, None].double() * 10000 ** (-torch.arange(0, d, 2).double() / d)
    rotated = z * torch.polar(torch.ones_like(theta), theta)
    expected = torch.stack([rotated.real, rotated.imag], -1).flatten(-2)
    torch.testing.assert_close(apply_rope(x, pos), expected)
    torch.testing.assert_close(apply_rope(x, pos).norm(dim=-1), x.norm(dim=-1))


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 2000),
    n=st.integers(0, 2000),
    shift=st.integers(-500, 500),
    half=st.integers(1, 16),
    layout=st.sampled_from(["interleaved", "half"]),
)
def test_rope_scores_depend_only_on_n_minus_m(m, n, shift, half, layout):
    d = 2 * half
    q, k = rand(d, seed=7), rand(d, seed=8)
    m2, n2 = m + shift + 500, n + shift + 500

    def score(a, b):
        return (
            apply_rope(q[None], torch.tensor([a]), layout=layout)[0]
            @ apply_rope(k[None], torch.tensor([b]), layout=layout)[0]
        )

    torch.testing.assert_close(score(m, n), score(m2, n2), atol=1e-9, rtol=1e-9)


def test_rope_layouts_are_a_permutation_apart():
    d = 10
    p = rope_layout_permutation(d)
    assert p.tolist() == [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]
    x, pos = rand(2, 7, d, seed=9), torch.arange(7)
    torch.testing.assert_close(
        apply_rope(x[..., p], pos), apply_rope(x, pos, layout="half")[..., p]
    )


def test_rope_errors():
    expected = r"apply_rope turns pairs of a float x \(\.\.\., T, d\), d even.*; got a "
    with pytest.raises(ValueError, match=expected + r"torch.float32 x \(4, 5\)"):
        apply_rope(torch.zeros(4, 5), torch.arange(4))
    with pytest.raises(ValueError, match=expected + r".*x \(4, 6\), positions \(3\)"):
        apply_rope(torch.zeros(4, 6), torch.arange(3))
    with pytest.raises(ValueError, match=r"layout in \('interleaved', 'half'\).*'neox'"):
        apply_rope(torch.zeros(4, 6), torch.arange(4), layout="neox")


def _direct_clipped_scores(q, k, window, leaky, scale):
    """Rotate q by the clipped relative position of every pair, leave k alone: one pass per pair."""
    T_q, T_k = q.shape[-2], k.shape[-2]
    distance = -relative_position(T_q, T_k)  # (T_q, T_k): i - j
    r = rerope_positions(distance, window, leaky)  # (T_q, T_k)
    q_pairs = apply_rope(q.unsqueeze(-2).expand(*q.shape[:-1], T_k, q.shape[-1]), r)
    return (q_pairs * k.unsqueeze(-3)).sum(-1) * scale  # (..., T_q, T_k)


@pytest.mark.parametrize("leaky", [None, 4.0, 16.0])
@pytest.mark.parametrize("window", [1, 3, 6])
def test_rerope_two_passes_equal_the_clipped_positions(window, leaky):
    q, k = rand(2, 3, 9, 8, seed=10), rand(2, 3, 9, 8, seed=11)
    got = ReRoPE(window, leaky)(q, k, 0.3)
    torch.testing.assert_close(got, _direct_clipped_scores(q, k, window, leaky, 0.3))


def test_rerope_positions_values():
    d = torch.tensor([-2, 0, 3, 4, 10])
    assert rerope_positions(d, 4).tolist() == [-2, 0, 3, 4, 4]
    assert rerope_positions(d, 4, leaky=2.0).tolist() == [-2, 0, 3, 4, 7]


@settings(max_examples=20, deadline=None)
@given(T=st.integers(1, 12), extra=st.integers(0, 5), leaky=st.sampled_from([None, 2.0, 8.0]))
def test_rerope_equals_rope_when_the_window_covers_the_sequence(T, extra, leaky):
    q, k = rand(1, 2, T, 6, seed=T), rand(1, 2, T, 6, seed=T + 1)
    torch.testing.assert_close(ReRoPE(T + extra, leaky)(q, k, 0.5), RoPE()(q, k, 0.5))


def test_leaky_rerope_with_slope_one_is_rope():
    q, k = rand(1, 2, 10, 6, seed=12), rand(1, 2, 10, 6, seed=13)
    torch.testing.assert_close(ReRoPE(3, leaky=1.0)(q, k, 0.5), RoPE()(q, k, 0.5))


def test_positions_that_would_broadcast_x_or_land_on_the_heads_are_refused():
    """Issue 18: positions (2, T) with x (T, d) returned (2, T, d); positions (B, T) with x
    (B, H, T, d) and B = H rotated head h by sequence h's positions."""
    with pytest.raises(ValueError, match=r"positions \(2, 5\)"):
        apply_rope(rand(5, 8), torch.arange(5).expand(2, 5))
    x = rand(2, 2, 5, 8)  # (B, H, T, d) with B = H
    per_sequence = torch.stack([torch.arange(5), torch.arange(5) + 7])  # (B, T)
    with pytest.raises(ValueError, match=r"\(B, 1, T\) for x \(B, H, T, d\).*positions \(2, 5\)"):
        apply_rope(x, per_sequence)
    rotated = apply_rope(x, per_sequence[:, None])  # (B, 1, T): the same for every head
    for b in range(2):
        torch.testing.assert_close(rotated[b], apply_rope(x[b], per_sequence[b]))


def test_rope_refuses_integer_inputs_and_settings_that_cannot_rotate():
    """An integer x would be rotated and truncated back to integers, silently."""
    with pytest.raises(ValueError, match=r"float x.*got a torch.int64 x"):
        apply_rope(torch.ones(4, 6, dtype=torch.long), torch.arange(4))
    q = rand(1, 2, 4, 6)
    for base in (0.0, -1.0, float("nan")):  # refused where the angles are made
        with pytest.raises(ValueError, match=rf"base > 0; got 6, base={base}"):
            RoPE(base=base)(q, q, 1.0)
    for window, leaky in ((0, None), (3, 0.5), (3, float("nan"))):
        with pytest.raises(
            ValueError, match=rf"window >= 1, leaky None or >= 1; got {window}, {leaky}"
        ):
            ReRoPE(window, leaky)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_rotations_keep_the_input_dtype(dtype):
    q, k = rand(1, 2, 6, 8).to(dtype), rand(1, 2, 6, 8, seed=1).to(dtype)
    for rotation in (RoPE(), ReRoPE(3), ReRoPE(3, 2.0)):
        scores = rotation(q, k, 0.5)
        assert scores.dtype == dtype and torch.isfinite(scores).all()

"""tutorial_lib.softmax: entropy, the softmax Jacobian and its norm, random dot products."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib import seeds
from tutorial_lib.softmax import (
    random_dot_products,
    score_scale,
    sharpness,
    softmax_entropy,
    softmax_jacobian,
    softmax_jacobian_norm,
)

rows = st.lists(st.floats(-30, 30), min_size=1, max_size=12).map(torch.tensor)


@settings(max_examples=60, deadline=None)
@given(rows)
def test_entropy_lies_between_zero_and_log_T(scores):
    weights = torch.softmax(scores.double(), -1)
    entropy = softmax_entropy(weights)
    assert -1e-9 <= entropy <= math.log(len(scores)) + 1e-9


def test_entropy_of_uniform_one_hot_and_a_known_row():
    assert softmax_entropy(torch.full((8,), 1 / 8)).item() == pytest.approx(math.log(8))
    assert softmax_entropy(torch.tensor([0.0, 1.0, 0.0])).item() == 0.0
    p = torch.tensor([0.5, 0.25, 0.25])
    assert softmax_entropy(p).item() == pytest.approx(1.5 * math.log(2))


def test_entropy_keeps_leading_axes():
    weights = torch.softmax(torch.randn(2, 3, 5), -1)
    assert softmax_entropy(weights).shape == (2, 3)


@pytest.mark.parametrize("T", [1, 2, 7])
def test_jacobian_matches_autograd(T):
    scores = torch.randn(T, dtype=torch.float64, generator=torch.Generator().manual_seed(T))
    expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    torch.testing.assert_close(softmax_jacobian(torch.softmax(scores, -1)), expected)


def test_jacobian_is_batched():
    weights = torch.softmax(torch.randn(4, 3, 6), -1)
    J = softmax_jacobian(weights)
    assert J.shape == (4, 3, 6, 6)
    torch.testing.assert_close(J[2, 1], softmax_jacobian(weights[2, 1]))


@settings(max_examples=60, deadline=None)
@given(rows)
def test_jacobian_norm_closed_form_matches_the_matrix(scores):
    weights = torch.softmax(scores.double(), -1)
    explicit = torch.linalg.matrix_norm(softmax_jacobian(weights), ord="fro")
    torch.testing.assert_close(softmax_jacobian_norm(weights), explicit, atol=1e-7, rtol=1e-6)
    assert softmax_jacobian_norm(weights) <= 0.5 + 1e-9


@pytest.mark.parametrize("T", [2, 8, 512])
def test_jacobian_norm_of_special_rows(T):
    uniform = torch.full((T,), 1 / T, dtype=torch.float64)
    assert softmax_jacobian_norm(uniform).item() == pytest.approx(math.sqrt(1 / T - 1 / T**2))
    one_hot = torch.zeros(T, dtype=torch.float64)
    one_hot[0] = 1
    assert softmax_jacobian_norm(one_hot).item() == 0.0
    two_way = torch.zeros(T, dtype=torch.float64)
    two_way[:2] = 0.5
    assert softmax_jacobian_norm(two_way).item() == pytest.approx(0.5)


def test_score_scale():
    assert score_scale(64, "none") == 1.0
    assert score_scale(64, "1/√d_k") == pytest.approx(1 / 8)
    assert score_scale(64, "1/d_k") == pytest.approx(1 / 64)
    with pytest.raises(ValueError, match=r"scaling must be one of \['none', '1/√d_k', '1/d_k'\]"):
        score_scale(64, "sqrt")


def test_random_dot_products_are_seeded_and_have_variance_d_k():
    a = random_dot_products(256, 128, n_query=64, seed=3)
    assert a.shape == (64, 128)
    g = seeds.generator("dot_products", 3)
    q, k = torch.randn(64, 256, generator=g), torch.randn(128, 256, generator=g)
    assert torch.equal(a, q @ k.T)  # q·k from the seeded draws, computed once and cached
    assert not torch.equal(a, random_dot_products(256, 128, n_query=64, seed=4))
    assert a.var().item() == pytest.approx(256, rel=0.15)


def median(stats, name):
    return stats[name].median().item()


def test_sharpness_is_per_row_and_orders_scaled_and_unscaled():
    raw = random_dot_products(256, 64)
    unscaled, scaled = sharpness(raw), sharpness(raw / 16)
    assert unscaled["max_weight"].shape == (64,)
    assert median(unscaled, "max_weight") > 0.8 > median(scaled, "max_weight")
    assert median(unscaled, "entropy_fraction") < median(scaled, "entropy_fraction") <= 1
    assert median(unscaled, "jacobian_norm") < median(scaled, "jacobian_norm")


def test_typical_rows_pass_little_gradient_on_both_sides():
    # The Jacobian shrinks for nearly one-hot rows and for nearly uniform rows over many keys.
    raw = random_dot_products(1024, 512)
    middle = median(sharpness(raw / 32), "jacobian_norm")
    assert median(sharpness(raw), "jacobian_norm") < middle / 10
    assert median(sharpness(raw / 1024), "jacobian_norm") < middle


def test_entropy_gradient_is_finite_where_a_weight_is_zero():
    """Issue 18: log(0) entered the backward pass (0 * -inf = NaN), also after softmax underflow."""
    scores = torch.tensor([[0.0, -200.0, 3.0], [1.0, 1.0, 1.0]], requires_grad=True)
    softmax_entropy(torch.softmax(scores, -1)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    weights = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64, requires_grad=True)
    softmax_entropy(weights).sum().backward()
    # d/dp of -sum p log p is -(log p + 1) where p > 0; 0 is taken where p = 0.
    torch.testing.assert_close(
        weights.grad, torch.tensor([[math.log(2) - 1, math.log(2) - 1, 0.0]], dtype=torch.float64)
    )

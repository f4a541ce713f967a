"""Scaled RoPE (tutorial_lib.positional.scaling), against each paper's formula written out pair by
pair in plain Python, and the properties the chapter relies on."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import rand
from tutorial_lib.positional import (
    SCALINGS,
    VARIANTS,
    LogN,
    ReRoPE,
    RoPE,
    ScaledRoPE,
    Settings,
    apply_rope,
    by_parts_frequencies,
    interpolation_frequencies,
    logn_factor,
    ntk_frequencies,
    rotations_within,
    sinusoidal_frequencies,
    variant,
    yarn_ramp,
    yarn_score_factor,
)

SOME = settings(max_examples=30, deadline=None, derandomize=True, database=None)
DIMS = st.sampled_from([4, 8, 16, 32, 128])
SCALES = st.sampled_from([1.0, 1.5, 2.0, 4.0, 8.0, 32.0])
LENGTHS = st.sampled_from([16, 64, 256, 2048, 4096])


def rope_theta(d, base, pair):
    """RoFormer (Su et al. 2021, eq. 15): theta_i = 10000^(-2(i-1)/d), i = 1 .. d/2."""
    return base ** (-2 * pair / d)


def pi_theta(d, scale, base, pair):
    """Chen et al. 2023, eq. 4: f'(x, m) = f(x, m L / L'): position m read as m / s."""
    return rope_theta(d, base, pair) / scale


def ntk_theta(d, scale, base, pair):
    """bloc97 2023, as Peng et al. 2023 write it (eq. 16): b' = b s^(|D| / (|D| - 2))."""
    return (base * scale ** (d / (d - 2))) ** (-2 * pair / d)


def yarn_theta(d, scale, L, base, pair, alpha=1.0, beta=32.0):
    """Peng et al. 2023, section 3.2 (eqs. 17-18): lambda_d = 2 pi b^(2d/|D|), r = L / lambda,
    gamma(r) = 0 below alpha, 1 above beta, (r - alpha) / (beta - alpha) between;
    h(theta_d) = (1 - gamma) theta_d / s + gamma theta_d."""
    wavelength = 2 * math.pi * base ** (2 * pair / d)
    r = L / wavelength
    gamma = 0.0 if r < alpha else 1.0 if r > beta else (r - alpha) / (beta - alpha)
    theta = rope_theta(d, base, pair)
    return (1 - gamma) * theta / scale + gamma * theta


@SOME
@given(d=DIMS, scale=SCALES, L=LENGTHS, base=st.sampled_from([500.0, 10000.0, 5e5]))
def test_every_method_matches_its_paper_pair_by_pair(d, scale, L, base):
    pairs = range(d // 2)
    for ours, paper in (
        (interpolation_frequencies(d, scale, base), [pi_theta(d, scale, base, p) for p in pairs]),
        (ntk_frequencies(d, scale, base), [ntk_theta(d, scale, base, p) for p in pairs]),
        (by_parts_frequencies(d, scale, L, base), [yarn_theta(d, scale, L, base, p)
                                                   for p in pairs]),
    ):  # fmt: skip
        torch.testing.assert_close(ours, torch.tensor(paper, dtype=torch.float64))


def test_yarns_temperature_and_log_n_as_written():
    # Peng et al. 2023, eq. 22: sqrt(1/t) = 0.1 ln(s) + 1; the scores are divided by t.
    for s in (1.0, 2.0, 16.0):
        assert yarn_score_factor(s) == pytest.approx((0.1 * math.log(s) + 1) ** 2)
    # Su 2021: the scale grows like log_L(n); below L the model stays as trained.
    torch.testing.assert_close(
        logn_factor(torch.tensor([1, 256, 512, 65536]), 256),
        torch.tensor([1.0, 1.0, 9 / 8, 2.0], dtype=torch.float64),
    )


@SOME
@given(d=DIMS, L=LENGTHS)
def test_at_scale_one_every_method_is_rope(d, L):
    theta = sinusoidal_frequencies(d)
    for frequencies in (interpolation_frequencies(d, 1.0), ntk_frequencies(d, 1.0),
                        by_parts_frequencies(d, 1.0, L)):  # fmt: skip
        torch.testing.assert_close(frequencies, theta)


@SOME
@given(d=DIMS, scale=SCALES)
def test_ntk_aware_keeps_the_fastest_pair_and_slows_the_slowest_by_s(d, scale):
    new, old = ntk_frequencies(d, scale), sinusoidal_frequencies(d)
    assert new[0] == old[0]
    torch.testing.assert_close(new[-1], old[-1] / scale)
    assert ((new <= old * (1 + 1e-12)) & (new >= old / scale * (1 - 1e-12))).all()


@SOME
@given(d=DIMS, scale=SCALES, L=LENGTHS)
def test_yarns_ramp_leaves_fast_pairs_alone_and_interpolates_slow_ones(d, scale, L):
    old = sinusoidal_frequencies(d)
    new = by_parts_frequencies(d, scale, L)
    turns = rotations_within(L, old)
    fast, slow = turns > 32, turns < 1
    torch.testing.assert_close(new[fast], old[fast])  # more than beta turns: unchanged
    torch.testing.assert_close(new[slow], old[slow] / scale)  # fewer than alpha: divided by s
    assert ((new <= old * (1 + 1e-12)) & (new >= old / scale * (1 - 1e-12))).all()


def test_the_ramp_is_linear_between_alpha_and_beta():
    r = torch.tensor([0.0, 1.0, 16.5, 32.0, 100.0])
    torch.testing.assert_close(yarn_ramp(r), torch.tensor([0.0, 0.0, 0.5, 1.0, 1.0]))


@SOME
@given(
    scaling=st.sampled_from(SCALINGS),
    scale=SCALES,
    m=st.integers(0, 3000),
    n=st.integers(0, 3000),
    shift=st.integers(0, 5000),
)
def test_scores_still_depend_only_on_n_minus_m_under_every_scaling(scaling, scale, m, n, shift):
    theta = ScaledRoPE(scaling, 256, scale).frequencies(16, 256)
    q, k = rand(1, 16, seed=1), rand(1, 16, seed=2)

    def score(a, b):
        rq = apply_rope(q, torch.tensor([a]), frequencies=theta)
        rk = apply_rope(k, torch.tensor([b]), frequencies=theta)
        return (rq @ rk.T).item()

    assert score(m, n) == pytest.approx(score(m + shift, n + shift), abs=1e-9)


def test_scaled_rope_is_rope_with_those_frequencies_and_yarn_adds_its_factor():
    q, k = rand(2, 3, 5, 16, seed=3), rand(2, 3, 9, 16, seed=4)
    torch.testing.assert_close(ScaledRoPE("rope", 64)(q, k, 0.25), RoPE()(q, k, 0.25))
    by_parts = ScaledRoPE("by-parts", 64, 4.0)(q, k, 0.25)
    torch.testing.assert_close(ScaledRoPE("yarn", 64, 4.0)(q, k, 0.25),
                               by_parts * yarn_score_factor(4.0))  # fmt: skip
    # Interpolation is RoPE at positions divided by s.
    q_pos, k_pos = torch.arange(4, 9), torch.arange(9)
    expected = apply_rope(q, q_pos / 4) @ apply_rope(k, k_pos / 4).mT * 0.25
    torch.testing.assert_close(ScaledRoPE("interpolation", 64, 4.0)(q, k, 0.25), expected)


def test_dynamic_scaling_picks_s_from_the_length_it_reads():
    q, k = rand(1, 1, 3, 8, seed=5), rand(1, 1, 200, 8, seed=6)
    dynamic = ScaledRoPE("ntk", 50)  # scale None: s = max(1, T_k / L) = 4 here
    torch.testing.assert_close(dynamic(q, k, 1.0), ScaledRoPE("ntk", 50, 4.0)(q, k, 1.0))
    short = rand(1, 1, 30, 8, seed=7)
    torch.testing.assert_close(dynamic(q, short, 1.0), RoPE()(q, short, 1.0))  # s = 1 below L


def test_log_n_leaves_short_queries_alone_and_raises_the_far_ones():
    q, k = rand(1, 2, 6, 8, seed=8), rand(1, 2, 12, 8, seed=9)
    plain, scaled = RoPE()(q, k, 1.0), LogN(RoPE(), 8)(q, k, 1.0)
    # Queries at positions 6 .. 11 see 7 .. 12 keys: the first two, at most L = 8, are as trained.
    torch.testing.assert_close(scaled[..., :2, :], plain[..., :2, :])
    factor = torch.tensor([math.log(n) / math.log(8) for n in range(9, 13)])
    torch.testing.assert_close(scaled[..., 2:, :], plain[..., 2:, :] * factor[:, None].float())


def test_leaky_rerope_row_lands_the_farthest_key_at_the_longest_trained_offset():
    s = Settings(16, 2, rerope_window=64, train_len=256, rope_scale=8.0)
    made = variant("leaky-rerope").make(s)
    assert isinstance(made, ReRoPE)
    farthest = 64 + (8 * 256 - 1 - 64) / made.leaky
    assert farthest == pytest.approx(255)
    assert variant("leaky-rerope").make(Settings(16, 2, rope_scale=1.0)).leaky == 1.0


def test_every_new_row_rotates_and_the_dynamic_row_has_no_fixed_scale():
    names = ("interpolation", "ntk", "ntk-dynamic", "by-parts", "yarn", "logn", "leaky-rerope")
    assert {row.name for row in VARIANTS} >= set(names)
    assert all(variant(name).acts == "rotation" for name in names)
    assert variant("ntk-dynamic").make(Settings(16, 2)).scale is None


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"scaling must be one of .*got 'pi'"):
        ScaledRoPE("pi", 256)
    with pytest.raises(ValueError, match=r"scale s >= 1 .*got L = 256, s = 0.5"):
        ScaledRoPE("ntk", 256, 0.5)
    with pytest.raises(ValueError, match=r"LogN wraps a Rotation"):
        LogN(torch.nn.Identity(), 256)
    with pytest.raises(ValueError, match=r"frequencies None or one per pair, \(d/2,\) = \(4,\)"):
        apply_rope(rand(3, 8, seed=1), torch.arange(3), frequencies=torch.ones(8))

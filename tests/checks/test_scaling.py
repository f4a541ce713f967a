"""check_scaled_frequencies: correct styles pass for each method, every usual mistake is named."""

import math
import re

import numpy as np
import pytest
import torch

from tutorial_lib.checks import check_scaled_frequencies
from tutorial_lib.checks.scaling import CASES, _ramp_rule
from tutorial_lib.positional import (
    by_parts_frequencies,
    interpolation_frequencies,
    ntk_frequencies,
    sinusoidal_frequencies,
)


def pi_loops(d, scale, train_len, base):
    return torch.tensor([base ** (-2 * i / d) / scale for i in range(d // 2)])


def ntk_per_pair(d, scale, train_len, base):
    """The same rule written as theta_l * s^(-2l/(d-2)), as bloc97's post explains it."""
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return theta * scale ** (-torch.arange(d // 2, dtype=torch.float64) * 2 / (d - 2))


def yarn_hugging_face_style(d, scale, train_len, base):
    """Blend with a mask the way many implementations do: extrapolate where the ramp is 1."""
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    turns = train_len * inv_freq / (2 * math.pi)
    keep = np.clip((turns - 1) / 31, 0, 1)
    return torch.from_numpy(inv_freq / scale * (1 - keep) + inv_freq * keep)


CORRECT = {
    "interpolation": [lambda d, s, L, b: interpolation_frequencies(d, s, b), pi_loops],
    "ntk": [lambda d, s, L, b: ntk_frequencies(d, s, b), ntk_per_pair],
    "yarn": [lambda d, s, L, b: by_parts_frequencies(d, s, L, b), yarn_hugging_face_style],
}


@pytest.mark.parametrize("method", list(CORRECT))
def test_correct_implementations_pass(method):
    for fn in CORRECT[method]:
        assert check_scaled_frequencies(fn, method) is None


def theta(d, b):
    return sinusoidal_frequencies(d, b)


SHARED = {
    "no scaling": (lambda d, s, L, b: theta(d, b), r"no scaling"),
    "float list": (lambda d, s, L, b: theta(d, b).tolist(), r"should be a torch\.Tensor"),
    "one per dimension": (
        lambda d, s, L, b: theta(d, b).repeat_interleave(2) / s,
        r"should have shape \(d/2,\)",
    ),
    "arguments in another order": (
        lambda d, base, scale, L: theta(d, base) / scale,
        r"raised ValueError|is off from|shows a common mistake",
    ),
}

WRONG_PI = {
    **SHARED,
    "exponent l/d": (lambda d, s, L, b: theta(d, b**0.5) / s, r"exponent l/d"),
    "multiplied": (lambda d, s, L, b: theta(d, b) * s, r"multiplied by s"),
    "base times s": (lambda d, s, L, b: theta(d, b * s), r"base times s"),
    "NTK instead": (lambda d, s, L, b: ntk_frequencies(d, s, b), r"NTK-aware's rule"),
    "slow half": (
        lambda d, s, L, b: torch.cat([theta(d, b)[: d // 4], theta(d, b)[d // 4 :] / s]),
        r"only the slow half",
    ),
    "divided by s squared": (lambda d, s, L, b: theta(d, b) / s**2, r"is off from"),
}

WRONG_NTK = {
    **SHARED,
    "exponent l/d": (lambda d, s, L, b: ntk_frequencies(d, s, b).sqrt(), r"exponent l/d"),
    "exponent forgotten": (lambda d, s, L, b: theta(d, b * s), r"exponent forgotten"),
    "exponent inverted": (lambda d, s, L, b: theta(d, b * s ** ((d - 2) / d)), r"\(d-2\)/d"),
    "base divided": (lambda d, s, L, b: theta(d, b / s ** (d / (d - 2))), r"base divided"),
    "interpolation instead": (lambda d, s, L, b: theta(d, b) / s, r"position interpolation's"),
    "YaRN instead": (lambda d, s, L, b: by_parts_frequencies(d, s, L, b), r"YaRN's rule"),
}

WRONG_YARN = {
    **SHARED,
    "exponent l/d": (lambda d, s, L, b: by_parts_frequencies(d, s, L, b**0.5), r"exponent l/d"),
    "ramp reversed": (
        lambda d, s, L, b: _ramp_rule(d, s, L, b, reverse=True),
        r"ramp reversed",
    ),
    "no 2 pi": (
        lambda d, s, L, b: _ramp_rule(d, s, L, b, turns=lambda t: L * t),
        r"turns without 2 pi",
    ),
    "wavelength over L": (
        lambda d, s, L, b: _ramp_rule(d, s, L, b, turns=lambda t: 2 * math.pi / t / L),
        r"wavelength over L",
    ),
    "turns within sL": (
        lambda d, s, L, b: _ramp_rule(d, s, L, b, turns=lambda t: s * L * t / (2 * math.pi)),
        r"turns within s L",
    ),
    "unclipped": (lambda d, s, L, b: _ramp_rule(d, s, L, b, clamp=False), r"not clipped"),
    "NTK instead": (lambda d, s, L, b: ntk_frequencies(d, s, b), r"NTK-aware's rule"),
    "interpolation instead": (lambda d, s, L, b: theta(d, b) / s, r"position interpolation"),
}

WRONG = {"interpolation": WRONG_PI, "ntk": WRONG_NTK, "yarn": WRONG_YARN}


@pytest.mark.parametrize(
    "method, name", [(m, n) for m, wrong in WRONG.items() for n in wrong], ids=str
)
def test_each_mistake_is_caught_and_named(method, name):
    fn, feedback = WRONG[method][name]
    with pytest.raises(AssertionError, match=r"^check_scaled_frequencies: ") as caught:
        check_scaled_frequencies(fn, method)
    assert re.search(feedback, str(caught.value)), str(caught.value)


def test_an_unknown_method_is_named():
    with pytest.raises(AssertionError, match=r"method must be one of \['interpolation'"):
        check_scaled_frequencies(CORRECT["yarn"][0], "pi")


# The check with its method fixed, for the corpora's shared tests (tests/checks/test_corpus.py);
# ``cases`` as check_scaled_frequencies takes it, so a grader's other settings reach it too.
def check_interpolation(fn, *, cases=CASES):
    check_scaled_frequencies(fn, "interpolation", cases=cases)


def check_ntk(fn, *, cases=CASES):
    check_scaled_frequencies(fn, "ntk", cases=cases)


def check_yarn(fn, *, cases=CASES):
    check_scaled_frequencies(fn, "yarn", cases=cases)

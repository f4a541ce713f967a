"""Across every check's corpus of wrong implementations: how many get a specific message.

Issue 15's bar: no wrong implementation passes (each corpus test checks that), and at most a
quarter get the generic "none of the common mistakes checked" message.
"""

import inspect

import pytest

from tests.checks import (
    test_attention,
    test_grouped,
    test_masks,
    test_multihead,
    test_norms,
    test_positional,
    test_scaling,
)
from tutorial_lib import checks

CORPORA = [
    (checks.check_attention, test_attention.WRONG),
    (checks.check_causal_mask, test_masks.WRONG),
    (checks.check_multihead, test_multihead.WRONG),
    (checks.check_grouped_attention, test_grouped.WRONG),
    (checks.check_layer_norm, test_norms.WRONG),
    (checks.check_sinusoidal_encoding, test_positional.SINUSOID_WRONG),
    (checks.check_rope, test_positional.ROPE_WRONG),
    (test_scaling.check_interpolation, test_scaling.WRONG_PI),
    (test_scaling.check_ntk, test_scaling.WRONG_NTK),
    (test_scaling.check_yarn, test_scaling.WRONG_YARN),
]
RIGHT = [
    (checks.check_attention, test_attention.CORRECT),
    (checks.check_causal_mask, test_masks.CORRECT),
    (checks.check_multihead, test_multihead.CORRECT),
    (checks.check_layer_norm, test_norms.CORRECT),
    (checks.check_sinusoidal_encoding, test_positional.SINUSOID_CORRECT),
    (checks.check_rope, test_positional.ROPE_CORRECT),
    (checks.check_grouped_attention, test_grouped.CORRECT),
    (test_scaling.check_interpolation, dict(enumerate(test_scaling.CORRECT["interpolation"]))),
    (test_scaling.check_ntk, dict(enumerate(test_scaling.CORRECT["ntk"]))),
    (test_scaling.check_yarn, dict(enumerate(test_scaling.CORRECT["yarn"]))),
]
# The checks with a method fixed take the settings of the check they fix it in.
FIXED = dict.fromkeys(
    (test_scaling.check_interpolation, test_scaling.check_ntk, test_scaling.check_yarn),
    checks.check_scaled_frequencies,
)


def other_settings(check, seed: int) -> dict:
    return checks.other_settings(FIXED.get(check, check), seed)


def feedback(check, fn) -> str:
    with pytest.raises(AssertionError) as caught:
        check(fn)
    return str(caught.value)


def test_every_check_has_a_broad_corpus():
    for check, wrong in CORPORA:
        assert len(wrong) >= 8, check.__name__


def test_at_most_a_quarter_of_wrong_implementations_get_the_generic_message():
    messages = [feedback(check, fn) for check, wrong in CORPORA for fn, _ in wrong.values()]
    generic = [m for m in messages if "none of the common mistakes" in m]
    assert len(generic) <= len(messages) / 4, generic


# A grader's hidden tests run each check with other_settings: other sizes, other draws.
@pytest.mark.parametrize("seed", [0, 12345])
def test_the_other_settings_pass_every_correct_implementation(seed):
    for check, right in RIGHT:
        for name, fn in right.items():
            assert check(fn, **other_settings(check, seed)) is None, (check, name)


@pytest.mark.parametrize("seed", [0, 12345])
def test_the_other_settings_fail_every_wrong_implementation(seed):
    for check, wrong in CORPORA:
        for name, (fn, _) in wrong.items():
            with pytest.raises(AssertionError, match=f"^{FIXED.get(check, check).__name__}: "):
                check(fn, **other_settings(check, seed))
            assert name


def test_the_other_settings_differ_from_a_learners_call():
    for check, _ in CORPORA:
        settings = other_settings(check, seed=0)
        for keyword, value in settings.items():
            default = inspect.signature(check).parameters[keyword].default
            if keyword != "seed":
                assert not set(map(repr, value)) & set(map(repr, default)), check.__name__


def test_other_settings_names_the_checks_it_knows():
    with pytest.raises(ValueError, match="knows the checks check_attention, .*; got"):
        checks.other_settings(checks.check_shape, seed=0)

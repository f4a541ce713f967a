"""Across every check's corpus of wrong implementations: how many get a specific message.

Issue 15's bar: no wrong implementation passes (each corpus test checks that), and at most a
quarter get the generic "none of the common mistakes checked" message.
"""

import pytest

from tests.checks import (
    test_attention,
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
    (checks.check_layer_norm, test_norms.WRONG),
    (checks.check_sinusoidal_encoding, test_positional.SINUSOID_WRONG),
    (checks.check_rope, test_positional.ROPE_WRONG),
    (test_scaling.check_interpolation, test_scaling.WRONG_PI),
    (test_scaling.check_ntk, test_scaling.WRONG_NTK),
    (test_scaling.check_yarn, test_scaling.WRONG_YARN),
]


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

"""Self-checks learners call on their own implementations: compare, then explain.

A check runs the learner's function on several small configurations chosen so that the
common mistakes give visibly different answers, compares the result with the book's
reference, and, when they differ, computes what each known mistake would have returned
to name the one that was made and say how to fix it. It raises ``AssertionError`` with
that feedback, or returns quietly. The feedback engine is in :mod:`.engine`; one module
per concept holds the checks.

Every check takes keyword arguments that choose other sizes and random draws; by default it
tries what a learner's call tries, and :func:`other_settings` gives the other ones a grader's
hidden tests use (``make assignments``), so that code tuned to the learner's sizes fails there.

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

from collections.abc import Callable
from typing import Any

from . import attention, grouped, masks, multihead, norms, positional, scaling
from .attention import attention_check_inputs, check_attention
from .engine import (
    Mistake,
    call_learner,
    compare_and_explain,
    expect_shape,
    expect_tensor,
    fail,
    same,
)
from .grouped import check_grouped_attention
from .masks import check_causal_mask
from .multihead import check_multihead
from .norms import check_layer_norm
from .positional import check_rope, check_sinusoidal_encoding
from .scaling import check_scaled_frequencies
from .shapes import check_shape

__all__ = [
    "check_attention",
    "check_causal_mask",
    "check_multihead",
    "check_grouped_attention",
    "check_layer_norm",
    "check_sinusoidal_encoding",
    "check_rope",
    "check_scaled_frequencies",
    "check_shape",
    "other_settings",
    "attention_check_inputs",
    "Mistake",
    "call_learner",
    "compare_and_explain",
    "expect_shape",
    "expect_tensor",
    "fail",
    "same",
]


def other_settings(check: Callable, seed: int) -> dict[str, Any]:
    """Keyword arguments for ``check`` that try other sizes than a learner's call, and draws
    from ``seed``: ``check_attention(fn, **other_settings(check_attention, seed=7))``."""
    others = {
        check_attention: {"configs": attention.OTHER_CONFIGS, "seed": seed},
        check_causal_mask: {"lengths": masks.OTHER_LENGTHS},
        check_multihead: {"configs": multihead.OTHER_CONFIGS, "seed": seed},
        check_layer_norm: {"configs": norms.OTHER_CONFIGS, "seed": seed},
        check_sinusoidal_encoding: {"sizes": positional.OTHER_SINUSOID_SIZES},
        check_rope: {"cases": positional.OTHER_ROPE_CASES, "seed": seed},
        check_grouped_attention: {"configs": grouped.OTHER_CONFIGS, "seed": seed},
        check_scaled_frequencies: {"cases": scaling.OTHER_CASES},
    }
    if check not in others:
        known = ", ".join(c.__name__ for c in others)
        raise ValueError(f"other_settings knows the checks {known}; got {check!r}")
    return others[check]

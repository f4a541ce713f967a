"""Self-checks learners call on their own implementations: compare, then explain.

A check runs the learner's function on several small configurations chosen so that the
common mistakes give visibly different answers, compares the result with the book's
reference, and, when they differ, computes what each known mistake would have returned
to name the one that was made and say how to fix it. It raises ``AssertionError`` with
that feedback, or returns quietly. The feedback engine is in :mod:`.engine`; one module
per concept holds the checks.

Introduced in chapter Q2 ("Why are the scores divided by sqrt(d_k)?").
"""

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
    "check_layer_norm",
    "check_sinusoidal_encoding",
    "check_rope",
    "check_scaled_frequencies",
    "check_shape",
    "attention_check_inputs",
    "Mistake",
    "call_learner",
    "compare_and_explain",
    "expect_shape",
    "expect_tensor",
    "fail",
    "same",
]

"""Positional information for attention, grouped by where it acts.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (T_q for queries, T_k for keys and values)
    D    d_model, the width of the residual stream
    H    n_head, the number of heads
    d_k  per-head width of queries and keys
    d_v  per-head width of values

Self-attention on its own cannot tell one order of the tokens from another
(chapter Q3a measures it). Every way of giving it positions acts in one of
three places, and each place has one small interface:

1. **Added to the token embeddings** (absolute):
   :class:`.AbsolutePositionalEncoding` maps x (B, T, D) to x + P[:T].
   Variants: :class:`.SinusoidalPositionalEncoding`, :class:`.LearnedPositionalEmbedding`.
2. **Added to the attention scores** (bias): :class:`.ScoreBias` returns a
   tensor broadcastable to the scores (..., T_q, T_k), and may add a term to
   the output. Variants: :class:`.ShawRelativePosition`,
   :class:`.TransformerXLRelativePosition`, :class:`.T5RelativeBias`, :class:`.ALiBiBias`.
3. **Rotating q and k** (rotation): :class:`.Rotation` makes the scores from
   queries and keys rotated by their positions. Variants: :class:`.RoPE`, :class:`.ReRoPE`,
   and the scaled RoPEs that read past the training length (:class:`.ScaledRoPE`, :class:`.LogN`).

Groups 2 and 3 plug into the one place where scores are made,
``ScaledDotProductAttention.get_scores``, through :class:`PositionalAttention`;
:func:`with_positions` puts one into an :class:`~tutorial_lib.attention.Attention`.
Every variant is one row of ``VARIANTS`` (``tutorial_lib.positional.registry``): a new one is
its class plus that row.

Conventions: query i sits at position T_k - T_q + i (the queries are the last
T_q of T_k positions, as in ``causal_mask`` and when decoding with a KV cache), key j at
position j (:func:`.query_key_positions`). ``relative_position(T_q, T_k)`` is key position
minus query position (T5's convention); the *distance* i - j used by ALiBi and ReRoPE is its
negative.

Introduced in chapters Q3a (absolute encodings) and Q3b (biases and rotations); chapter Q7
scales RoPE (``scaling``).
"""

from __future__ import annotations

from torch import Tensor

from ..attention import Attention, ScaledDotProductAttention
from .absolute import (
    AbsolutePositionalEncoding,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_encoding,
    sinusoidal_frequencies,
    sinusoidal_shift_matrix,
)
from .bias import (
    ALiBiBias,
    ScoreBias,
    ShawRelativePosition,
    T5RelativeBias,
    TransformerXLRelativePosition,
    alibi_slopes,
    relative_position,
    relative_shift,
    t5_relative_bucket,
)
from .registry import VARIANTS, Settings, Variant, variant
from .rotation import (
    ReRoPE,
    RoPE,
    Rotation,
    apply_rope,
    query_key_positions,
    rerope_positions,
    rope_layout_permutation,
)
from .scaling import (
    SCALINGS,
    LogN,
    ScaledRoPE,
    by_parts_frequencies,
    interpolation_frequencies,
    logn_factor,
    ntk_frequencies,
    rotations_within,
    scaled_frequencies,
    yarn_ramp,
    yarn_score_factor,
)

# Everything in the three groups, re-exported: `from tutorial_lib.positional import RoPE`.
__all__ = [
    "sinusoidal_frequencies",
    "sinusoidal_encoding",
    "sinusoidal_shift_matrix",
    "AbsolutePositionalEncoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "relative_position",
    "ScoreBias",
    "ShawRelativePosition",
    "relative_shift",
    "TransformerXLRelativePosition",
    "t5_relative_bucket",
    "T5RelativeBias",
    "alibi_slopes",
    "ALiBiBias",
    "apply_rope",
    "rope_layout_permutation",
    "query_key_positions",
    "Rotation",
    "RoPE",
    "rerope_positions",
    "ReRoPE",
    "SCALINGS",
    "rotations_within",
    "interpolation_frequencies",
    "ntk_frequencies",
    "yarn_ramp",
    "by_parts_frequencies",
    "yarn_score_factor",
    "scaled_frequencies",
    "logn_factor",
    "ScaledRoPE",
    "LogN",
    "Variant",
    "Settings",
    "VARIANTS",
    "variant",
    "PositionalAttention",
    "with_positions",
]


class PositionalAttention(ScaledDotProductAttention):
    """Scaled dot-product attention whose ``get_scores`` takes a rotation and/or a bias.

    scores = (rotation(q, k, 1/temperature) or q k^T / temperature) + bias(q, k, 1/temperature);
    output = weights @ v (+ bias.value_term(weights)). Shapes as in the parent class.
    """

    def __init__(
        self,
        temperature: float,
        attn_dropout: float = 0.1,
        bias: ScoreBias | None = None,
        rotation: Rotation | None = None,
    ):
        super().__init__(temperature, attn_dropout)
        self.bias = bias
        self.rotation = rotation

    def get_scores(self, q: Tensor, k: Tensor) -> Tensor:
        scale = 1.0 / self.temperature
        if self.rotation is not None:
            scores = self.rotation(q, k, scale)  # (..., T_q, T_k)
        else:
            scores = super().get_scores(q, k)  # (..., T_q, T_k)
        if self.bias is not None:
            scores = scores + self.bias(q, k, scale)
        return scores

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        out, weights = super().forward(q, k, v, mask)  # (..., T_q, d_v), (..., T_q, T_k)
        if self.bias is not None:
            extra = self.bias.value_term(weights)
            if extra is not None:
                out = out + extra  # (..., T_q, d_v)
        return out, weights


def with_positions(
    layer: Attention, bias: ScoreBias | None = None, rotation: Rotation | None = None
) -> Attention:
    """Swap ``layer.attention`` for a :class:`PositionalAttention` (same temperature, dropout).

    ``layer`` is an :class:`~tutorial_lib.attention.Attention` (a ``MultiHeadAttention`` is
    one). A bias or rotation made for another number of heads or another d_k or d_v is
    refused here, before any input reaches it.
    """
    for part in (bias, rotation):
        for size in ("n_head", "d_k", "d_v"):
            if getattr(part, size, getattr(layer, size)) != getattr(layer, size):
                raise ValueError(
                    f"{type(part).__name__} was made with {size} = {getattr(part, size)}, but the "
                    f"attention has {size} = {getattr(layer, size)}: make them match"
                )
    old = layer.attention
    layer.attention = PositionalAttention(old.temperature, old.dropout.p, bias, rotation)
    return layer

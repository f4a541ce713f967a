"""Every positional variant of the book in one table: its name, where it acts, its factory,
its label.

Dimension letters as in :mod:`tutorial_lib.positional`: D = d_model, H = n_head, d_k = D / H.

The labs, the figures and the tests read :data:`VARIANTS`; colours and markers are derived
from its order. A chapter names the variants it compares (chapter Q3b's nine are
``tutorial_lib.labs.extrapolation.CHAPTER_VARIANTS``), so a new row changes no chapter.
Adding a variant is one row plus its factory; a factory reads what it needs from
:class:`Settings` (a new setting is one more field there, with a default).

Introduced in chapter Q3b ("Relative positions"); chapter Q7 adds the rows that read a RoPE
model past its training length (its choice is ``tutorial_lib.labs.long_context.CHAPTER_METHODS``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from .absolute import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .bias import ALiBiBias, ShawRelativePosition, T5RelativeBias, TransformerXLRelativePosition
from .rotation import ReRoPE, RoPE
from .scaling import LogN, ScaledRoPE

__all__ = ["Settings", "Variant", "VARIANTS", "variant"]

# Where a variant acts: nowhere, added to the token embeddings, added to the scores, or
# rotating q and k (the three groups of tutorial_lib.positional).
ACTS = ("none", "absolute", "bias", "rotation")


@dataclass(frozen=True)
class Settings:
    """What a factory may read: the model's sizes and each variant's own setting."""

    d_model: int  # D
    n_head: int  # H; every head has d_k = D / H
    max_len: int = 1024  # learned: rows of the table (the longest position it can add)
    causal: bool = True  # T5 one-directional, ALiBi's causal form
    shaw_clip: int = 8  # Shaw's K: distances beyond K share one vector
    t5_buckets: int = 32  # T5's defaults
    t5_max_distance: int = 128
    rerope_window: int = 8  # ReRoPE's w
    # Chapter Q7's readers of longer inputs, for a model trained with RoPE on train_len positions:
    train_len: int = 256  # L, what every scaled RoPE is scaled from
    rope_scale: float = 1.0  # s = length to read / L; the dynamic rows pick it from the input
    yarn_alpha: float = 1.0  # YaRN's ramp: pairs turning fewer than alpha times within L are
    yarn_beta: float = 32.0  # interpolated, more than beta times left alone (LLaMA's values)

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_head

    @property
    def leaky_slope(self) -> float:
        """Leaky ReRoPE's k for reading s * L positions: past the window w every offset is divided
        by k, k = (sL - 1 - w) / (L - 1 - w), so the farthest key lands at L - 1, the largest
        offset training saw (the book's choice; 1 at s = 1, which is RoPE)."""
        L, w = self.train_len, self.rerope_window
        return max(1.0, (self.rope_scale * L - 1 - w) / (L - 1 - w))


@dataclass(frozen=True)
class Variant:
    """One row: ``make(settings)`` returns the module (None for "none"), acting where ``acts``
    says; ``label`` is how figures and tables name it."""

    name: str
    acts: str
    make: Callable[[Settings], nn.Module | None]
    label: str


VARIANTS: list[Variant] = [
    Variant("none", "none", lambda s: None, "none"),
    Variant("learned", "absolute", lambda s: LearnedPositionalEmbedding(s.max_len, s.d_model),
            "learned"),
    Variant("sinusoidal", "absolute", lambda s: SinusoidalPositionalEncoding(s.d_model),
            "sinusoidal"),
    Variant("shaw", "bias", lambda s: ShawRelativePosition(s.d_k, s.d_k, s.shaw_clip), "Shaw"),
    Variant("xl", "bias", lambda s: TransformerXLRelativePosition(s.n_head, s.d_k),
            "Transformer-XL"),
    Variant("t5", "bias", lambda s: T5RelativeBias(s.n_head, not s.causal, s.t5_buckets,
                                                   s.t5_max_distance), "T5"),
    Variant("alibi", "bias", lambda s: ALiBiBias(s.n_head, s.causal), "ALiBi"),
    Variant("rope", "rotation", lambda s: RoPE(), "RoPE"),
    Variant("rerope", "rotation", lambda s: ReRoPE(s.rerope_window), "ReRoPE"),
    Variant("interpolation", "rotation",
            lambda s: ScaledRoPE("interpolation", s.train_len, s.rope_scale), "interpolation"),
    Variant("ntk", "rotation", lambda s: ScaledRoPE("ntk", s.train_len, s.rope_scale),
            "NTK-aware"),
    Variant("ntk-dynamic", "rotation", lambda s: ScaledRoPE("ntk", s.train_len),
            "dynamic NTK"),
    Variant("by-parts", "rotation",
            lambda s: ScaledRoPE("by-parts", s.train_len, s.rope_scale, alpha=s.yarn_alpha,
                                 beta=s.yarn_beta), "NTK-by-parts"),
    Variant("yarn", "rotation",
            lambda s: ScaledRoPE("yarn", s.train_len, s.rope_scale, alpha=s.yarn_alpha,
                                 beta=s.yarn_beta), "YaRN"),
    Variant("logn", "rotation",
            lambda s: LogN(ScaledRoPE("by-parts", s.train_len, s.rope_scale,
                                      alpha=s.yarn_alpha, beta=s.yarn_beta), s.train_len),
            "by-parts + log-n"),
    Variant("leaky-rerope", "rotation", lambda s: ReRoPE(s.rerope_window, s.leaky_slope),
            "leaky ReRoPE"),
]  # fmt: skip


def variant(name: str) -> Variant:
    """The row called ``name``, or a ValueError listing every name."""
    for row in VARIANTS:
        if row.name == name:
            return row
    raise ValueError(f"variant must be one of {[row.name for row in VARIANTS]}; got {name!r}")

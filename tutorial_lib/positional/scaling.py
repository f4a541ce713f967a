"""Reading past the training length with RoPE: scaled frequencies, a temperature, log-n.

Dimension letters as in :mod:`tutorial_lib.positional`: T (T_q, T_k) length, d = d_k the
width being rotated, so d/2 pairs; L the training length; s the scale factor (the length to
read over L).

RoPE turns pair l by theta_l = base^(-2l/d) per position (:mod:`.rotation`). A model trained on
L positions has seen every angle of a pair that turns at least once within L, and only a
slice of the circle for a slower one. Each method below changes the frequencies so that a
longer input stays inside what training saw, and differs in which pairs it changes:

* position interpolation (Chen et al. 2023): every frequency divided by s;
* NTK-aware scaling (bloc97 2023): the base raised to base * s^(d/(d-2)), so the fastest pair
  keeps its frequency and the slowest is divided by s;
* NTK-by-parts and YaRN (Peng et al. 2023): a ramp over each pair's rotations within L keeps the
  fast pairs, divides the slow ones by s and blends in between; YaRN also sharpens the scores
  by (0.1 ln s + 1)^2;
* log-n scaling (Su 2021): a query that sees n > L keys has its scores multiplied by
  log n / log L.

A *dynamic* method picks s from the length it reads, s = max(1, T_k / L) (Peng et al. 2023,
section 3.3); a static one is set for one s in advance.

Introduced in chapter Q7 ("How do models read past their training length?").
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..attention import attention_scores
from .absolute import sinusoidal_frequencies
from .rotation import Rotation, apply_rope, query_key_positions

__all__ = [
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
]

# The frequency rules of ScaledRoPE; "yarn" is "by-parts" plus its temperature.
SCALINGS = ("rope", "interpolation", "ntk", "by-parts", "yarn")


def rotations_within(length: float, frequencies: Tensor) -> Tensor:
    """How many full turns each pair makes over ``length`` positions: length * theta / (2 pi).

    YaRN's r(d) = L / lambda_d, with lambda_d = 2 pi / theta_d the pair's wavelength.
    """
    return length * frequencies / (2 * math.pi)  # (d/2,)


def interpolation_frequencies(d: int, scale: float, base: float = 10000.0) -> Tensor:
    """Position interpolation: position m read as m / s, i.e. every theta_l divided by s. (d/2,)"""
    return sinusoidal_frequencies(d, base) / scale


def ntk_frequencies(d: int, scale: float, base: float = 10000.0) -> Tensor:
    """NTK-aware scaling: RoPE with the base b' = b * s^(d / (d - 2)). (d/2,)

    Pair l turns by b'^(-2l/d) = theta_l * s^(-2l/(d-2)): pair 0 keeps theta_0, and the last
    pair, l = d/2 - 1, gets exactly theta / s.
    """
    return sinusoidal_frequencies(d, base * scale ** (d / (d - 2)))


def yarn_ramp(rotations: Tensor, alpha: float = 1.0, beta: float = 32.0) -> Tensor:
    """YaRN's gamma(r): 0 below alpha rotations, 1 above beta, linear in between."""
    return ((rotations - alpha) / (beta - alpha)).clamp(0.0, 1.0)


def by_parts_frequencies(
    d: int,
    scale: float,
    train_len: int,
    base: float = 10000.0,
    alpha: float = 1.0,
    beta: float = 32.0,
) -> Tensor:
    """NTK-by-parts (Peng et al. 2023, section 3.2): h(theta) = (1 - gamma) theta / s + gamma theta,
    gamma the ramp of the pair's rotations within the training length L. (d/2,)"""
    theta = sinusoidal_frequencies(d, base)
    gamma = yarn_ramp(rotations_within(train_len, theta), alpha, beta)
    return (1 - gamma) * theta / scale + gamma * theta


def yarn_score_factor(scale: float) -> float:
    """What YaRN multiplies the scores by: 1/t = (0.1 ln s + 1)^2, from sqrt(1/t) = 0.1 ln s + 1."""
    return (0.1 * math.log(scale) + 1.0) ** 2


def scaled_frequencies(
    scaling: str,
    d: int,
    scale: float,
    train_len: int,
    base: float = 10000.0,
    alpha: float = 1.0,
    beta: float = 32.0,
) -> Tensor:
    """The frequencies (d/2,) of one of ``SCALINGS`` for scale factor s."""
    if scaling == "rope":
        return sinusoidal_frequencies(d, base)
    if scaling == "interpolation":
        return interpolation_frequencies(d, scale, base)
    if scaling == "ntk":
        return ntk_frequencies(d, scale, base)
    return by_parts_frequencies(d, scale, train_len, base, alpha, beta)  # by-parts, yarn


def logn_factor(n_keys: Tensor, train_len: int) -> Tensor:
    """Log-n scaling for a model trained on L positions: max(1, ln n / ln L) for a query that
    sees n keys. Su's form, log_L(n) for every n, also lowers short ones; a model trained
    without it is left as it was up to L."""
    n_keys = torch.as_tensor(n_keys, dtype=torch.float64)
    return (n_keys.log() / math.log(train_len)).clamp(min=1.0)


class ScaledRoPE(Rotation):
    """RoPE with frequencies from one of ``SCALINGS``, for a model trained on ``train_len``.

    ``scale``: s, fixed (static); None picks s = max(1, T_k / train_len) for every input
    (dynamic). "yarn" multiplies the scores by :func:`yarn_score_factor` of s. Every scaling
    turns q and k by one set of frequencies, so each score still depends on j - i only.
    """

    def __init__(
        self,
        scaling: str,
        train_len: int,
        scale: float | None = None,
        base: float = 10000.0,
        alpha: float = 1.0,
        beta: float = 32.0,
    ):
        super().__init__()
        if scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {SCALINGS}; got {scaling!r}")
        if not (train_len >= 2 and (scale is None or scale >= 1) and 0 < alpha < beta):
            raise ValueError(
                "ScaledRoPE needs train_len L >= 2, scale s >= 1 (or None: dynamic) and "
                f"0 < alpha < beta; got L = {train_len}, s = {scale}, alpha = {alpha}, "
                f"beta = {beta}"
            )
        self.scaling, self.train_len, self.scale = scaling, train_len, scale
        self.base, self.alpha, self.beta = base, alpha, beta

    def scale_for(self, T_k: int) -> float:
        """s for an input of T_k keys: the fixed one, or max(1, T_k / L) when dynamic."""
        return self.scale if self.scale is not None else max(1.0, T_k / self.train_len)

    def frequencies(self, d: int, T_k: int) -> Tensor:
        """The d/2 frequencies used on an input of T_k keys."""
        s = self.scale_for(T_k)
        return scaled_frequencies(
            self.scaling, d, s, self.train_len, self.base, self.alpha, self.beta
        )

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        T_k = k.shape[-2]
        q_pos, k_pos = query_key_positions(q.shape[-2], T_k, q.device)
        theta = self.frequencies(q.shape[-1], T_k)  # (d/2,)
        if self.scaling == "yarn":
            scale = scale * yarn_score_factor(self.scale_for(T_k))
        q = apply_rope(q, q_pos, frequencies=theta)  # (..., T_q, d_k)
        k = apply_rope(k, k_pos, frequencies=theta)  # (..., T_k, d_k)
        return attention_scores(q, k, scale)  # (..., T_q, T_k)


class LogN(Rotation):
    """Any rotation with log-n scaling on top: query i, which sees i + 1 keys (causal), has its
    scores multiplied by :func:`logn_factor` (Su 2021, "从熵不变性看Attention的Scale操作")."""

    def __init__(self, rotation: Rotation, train_len: int):
        super().__init__()
        if not isinstance(rotation, Rotation) or not train_len >= 2:
            raise ValueError(
                "LogN wraps a Rotation for a model trained on L >= 2 positions; got "
                f"{type(rotation).__name__}, L = {train_len}"
            )
        self.rotation, self.train_len = rotation, train_len

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        scores = self.rotation(q, k, scale)  # (..., T_q, T_k)
        q_pos, _ = query_key_positions(q.shape[-2], k.shape[-2], q.device)
        factor = logn_factor(q_pos + 1, self.train_len).to(scores.dtype)  # (T_q,)
        return scores * factor[:, None]  # (..., T_q, T_k)

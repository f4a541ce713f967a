"""Positions that rotate queries and keys: RoPE and ReRoPE.

Dimension letters, fixed book-wide: B batch, T sequence length (T_q queries, T_k keys),
D = d_model, H = n_head, d_k and d_v per-head widths.

Group 3 of :mod:`tutorial_lib.positional`: a :class:`Rotation` makes the scores from q
and k rotated by their positions, so it replaces the plain q k^T rather than adding to it.

Introduced in chapter Q3b ("Relative positions").
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..attention import attention_scores
from ..validate import (
    broadcast_shape,
    check_choice,
    check_int,
    check_real,
    check_tensor,
    format_shape,
    to_tensor,
)
from .absolute import _check_base, _check_even, sinusoidal_frequencies

__all__ = [
    "apply_rope",
    "rope_layout_permutation",
    "Rotation",
    "RoPE",
    "rerope_positions",
    "ReRoPE",
]


def apply_rope(
    x: Tensor, positions: Tensor, base: float = 10000.0, layout: str = "interleaved"
) -> Tensor:
    r"""Rotate each dimension pair of x by its position (Su et al., RoFormer).

    x: (..., T, d), float, d even; positions: any finite reals, (T,) or any shape that
    broadcasts to x.shape[:-1] without making it bigger, e.g. (B, 1, T) for x (B, H, T, d).
    A (B, T) tensor that would line up with (H, T) of such an x, when B = H, is refused:
    give it the head axis, positions[:, None].
    Pair i turns by the angle positions * base^(-2i/d).
    layout="interleaved": pairs (2i, 2i+1), as in the RoFormer paper.
    layout="half": pairs (i, i + d/2), as in GPT-NeoX and Hugging Face's LLaMA code;
    :func:`rope_layout_permutation` maps one onto the other.
    """
    check_tensor("x", x, "float", "(..., T, d)")
    if x.dim() < 2:
        raise ValueError(
            f"x must be (..., T, d) with at least 2 axes; got x of shape {format_shape(x)}"
        )
    d = _check_even("the last dimension d of x", x.shape[-1])
    check_choice("layout", layout, ("interleaved", "half"))
    positions = _check_positions(positions, x)
    angle = positions.to(torch.float64)[..., None] * sinusoidal_frequencies(d, base).to(x.device)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # (..., T, d/2)
    if layout == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # (..., T, d/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., T, d)


def _check_positions(positions: Tensor, x: Tensor) -> Tensor:
    """positions as float64 on x's device, with a shape that fits x (..., T, d): see apply_rope."""
    positions = to_tensor("positions", positions, "real", "(T,)")
    positions = positions.to(device=x.device, dtype=torch.float64)
    if not torch.isfinite(positions).all():
        raise ValueError("positions must be finite; got NaN or inf among them")
    rows = tuple(x.shape[:-1])  # (..., T)
    if broadcast_shape(positions.shape, rows) != rows:
        raise ValueError(
            f"positions of shape {format_shape(positions)} do not fit x's (..., T) = "
            f"{format_shape(rows)}: they must broadcast to it without making it bigger, e.g. "
            f"(T,) = ({rows[-1]},), or (B, 1, T) for x (B, H, T, d)"
        )
    p = positions.dim()
    if 2 <= p < len(rows) and positions.shape[0] == rows[0] == rows[-p] > 1:
        raise ValueError(
            f"positions of shape {format_shape(positions)} line up with the last {p} axes of "
            f"x's (..., T) = {format_shape(rows)}, yet their first axis has x's batch size "
            f"{rows[0]}: a (B, T) tensor would be read as (H, T). Give positions x's rank "
            "minus one, e.g. positions[:, None] (B, 1, T) for x (B, H, T, d)"
        )
    return positions


def rope_layout_permutation(d: int) -> Tensor:
    """Index p with x_half[..., p] in the interleaved layout: [0, d/2, 1, d/2 + 1, ...].

    apply_rope(x[..., p], pos) == apply_rope(x, pos, layout="half")[..., p]; applying
    p to the rows of W_q and W_k turns checkpoints of one layout into the other.
    """
    d = _check_even("d", d)
    return torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=-1).flatten()


class Rotation(nn.Module):
    """Group 3 interface: ``forward(q (..., T_q, d_k), k (..., T_k, d_k), scale) -> scores``.

    The scores are made from q and k rotated by their positions, so a
    rotation replaces the plain q k^T rather than adding to it.
    """

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        raise NotImplementedError


def _positions(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    """Query positions T_k - T_q .. T_k - 1 and key positions 0 .. T_k - 1, after checking q, k."""
    for name, t in (("q", q), ("k", k)):
        check_tensor(name, t, "float", "(..., T, d_k)")
        if t.dim() < 2:
            raise ValueError(f"{name} must be (..., T, d_k); got {name} of shape {format_shape(t)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share d_k; got q {format_shape(q)} and k {format_shape(k)}")
    T_q, T_k = q.shape[-2], k.shape[-2]
    if T_q > T_k:
        raise ValueError(f"queries are the last T_q of T_k positions; got T_q={T_q} > T_k={T_k}")
    return torch.arange(T_k - T_q, T_k, device=q.device), torch.arange(T_k, device=q.device)


class RoPE(Rotation):
    """scores_ij = scale * <R_i q_i, R_j k_j> = scale * q_i^T R_{j-i} k_j: only j - i matters."""

    def __init__(self, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.base = _check_base(base)
        self.layout = check_choice("layout", layout, ("interleaved", "half"))

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        q_pos, k_pos = _positions(q, k)
        q = apply_rope(q, q_pos, self.base, self.layout)  # (..., T_q, d_k)
        k = apply_rope(k, k_pos, self.base, self.layout)  # (..., T_k, d_k)
        return attention_scores(q, k, scale)  # (..., T_q, T_k)


def rerope_positions(distance: Tensor, window: int, leaky: float | None = None) -> Tensor:
    """The relative position ReRoPE uses for a distance i - j (Su, 2023).

    distance below ``window``: unchanged. From ``window`` on: ``window`` (ReRoPE), or
    window + (distance - window) / leaky (Leaky ReRoPE, slope 1/leaky, leaky >= 1).
    """
    window, leaky = _check_window(window, leaky)
    distance = to_tensor("distance", distance, "real", "(i - j for each pair)")
    if distance.is_floating_point() and not torch.isfinite(distance).all():
        raise ValueError("distance must be finite; got NaN or inf among them")
    far = torch.full_like(distance, window, dtype=torch.float64)
    if leaky is not None:
        far = window + (distance - window) / leaky
    return torch.where(distance < window, distance.to(torch.float64), far)


def _check_window(window: int, leaky: float | None) -> tuple[int, float | None]:
    window = check_int("window", window)
    if leaky is not None:
        leaky = check_real("leaky", leaky, minimum=1, why="(the k of slope 1/k), or None")
    return window, leaky


class ReRoPE(Rotation):
    """RoPE with the relative position clipped at ``window`` (Su, 2023), for causal attention.

    Two passes, as in Su's implementation: scores1 from q and k rotated by their own
    positions (distance i - j); scores2 from q rotated by ``window`` and k unrotated
    (distance exactly ``window``) or, leaky, q by i/leaky + window(1 - 1/leaky) and k by
    j/leaky. Each pair takes scores1 if i - j < window, else scores2.
    """

    def __init__(self, window: int, leaky: float | None = None, base: float = 10000.0):
        super().__init__()
        self.window, self.leaky = _check_window(window, leaky)
        self.base = _check_base(base)

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        q_pos, k_pos = _positions(q, k)
        near = attention_scores(
            apply_rope(q, q_pos, self.base), apply_rope(k, k_pos, self.base), scale
        )  # (..., T_q, T_k)
        if self.leaky is None:
            q2 = apply_rope(q, torch.full_like(q_pos, self.window), self.base)
            k2 = k
        else:
            w, s = self.window, 1.0 / self.leaky
            q2 = apply_rope(q, q_pos * s + w * (1 - s), self.base)
            k2 = apply_rope(k, k_pos * s, self.base)
        far = attention_scores(q2, k2, scale)  # (..., T_q, T_k)
        distance = q_pos[:, None] - k_pos[None, :]  # (T_q, T_k)
        return torch.where(distance < self.window, near, far)

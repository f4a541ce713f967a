"""Positions that rotate queries and keys: RoPE and ReRoPE.

Dimension letters, fixed book-wide: B batch, T sequence length (T_q queries, T_k keys),
D = d_model, H = n_head, d_k and d_v per-head widths.

Group 3 of :mod:`tutorial_lib.positional`: a :class:`Rotation` makes the scores from q
and k rotated by their positions, so it replaces the plain q k^T rather than adding to it.
It rotates when the scores are made, so a KV cache keeps keys unrotated and every step turns
them at that step's length (what a rotation that depends on the length needs).

Introduced in chapter Q3b ("Relative positions").
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..attention import attention_scores
from ..validate import format_shape
from .absolute import sinusoidal_frequencies

__all__ = [
    "apply_rope",
    "rope_layout_permutation",
    "query_key_positions",
    "Rotation",
    "RoPE",
    "rerope_positions",
    "ReRoPE",
]

LAYOUTS = ("interleaved", "half")


def apply_rope(
    x: Tensor,
    positions: Tensor,
    base: float = 10000.0,
    layout: str = "interleaved",
    frequencies: Tensor | None = None,
) -> Tensor:
    r"""Rotate each dimension pair of x by its position (Su et al., RoFormer).

    x: (..., T, d), float, d even; positions: (T,), or any shape that broadcasts to
    x.shape[:-1] without making it bigger, e.g. (B, 1, T) for x (B, H, T, d). A (B, T)
    tensor, which would line up with (H, T) of such an x, is refused when B = H: give it the
    head axis, positions[:, None].
    Pair i turns by the angle positions * base^(-2i/d).
    layout="interleaved": pairs (2i, 2i+1), as in the RoFormer paper.
    layout="half": pairs (i, i + d/2), as in GPT-NeoX and Hugging Face's LLaMA code;
    :func:`rope_layout_permutation` maps one onto the other.
    frequencies: (d/2,) to turn pair i by positions * frequencies[i] instead (chapter Q7's
    scaled RoPE variants, :mod:`tutorial_lib.positional.scaling`, make them).
    """
    positions = torch.as_tensor(positions)
    _require_rope_inputs(x, positions, layout, frequencies)
    d = x.shape[-1]
    omega = sinusoidal_frequencies(d, base) if frequencies is None else frequencies
    omega = omega.to(x.device, torch.float64)  # (d/2,)
    angle = positions.to(x.device, torch.float64)[..., None] * omega  # (..., T, d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # (..., T, d/2)
    if layout == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # (..., T, d/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., T, d)


def _require_rope_inputs(x: Tensor, positions: Tensor, layout: str, freqs: Tensor | None) -> None:
    """x float (..., T, d), d even; positions that broadcast to (..., T) without making it bigger
    and, with x (B, H, T, d), not (B, T) when B = H (they would turn head h by sequence h's);
    frequencies, if given, one per pair (one alone would broadcast over every pair)."""
    rows, p, half = x.shape[:-1], positions.dim(), (x.shape[-1] // 2,)  # rows (..., T)
    ok = x.is_floating_point() and x.shape[-1] % 2 == 0 and layout in LAYOUTS and p <= len(rows)
    ok = ok and all(a in (1, b) for a, b in zip(positions.shape[::-1], rows[::-1], strict=False))
    ok = ok and (freqs is None or tuple(freqs.shape) == half)
    if not ok or 1 < p < len(rows) and positions.shape[0] == rows[0] == rows[-p] > 1:
        raise ValueError(
            f"apply_rope turns pairs of a float x (..., T, d), d even, layout in {LAYOUTS}, by "
            "positions that broadcast to (..., T) as they are, e.g. (T,), or (B, 1, T) for x "
            f"(B, H, T, d), with frequencies None or one per pair, (d/2,) = {half}; got a {x.dtype}"
            f" x {format_shape(x)}, positions {format_shape(positions)}, {layout!r}, {freqs=}"
        )


def rope_layout_permutation(d: int) -> Tensor:
    """Index p with x_half[..., p] in the interleaved layout: [0, d/2, 1, d/2 + 1, ...].

    apply_rope(x[..., p], pos) == apply_rope(x, pos, layout="half")[..., p]; applying
    p to the rows of W_q and W_k turns checkpoints of one layout into the other.
    """
    return torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=-1).flatten()


def query_key_positions(T_q: int, T_k: int, device=None) -> tuple[Tensor, Tensor]:
    """Query positions T_k - T_q .. T_k - 1 and key positions 0 .. T_k - 1: the queries are
    the last T_q of T_k positions, as when decoding with a KV cache."""
    if T_q > T_k:
        raise ValueError(f"queries are the last T_q of T_k positions; got T_q={T_q} > T_k={T_k}")
    return torch.arange(T_k - T_q, T_k, device=device), torch.arange(T_k, device=device)


class Rotation(nn.Module):
    """Group 3 interface: ``forward(q (..., T_q, d_k), k (..., T_k, d_k), scale) -> scores``.

    The scores are made from q and k rotated by their positions
    (:func:`query_key_positions`), so a rotation replaces the plain q k^T rather than adding
    to it; T_k is the length attended to, what a length-dependent rotation reads.
    """

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        raise NotImplementedError


class RoPE(Rotation):
    """scores_ij = scale * <R_i q_i, R_j k_j> = scale * q_i^T R_{j-i} k_j: only j - i matters."""

    def __init__(self, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.base, self.layout = base, layout  # apply_rope checks them

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        q_pos, k_pos = query_key_positions(q.shape[-2], k.shape[-2], q.device)
        q = apply_rope(q, q_pos, self.base, self.layout)  # (..., T_q, d_k)
        k = apply_rope(k, k_pos, self.base, self.layout)  # (..., T_k, d_k)
        return attention_scores(q, k, scale)  # (..., T_q, T_k)


def rerope_positions(distance: Tensor, window: int, leaky: float | None = None) -> Tensor:
    """The relative position ReRoPE uses for a distance i - j (Su, 2023).

    distance below ``window``: unchanged. From ``window`` on: ``window`` (ReRoPE), or
    window + (distance - window) / leaky (Leaky ReRoPE, slope 1/leaky, leaky >= 1).
    """
    distance = torch.as_tensor(distance)
    far = torch.full_like(distance, window, dtype=torch.float64)
    if leaky is not None:
        far = window + (distance - window) / leaky
    return torch.where(distance < window, distance.to(torch.float64), far)


class ReRoPE(Rotation):
    """RoPE with the relative position clipped at ``window`` (Su, 2023), for causal attention.

    Two passes, as in Su's implementation: scores1 from q and k rotated by their own
    positions (distance i - j); scores2 from q rotated by ``window`` and k unrotated
    (distance exactly ``window``) or, leaky, q by i/leaky + window(1 - 1/leaky) and k by
    j/leaky. Each pair takes scores1 if i - j < window, else scores2.
    """

    def __init__(self, window: int, leaky: float | None = None, base: float = 10000.0):
        super().__init__()
        if not window >= 1 or not (leaky is None or leaky >= 1):
            raise ValueError(f"ReRoPE needs window >= 1, leaky None or >= 1; got {window}, {leaky}")
        self.window, self.leaky, self.base = window, leaky, base

    def forward(self, q: Tensor, k: Tensor, scale: float) -> Tensor:
        q_pos, k_pos = query_key_positions(q.shape[-2], k.shape[-2], q.device)
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

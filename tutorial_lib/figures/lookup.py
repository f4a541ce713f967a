"""Attention as a soft lookup (chapter Q0): one query against a few fixed 2-D keys.

Dimension letters as in :mod:`tutorial_lib.attention`: T keys (T_k) of width d_k = 2, each
with a value of width d_v = 1. A query is compared with every key by a dot product, the
scores are divided by a temperature tau and turned into weights by softmax, and the
output is the weighted mix of the values. The arithmetic is
:func:`tutorial_lib.attention.scaled_dot_product_attention` with ``scale = 1 / tau``; this
module only draws it.

Frames are SVG (sharp on any screen, a few kB each), drawn on a white panel with no text
under 11 px at their natural size.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..attention import scaled_dot_product_attention
from .common import HEAD_COLOURS
from .diagrams import MUTED, Canvas
from .explorer import Explorer

__all__ = [
    "KEYS",
    "VALUES",
    "QUERY_STEPS",
    "TEMPERATURES",
    "soft_lookup",
    "hard_lookup",
    "lookup_svg",
    "lookup_explorer",
    "draw_weights_against_temperature",
]

_ANGLES = (20.0, 110.0, 200.0, 290.0)  # degrees: four directions, a quarter turn apart
_RADIUS = 2.0
# Keys of one length, so the key with the largest q·k is also the one nearest in angle.
KEYS = torch.tensor(
    [[_RADIUS * math.cos(math.radians(a)), _RADIUS * math.sin(math.radians(a))] for a in _ANGLES]
)  # (T_k, d_k) = (4, 2)
VALUES = torch.tensor([[10.0], [20.0], [30.0], [40.0]])  # (T_k, d_v) = (4, 1)
QUERY_STEPS = (-2.0, -1.0, 0.0, 1.0, 2.0)  # the explorer's query coordinates, x and y
TEMPERATURES = (0.25, 1.0, 4.0)  # the explorer's tau: sharp, as written, flat
# Key colours for text: HEAD_COLOURS darkened to 4.5:1 contrast on white; bars use HEAD_COLOURS.
INK_ON_WHITE = ("#005a8c", "#8a5a00", "#006b4e", "#a3407f")


def soft_lookup(
    query: Tensor, temperature: float = 1.0, keys: Tensor = KEYS, values: Tensor = VALUES
) -> tuple[Tensor, Tensor]:
    """query (d_k,) -> output (d_v,) and weights (T_k,): softmax(keys @ query / tau) @ values."""
    if query.dim() != 1 or query.shape[0] != keys.shape[-1]:
        raise ValueError(
            f"query must have shape (d_k,) = ({keys.shape[-1]},); got {tuple(query.shape)}"
        )
    if temperature <= 0:
        raise ValueError(f"the temperature tau must be positive; got {temperature}")
    out, weights = scaled_dot_product_attention(
        query[None], keys, values, scale=1.0 / temperature
    )  # (1, d_v), (1, T_k)
    return out[0], weights[0]


def hard_lookup(query: Tensor, keys: Tensor = KEYS, values: Tensor = VALUES) -> tuple[Tensor, int]:
    """The value of the key with the largest q·k, and that key's index (the first on a tie)."""
    index = int((keys @ query).argmax())
    return values[index], index


def _sub(n: int) -> str:
    return f"_{n}"


def lookup_svg(x: float, y: float, temperature: float) -> str:
    """One frame: the query (x, y) among the keys, its weights, and the mixed value."""
    query = torch.tensor([float(x), float(y)])
    out, weights = soft_lookup(query, temperature)
    scores = KEYS @ query / temperature  # (T_k,)
    tied = bool((scores == scores.max()).sum() > 1)
    width, height = 640, 310
    c = Canvas(
        width,
        height,
        f"Soft lookup: query ({x:g}, {y:g}), temperature {temperature:g}",
        "Weights "
        + ", ".join(f"{w:.2f}" for w in weights.tolist())
        + f" on the four keys; output {out.item():.1f}.",
        id_prefix="lookup",
    )
    # Left: the plane of queries and keys, 52 px per unit.
    ox, oy, unit = 150.0, 158.0, 52.0

    def at(px, py):
        return ox + unit * px, oy - unit * py

    c.line([at(-2.7, 0), at(2.7, 0)], colour="#bbbbbb", width=1, arrow=False)
    c.line([at(0, -2.6), at(0, 2.6)], colour="#bbbbbb", width=1, arrow=False)
    c.dots([at(gx, gy) for gx in QUERY_STEPS for gy in QUERY_STEPS])
    qx, qy = at(x, y)
    for i, (key, w) in enumerate(zip(KEYS.tolist(), weights.tolist(), strict=True)):
        colour = HEAD_COLOURS[i]
        kx, ky = at(*key)
        c.line([(qx, qy), (kx, ky)], colour=colour, width=0.5 + 9 * w, arrow=False)
        c.line([(ox, oy), (kx, ky)], colour=colour, width=1.6)
        lx, ly = at(key[0] * 1.2, key[1] * 1.2)
        c.text(lx, ly + 5, f"k{_sub(i + 1)}", 13, weight="bold", colour=INK_ON_WHITE[i])
    if x or y:
        c.line([(ox, oy), (qx, qy)], colour="#000000", width=2.6)
    c.circle(qx, qy, 4.5, fill="#000000", stroke="#000000")
    c.text(qx + 8, qy - 8, "q", 14, anchor="start", weight="bold")
    c.text(12, 20, "line from q to a key: thicker = more weight", 12, anchor="start", colour=MUTED)
    # Right: scores, weights, the mixed value.
    rx = 312.0
    c.text(rx, 26, f"scores q·k / τ and weights (τ = {temperature:g})", 13, anchor="start",
           weight="bold")  # fmt: skip
    for i, (s, w) in enumerate(zip(scores.tolist(), weights.tolist(), strict=True)):
        top = 42 + 30 * i
        c.text(rx, top + 15, f"k{_sub(i + 1)}", 13, anchor="start", weight="bold",
               colour=INK_ON_WHITE[i])  # fmt: skip
        c.text(rx + 90, top + 15, f"{s:+.2f}".replace("-", "−"), 13, anchor="end")
        c.rect(rx + 100, top + 3, 150, 15, fill="#eeeeee", stroke="#cccccc", rx=2, width=0.8)
        c.rect(rx + 100, top + 3, 150 * w, 15, fill=HEAD_COLOURS[i], stroke=HEAD_COLOURS[i], rx=2)
        c.text(rx + 256, top + 15, f"{w:.2f}", 13, anchor="start")
    # The values on a number line, the output as a black triangle.
    line_y = 222.0
    lo, hi = float(VALUES.min()), float(VALUES.max())

    def vx(v):
        return rx + 20 + (v - lo) / (hi - lo) * 270

    c.text(rx, 176, f"output = Σ weight × value = {out.item():.1f}", 13, anchor="start",
           weight="bold")  # fmt: skip
    c.line([(vx(lo) - 10, line_y), (vx(hi) + 10, line_y)], colour="#888888", arrow=False)
    for i, v in enumerate(VALUES[:, 0].tolist()):
        c.line([(vx(v), line_y - 7), (vx(v), line_y + 7)], colour=HEAD_COLOURS[i], width=3,
               arrow=False)  # fmt: skip
        c.text(vx(v), line_y + 24, f"v{_sub(i + 1)} = {v:g}", 12, colour=INK_ON_WHITE[i])
    ox_ = vx(out.item())
    c.parts.append(
        f'<polygon points="{ox_:.1f},{line_y - 3:.1f} {ox_ - 7:.1f},{line_y - 15:.1f} '
        f'{ox_ + 7:.1f},{line_y - 15:.1f}" fill="#000000"/>'
    )
    if tied:
        hard = "hard lookup: a tie, no single best key"
    else:
        value, index = hard_lookup(query)
        hard = f"hard lookup (largest q·k): v{_sub(index + 1)} = {value.item():g}"
    c.text(rx, 282, hard, 12, anchor="start", colour=MUTED)
    return c.render()


def lookup_explorer() -> Explorer:
    """Move the query over the keys and change the temperature: 25 x 3 = 75 frames."""
    return Explorer(
        lookup_svg,
        {"x": list(QUERY_STEPS), "y": list(QUERY_STEPS), "temperature": list(TEMPERATURES)},
        kind="html",
        labels={"x": "query x", "y": "query y", "temperature": "temperature τ"},
        initial={"x": 2.0, "y": 1.0, "temperature": 1.0},
        title="A soft lookup: one query, four keys, four values",
    )


def draw_weights_against_temperature(fig, query: Tensor, temperatures: Tensor) -> None:
    """Each key's weight for ``query`` (d_k,) at every tau in ``temperatures`` (log axis).

    The explorer's three temperatures are marked, so the curve and the frames can be read
    together. Draws on the matplotlib Figure it is given.
    """
    weights = torch.stack([soft_lookup(query, float(tau))[1] for tau in temperatures])
    ax = fig.subplots()
    for i in range(KEYS.shape[0]):
        ax.plot(temperatures, weights[:, i], color=HEAD_COLOURS[i], lw=2, label=f"$k_{i + 1}$")
    for tau in TEMPERATURES:
        ax.axvline(tau, color="#999999", lw=1, ls=":")
    ax.axhline(1 / KEYS.shape[0], color="#999999", lw=1, ls="--")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("temperature τ (dotted: the explorer's values)")
    ax.set_ylabel("weight")
    ax.set_title(f"Weights for q = ({query[0]:g}, {query[1]:g}); dashed: 1/4, the average")
    # Outside the axes: inside, it hid the curves where they meet at 1/4 (large tau).
    ax.legend(title="key", loc="upper left", bbox_to_anchor=(1.01, 1.0))

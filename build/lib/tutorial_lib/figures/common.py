"""Drawing helpers every figure module shares: the palette."""

from __future__ import annotations

__all__ = ["HEAD_COLOURS"]

# Colour-blind-safe palette (Okabe-Ito) for heads.
HEAD_COLOURS = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
]

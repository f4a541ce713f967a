"""The axes explorer of chapter Q4: which numbers of a (B, T, D) block share one statistic.

Dimension letters as in :mod:`tutorial_lib.norms`: B sequences, T positions, D features.

The highlighted cells are not typed in by hand: for the chosen output element
y[b, t, d], autograd finds every input x[b', t', d'] whose value changes it,
through the actual layers (ours and PyTorch's). For a normaliser without
learned parameters those are exactly the numbers its statistic is computed over.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..norms import BatchNorm, LayerNorm, RMSNorm
from .explorer import Explorer

__all__ = [
    "AXES_SHAPE",
    "AXES_LENGTHS",
    "AXES_NORMS",
    "AXES_ELEMENTS",
    "axes_padding_mask",
    "statistic_group",
    "draw_norm_axes",
    "norm_axes_explorer",
]

AXES_SHAPE = (3, 5, 6)  # (B, T, D): small enough to see every cell
AXES_LENGTHS = (5, 3, 2)  # real tokens in each sequence; the rest of each row is padding
N_GROUPS = 2  # GroupNorm's groups of features


def axes_padding_mask() -> Tensor:
    """(B, T) bool, True = real token, for the explorer's block."""
    T = AXES_SHAPE[1]
    return torch.arange(T) < torch.tensor(AXES_LENGTHS)[:, None]


def _channels_first(fn: Callable[[Tensor], Tensor]) -> Callable[[Tensor, Tensor], Tensor]:
    """Apply a PyTorch norm that expects (B, D, T) to our (B, T, D) tokens."""
    return lambda x, mask: fn(x.transpose(1, 2)).transpose(1, 2)


def _ours(layer_class, **kwargs) -> Callable[[Tensor, Tensor], Tensor]:
    D = AXES_SHAPE[2]
    layer = layer_class(D, **kwargs).double()
    return lambda x, mask: layer(x)


def _masked_batchnorm(x: Tensor, mask: Tensor) -> Tensor:
    return BatchNorm(AXES_SHAPE[2], affine=False).double()(x, mask)


# name -> (function of x (B, T, D) and mask (B, T), what one statistic covers, how many there are)
AXES_NORMS: dict[str, tuple[Callable[[Tensor, Tensor], Tensor], str, str]] = {
    "BatchNorm": (
        _ours(BatchNorm, affine=False),
        "per feature d, over every position of every sequence, padding included",
        "D statistics",
    ),
    "BatchNorm, masked": (
        _masked_batchnorm,
        "per feature d, over the real tokens of the batch only",
        "D statistics",
    ),
    "LayerNorm": (
        _ours(LayerNorm, elementwise_affine=False),
        "per token (b, t), over its D features",
        "B·T statistics",
    ),
    "RMSNorm": (
        _ours(RMSNorm, elementwise_affine=False),
        "per token (b, t), over its D features (mean square, no mean)",
        "B·T statistics",
    ),
    "InstanceNorm1d": (
        _channels_first(F.instance_norm),
        "per sequence b and feature d, over the T positions",
        "B·D statistics",
    ),
    f"GroupNorm ({N_GROUPS} groups)": (
        _channels_first(lambda x: F.group_norm(x, N_GROUPS)),
        f"per sequence b and group of D/{N_GROUPS} features, over all T positions",
        f"B·{N_GROUPS} statistics",
    ),
    "LayerNorm over (T, D)": (
        lambda x, mask: F.layer_norm(x, x.shape[1:]),
        "per sequence b, over all its T·D numbers (the per-sample reading)",
        "B statistics",
    ),
}

# (b, t, d) of elements one can pick; all on real tokens.
AXES_ELEMENTS = [(0, 0, 0), (0, 3, 2), (1, 1, 4), (2, 0, 1), (2, 1, 5)]


def _element_label(element: tuple[int, int, int]) -> str:
    b, t, d = element
    return f"b={b}, t={t}, d={d}"


@cache
def statistic_group(norm: str, element: tuple[int, int, int]) -> np.ndarray:
    """(B, T, D) bool: the inputs whose value changes output ``element`` of ``norm``.

    Measured with autograd on a fixed random block (padding holds zeros, as
    after zero-padding), so the picture shows what the layer computes.
    """
    if norm not in AXES_NORMS:
        raise ValueError(f"norm must be one of {list(AXES_NORMS)}; got {norm!r}")
    fn = AXES_NORMS[norm][0]
    mask = axes_padding_mask()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*AXES_SHAPE, generator=g, dtype=torch.float64)
    x = torch.where(mask[..., None], x, 0.0).requires_grad_()
    b, t, d = element
    fn(x, mask)[b, t, d].backward()
    group = (x.grad != 0).numpy()
    group.setflags(write=False)  # cached and shared between frames
    return group


_CELL = 20  # pixels per cell side, borders included
_BORDER = 2
_LIGHT = np.array([236, 236, 236], dtype=np.uint8)  # a real token, outside the statistic
_PAD = np.array([200, 200, 200], dtype=np.uint8)  # padding, outside the statistic
_GROUP = np.array([230, 159, 0], dtype=np.uint8)  # Okabe-Ito orange: inside the statistic
_STRIPE = np.array([90, 90, 90], dtype=np.uint8)  # diagonal stripes mark padding


def _block_image(group: np.ndarray, real: np.ndarray, chosen: tuple[int, int, int]) -> np.ndarray:
    """(H_px, W_px, 3) uint8: B panels of T x D cells, drawn with numpy alone.

    group: (B, T, D) bool; real: (B, T) bool. Panels sit side by side, one
    empty cell apart. Drawing cells as pixels (not matplotlib patches or a
    tick grid) keeps a frame to a few milliseconds.
    """
    B, T, D = group.shape
    c = _CELL
    # 1. One colour per cell, panels side by side with a blank column between them.
    is_real = np.broadcast_to(real[:, :, None], (B, T, D))  # (B, T, D)
    colours = np.where(is_real[..., None], _LIGHT, _PAD)  # (B, T, D, 3)
    colours = np.where(group[..., None], _GROUP, colours)
    padded = np.zeros((B, T, D + 1), dtype=bool)
    padded[:, :, :D] = ~is_real
    cells = np.full((B, T, D + 1, 3), 255, dtype=np.uint8)
    cells[:, :, :D] = colours
    cells = cells.transpose(1, 0, 2, 3).reshape(T, B * (D + 1), 3)[:, :-1]  # (T, W_cells, 3)
    padded = padded.transpose(1, 0, 2).reshape(T, B * (D + 1))[:, :-1]  # (T, W_cells)
    # 2. Blow every cell up to c x c pixels, then draw borders and stripes with tiled masks.
    image = cells.repeat(c, axis=0).repeat(c, axis=1)  # (T*c, W_cells*c, 3)
    yy, xx = np.mgrid[0 : image.shape[0], 0 : image.shape[1]]
    border = (yy % c < _BORDER) | (xx % c < _BORDER)
    stripes = padded.repeat(c, axis=0).repeat(c, axis=1) & ((yy + xx) % 7 < 2) & ~border
    image[border] = 255
    image[stripes] = _STRIPE
    # 3. Outline the chosen element in black.
    b, t, d = chosen
    y0, x0 = t * c, (b * (D + 1) + d) * c
    frame = image[y0 + _BORDER - 1 : y0 + c + 1, x0 + _BORDER - 1 : x0 + c + 1]
    frame[:3], frame[-3:], frame[:, :3], frame[:, -3:] = 0, 0, 0, 0
    return image


_BLOCK_ORIGIN = (40, 22)  # lower-left corner of the block in the frame, in pixels


@cache
def _static_labels(width_px: int, height_px: int, dpi: float) -> np.ndarray:
    """(H, W, 4) uint8 RGBA: the labels that never change (panel names, axis arrows).

    Drawn once per process and pasted into every frame, like a blitted background:
    rendering glyphs is most of what a matplotlib frame costs.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    B, T, D = AXES_SHAPE
    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    fig.patch.set_alpha(0.0)
    canvas = FigureCanvasAgg(fig)
    x0, y0 = _BLOCK_ORIGIN
    top = y0 + T * _CELL
    for b in range(B):
        centre = x0 + (b * (D + 1) + D / 2) * _CELL
        fig.text(
            centre / width_px,
            (top + 3) / height_px,
            f"sequence b={b}",
            ha="center",
            va="bottom",
            fontsize=9,
        )
    fig.text((x0 - 5) / width_px, top / height_px, "t\n\u2193", ha="right", va="top", fontsize=9)
    fig.text(
        x0 / width_px, (y0 - 3) / height_px, "feature d \u2192", ha="left", va="top", fontsize=9
    )
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


def draw_norm_axes(fig, norm: str, element: str) -> None:
    """Draw the (B, T, D) block as B panels of T x D cells; highlight one statistic's cells.

    ``element`` is a label such as "b=0, t=3, d=2" (see ``AXES_ELEMENTS``).
    """
    labels = {_element_label(e): e for e in AXES_ELEMENTS}
    if element not in labels:
        raise ValueError(f"element must be one of {list(labels)}; got {element!r}")
    chosen = labels[element]
    group = statistic_group(norm, chosen)  # (B, T, D)
    block = _block_image(group, axes_padding_mask().numpy(), chosen)

    # 1. The whole frame as one pixel array: white, the block, then the cached labels on top.
    width_px, height_px = (int(round(v)) for v in fig.get_size_inches() * fig.dpi)
    frame = np.full((height_px, width_px, 3), 255, dtype=np.uint8)
    x0, y0 = _BLOCK_ORIGIN
    row = height_px - y0 - block.shape[0]  # array rows count from the top
    frame[row : row + block.shape[0], x0 : x0 + block.shape[1]] = block
    labels_rgba = _static_labels(width_px, height_px, fig.dpi)
    alpha = labels_rgba[..., 3:] / 255.0  # (H, W, 1)
    frame = (frame * (1 - alpha) + labels_rgba[..., :3] * alpha).astype(np.uint8)
    fig.figimage(frame, xo=0, yo=0, origin="upper")

    # 2. The only text that changes: which norm, and how many numbers its statistic uses.
    _, covers, count = AXES_NORMS[norm]
    fig.text(0.015, 0.97, f"{norm}: {covers}", fontsize=9, weight="bold", va="top")
    fig.text(
        0.015,
        0.88,
        f"outlined output: its statistic uses the {int(group.sum())} orange "
        f"numbers; {count} in all",
        fontsize=9,
        va="top",
    )


def norm_axes_explorer() -> Explorer:
    """The chapter's explorer: pick a norm and an output element; one frame for each pair."""
    # The autograd measurements are data, not drawing: take them once, before any frame.
    for norm in AXES_NORMS:
        for element in AXES_ELEMENTS:
            statistic_group(norm, element)
    return Explorer(
        draw_norm_axes,
        {"norm": list(AXES_NORMS), "element": [_element_label(e) for e in AXES_ELEMENTS]},
        kind="figure",
        labels={"norm": "norm", "element": "output element"},
        initial={"norm": "LayerNorm", "element": _element_label(AXES_ELEMENTS[1])},
        figsize=(7.5, 2.6),
        alt="A batch of three padded sequences drawn as three grids of positions by features; "
        "the cells that share one normalisation statistic with the chosen element are orange.",
        title="Axes explorer: which numbers does one statistic average over?",
    )


def draw_position_influence(fig, maps: dict[str, Tensor]) -> None:
    """One panel per (T, T) map of ||d y_t / d x_t'||: output position t down, input t' across.

    Colour is on a log scale shared by the panels, with a colour bar; an entry that is
    exactly zero (no computation connects the two positions) is drawn in light grey and
    marked with a dot, so that "exactly zero" and "small" never look alike.
    """
    from matplotlib.colors import LogNorm

    values = torch.cat([m[m > 0] for m in maps.values()])
    scale = LogNorm(vmin=values.min().item(), vmax=values.max().item())
    axes = fig.subplots(1, len(maps), sharey=True)
    for ax, (title, m) in zip(np.atleast_1d(axes), maps.items(), strict=True):
        T = m.shape[0]
        data = np.ma.masked_equal(m.numpy(), 0.0)  # exact zeros: no colour
        ax.set_facecolor("#e6e6e6")
        image = ax.imshow(data, norm=scale, cmap="viridis")
        rows, cols = np.nonzero(m.numpy() == 0)
        ax.plot(cols, rows, ".", color="#777777", markersize=3)
        ax.set_title(title)
        ax.set_xlabel("input position t\u2032")
        ax.set_xticks(range(0, T, 2))
        ax.set_yticks(range(0, T, 2))
    np.atleast_1d(axes)[0].set_ylabel("output position t")
    bar = fig.colorbar(image, ax=axes, shrink=0.9, pad=0.02)
    bar.set_label(r"$\|\partial y_t / \partial x_{t'}\|$  (grey dot: exactly 0)")

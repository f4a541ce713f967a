"""The axes explorer of chapter Q4: which numbers of a (B, T, D) block share one statistic.

Dimension letters as in :mod:`tutorial_lib.norms`: B sequences, T positions, D features.

The highlighted cells are not typed in by hand: for the chosen output element
y[b, t, d], autograd finds every input x[b', t', d'] whose value changes it,
through the actual layers (ours and PyTorch's). For a normaliser without
learned parameters those are exactly the numbers its statistic is computed over.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..norms import BatchNorm, LayerNorm, RMSNorm
from .common import INK
from .explorer import Explorer
from .svg import key, row

__all__ = [
    "AXES_SHAPE",
    "AXES_LENGTHS",
    "AXES_NORMS",
    "AXES_ELEMENTS",
    "axes_padding_mask",
    "statistic_group",
    "norm_axes_html",
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


_CELL = 24  # CSS pixels per cell side
_LIGHT = "#ececec"  # a real token, outside the statistic
_PAD = "#c8c8c8"  # padding, outside the statistic (striped too)
_GROUP = "#E69F00"  # Okabe-Ito orange: inside the statistic
_STRIPES = (
    '<defs><pattern id="pad-stripes" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="none"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#5a5a5a" stroke-width="2"/></pattern></defs>'
)


def _sequence_svg(b: int, group: np.ndarray, real: np.ndarray, chosen) -> str:
    """One sequence of the block as T x D cells: SVG text, a few kilobytes."""
    _, T, D = group.shape
    c, left, top = _CELL, 30, 40
    width, height = left + D * c + 6, top + T * c + 8
    cells = []
    for t in range(T):
        for d in range(D):
            fill = _GROUP if group[b, t, d] else (_LIGHT if real[b, t] else _PAD)
            x, y = left + d * c, top + t * c
            cells.append(f'<rect x="{x}" y="{y}" width="{c - 2}" height="{c - 2}" fill="{fill}"/>')
            if not real[b, t]:
                cells.append(
                    f'<rect x="{x}" y="{y}" width="{c - 2}" height="{c - 2}" '
                    'fill="url(#pad-stripes)"/>'
                )
    if chosen[0] == b:
        _, t, d = chosen
        cells.append(
            f'<rect x="{left + d * c - 1.5}" y="{top + t * c - 1.5}" width="{c + 1}" '
            f'height="{c + 1}" fill="none" stroke="{INK}" stroke-width="3"/>'
        )
    labels = [
        f'<text x="{left + D * c / 2}" y="14" text-anchor="middle" font-weight="bold" '
        f'font-size="13">sequence b={b}</text>',
        f'<text x="{left + D * c / 2}" y="31" text-anchor="middle">feature d →</text>',
        f'<text transform="translate(10 {top + T * c / 2}) rotate(-90)" '
        'text-anchor="middle">← position t</text>',
    ]
    for t in range(T):
        labels.append(
            f'<text x="{left - 4}" y="{top + t * c + c / 2 + 3}" text-anchor="end">{t}</text>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" '
        f'fill="{INK}" role="img" aria-label="sequence b={b}" style="flex:none">'
        f"{_STRIPES}{''.join(cells)}{''.join(labels)}</svg>"
    )


def norm_axes_html(norm: str, element: str) -> str:
    """The (B, T, D) block as B panels of T x D cells, with one statistic's cells in orange.

    ``element`` is a label such as "b=0, t=3, d=2" (see ``AXES_ELEMENTS``).
    """
    labels = {_element_label(e): e for e in AXES_ELEMENTS}
    if element not in labels:
        raise ValueError(f"element must be one of {list(labels)}; got {element!r}")
    chosen = labels[element]
    group = statistic_group(norm, chosen)  # (B, T, D)
    real = axes_padding_mask().numpy()  # (B, T)
    _, covers, count = AXES_NORMS[norm]
    head = (
        f'<div style="font-size:14px;color:{INK}"><b>{html.escape(norm)}</b>: '
        f"{html.escape(covers)}.<br>The outlined output's statistic uses the "
        f"<b>{int(group.sum())}</b> orange numbers; {html.escape(count)} in all.</div>"
    )
    legend = key(
        [
            ("in the outlined output's statistic", _GROUP, "box"),
            ("real token, not in it", _LIGHT, "box"),
            ("padding (striped)", _PAD, "box"),
        ]
    )
    panels = [_sequence_svg(b, group, real, chosen) for b in range(group.shape[0])]
    return head + row(*panels) + legend


def norm_axes_explorer() -> Explorer:
    """The chapter's explorer: pick a norm and an output element; one frame for each pair."""
    # The autograd measurements are data, not drawing: take them once, before any frame.
    for norm in AXES_NORMS:
        for element in AXES_ELEMENTS:
            statistic_group(norm, element)
    return Explorer(
        norm_axes_html,
        {"norm": list(AXES_NORMS), "element": [_element_label(e) for e in AXES_ELEMENTS]},
        kind="html",
        labels={"norm": "norm", "element": "output element"},
        initial={"norm": "LayerNorm", "element": _element_label(AXES_ELEMENTS[1])},
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
    # Plain text, not mathtext: mathtext splits a label into pieces, which the Chinese edition
    # cannot translate (it replaces whole texts), and drew "'" from a font browsers lack.
    bar.set_label("‖∂y/∂x‖  (grey dot: exactly 0)")

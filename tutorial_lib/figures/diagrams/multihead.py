"""Multi-head attention, drawn as ``tutorial_lib.attention.MultiHeadAttention`` computes it."""

from __future__ import annotations

from ...model import TransformerConfig
from ..common import HEAD_COLOURS
from .shapes import multihead_shapes
from .svg import FILL, MUTED, PAPER, Canvas

__all__ = ["multihead_svg"]


def _head_bar(c: Canvas, cx: float, y: float, n_head: int, width: float = 120.0) -> None:
    """The last axis of a projection as H coloured slices, one per head."""
    shown = min(n_head, 16)
    slice_w = width / shown
    for h in range(shown):
        c.rect(
            cx - width / 2 + h * slice_w,
            y,
            slice_w,
            9,
            fill=HEAD_COLOURS[h % len(HEAD_COLOURS)],
            stroke=PAPER,
            rx=0,
            width=0.8,
        )


def multihead_svg(config: TransformerConfig | None = None, *, add_norm: bool = True) -> str:
    """Multi-head attention as ``tutorial_lib.attention.MultiHeadAttention`` computes it.

    Project q, k and v, split the last axis into H heads of width d_k (d_v for values),
    attend in every head at once, concatenate the heads and mix them with W^O; with
    ``add_norm`` the residual and the post-LN LayerNorm the class applies last.
    Shapes on the arrows come from :func:`multihead_shapes`; the sizes in the legend from
    ``config`` (default: ``TransformerConfig()``, the paper's base model).
    """
    config = config or TransformerConfig()
    s = multihead_shapes()
    d_k, d_v = config.head_dims
    H = config.n_head
    width = 640
    height = 720 if add_norm else 640
    c = Canvas(
        width,
        height,
        "Multi-head attention",
        (
            "Queries, keys and values are each projected by one Linear layer (W^Q, W^K, W^V), "
            f"whose output {s['q_proj']} is read as H heads of width d_k: {s['q_heads']}. "
            f"Every head computes softmax(Q K^T / sqrt(d_k)) V, weights {s['weights']}, "
            f"output {s['heads_out']}. The heads are concatenated to {s['concat']} and mixed "
            f"by W^O to {s['out']}"
            + (", then the input is added back and LayerNorm applied." if add_norm else ".")
            + f" Sizes: D = {config.d_model}, H = {H}, d_k = {d_k}, d_v = {d_v}."
        ),
        id_prefix="multihead-diagram",
    )
    columns = {"q": 150.0, "k": 320.0, "v": 490.0}
    bottom = height - 24
    # Inputs.
    for name, cx in columns.items():
        c.text(cx, bottom, f"{name}: {s[name + '_in']}", 13)
    # Projections.
    proj_y = bottom - 96
    widths = {"q": ("Q", "d_k"), "k": ("K", "d_k"), "v": ("V", "d_v")}
    for name, cx in columns.items():
        letter, per_head = widths[name]
        c.line([(cx, bottom - 18), (cx, proj_y + 44)])
        c.box(cx - 70, proj_y, 140, [f"W^{letter}", f"D → H·{per_head}"], FILL["linear"])
        # The projection's last axis, H slices wide, then split into heads.
        c.line([(cx, proj_y), (cx, proj_y - 70)])
        c.text(cx + 6, proj_y - 14, s[f"{name}_proj"], 12, anchor="start")
        _head_bar(c, cx - 4, proj_y - 40, H, width=110)
        c.text(cx + 6, proj_y - 55, "split into H heads", 12, anchor="start", colour=MUTED)
        c.text(cx + 6, proj_y - 76, s[f"{name}_heads"], 12, anchor="start")
    # Attention in every head: a stack of H boxes.
    att_y = proj_y - 200
    att_h = 76
    shadows = min(H, 8) - 1
    for i in range(shadows, 0, -1):
        c.rect(
            90 + 5 * i,
            att_y - 5 * i,
            460,
            att_h,
            fill=FILL["attention"],
            stroke=HEAD_COLOURS[i % len(HEAD_COLOURS)],
        )
    for cx in columns.values():
        c.line([(cx, proj_y - 84), (cx, att_y + att_h)])
    c.box(
        90,
        att_y,
        460,
        [
            "Scaled dot-product attention, in each of the H heads",
            "softmax(Q K^T / √d_k) V, one mask shared by every head",
            f"scores and weights {s['weights']}",
        ],
        FILL["attention"],
        line_height=19,
    )
    c.text(90 + 460 + 5 * shadows, att_y - 5 * shadows - 8, f"× H = {H} heads", 13, anchor="end")
    # Concatenate, then W^O.
    cx = columns["k"]
    cat_y = att_y - 112
    c.line([(cx, att_y - 5 * shadows), (cx, cat_y + 44)])
    c.text(cx + 6, att_y - 5 * shadows - 14, s["heads_out"], 12, anchor="start")
    c.box(cx - 90, cat_y, 180, ["Concatenate the heads", "transpose, then view"], FILL["block"])
    wo_y = cat_y - 104
    c.line([(cx, cat_y), (cx, wo_y + 44)])
    _head_bar(c, cx - 4, cat_y - 40, H, width=110)
    c.text(cx + 6, cat_y - 14, s["concat"], 12, anchor="start")
    c.box(cx - 70, wo_y, 140, ["W^O", "H·d_v → D"], FILL["linear"])
    top = wo_y
    if add_norm:
        norm_y = wo_y - 80
        c.line([(cx, wo_y), (cx, norm_y + 44)])
        c.text(cx + 6, wo_y - 14, s["out"], 12, anchor="start")
        c.box(cx - 90, norm_y, 180, ["Add & Norm", "LayerNorm(q + ·), post-LN"], FILL["norm"])
        # The residual: the query input itself, around everything.
        qx = columns["q"]
        c.line(
            [(qx, bottom - 30), (40, bottom - 30), (40, norm_y + 22), (cx - 90, norm_y + 22)],
            colour=MUTED,
            dashed=True,
        )
        c.text(46, norm_y + 40, "residual: q", 12, anchor="start", colour=MUTED)
        top = norm_y
    c.line([(cx, top), (cx, top - 30)])
    c.text(cx + 6, top - 12, s["normed"] if add_norm else s["out"], 12, anchor="start")
    d_heads = f"d_k = d_v = {d_k}" if d_k == d_v else f"d_k = {d_k}, d_v = {d_v}"
    c.text(
        20,
        22,
        f"D = {config.d_model}, H = {H}, {d_heads}",
        12,
        anchor="start",
        colour=MUTED,
    )
    c.text(20, 40, "self-attention: q, k, v are the same x", 12, anchor="start", colour=MUTED)
    return c.render()

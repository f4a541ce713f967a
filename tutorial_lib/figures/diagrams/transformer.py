"""The whole encoder-decoder, laid out as the paper's Figure 1, with the book's chapters on it."""

from __future__ import annotations

from ...model import TransformerConfig
from .shapes import transformer_shapes
from .svg import FILL, MUTED, Canvas

__all__ = ["CHAPTER_TAGS", "transformer_svg"]

# Which chapter answers the question each part raises (the map of the book).
CHAPTER_TAGS = {
    "attention": "Q0–Q2",
    "positions": "Q3",
    "norm": "Q4",
    "model": "Q5",
}


def _sizes(config: TransformerConfig) -> list[str]:
    """The config's sizes, as two lines of the legend."""
    d_k, d_v = config.head_dims
    heads = f"d_k = d_v = {d_k}" if d_k == d_v else f"d_k = {d_k}, d_v = {d_v}"
    layers = (
        f"N = {config.n_enc_layers}"
        if config.n_enc_layers == config.n_dec_layers
        else f"N = {config.n_enc_layers} and {config.n_dec_layers}"
    )
    return [
        f"{layers} · D = {config.d_model:,} · H = {config.n_head} · {heads}",
        f"d_ff = {config.d_ff:,} · V = {config.tgt_vocab:,}",
    ]


def _layers(n: int) -> str:
    return f"N = {n} layer" if n == 1 else f"N = {n} layers"


def transformer_svg(config: TransformerConfig | None = None, *, chapters: bool = False) -> str:
    """The encoder-decoder of ``tutorial_lib.model.Transformer``, laid out as the paper's Figure 1.

    Post-LN sub-layers (Add & Norm after each), the three masks named with their shapes,
    one embedding table shared by both sides and tied to the output. Shapes on the arrows
    come from :func:`transformer_shapes`; the legend's sizes from ``config`` (default: the
    paper's base model). ``chapters=True`` tags each part with the chapter that explains it.
    """
    config = config or TransformerConfig()
    s = transformer_shapes()
    tag = CHAPTER_TAGS if chapters else dict.fromkeys(CHAPTER_TAGS)
    width, height = 660, 960
    desc = (
        "The Transformer as built by tutorial_lib.model. Encoder, left: source tokens "
        f"{s['src']} are embedded (times sqrt(D)) and given sinusoidal positions, "
        f"{s['src_embedded']}, then pass N layers of self-attention (padding mask "
        f"{s['src_mask']}, weights {s['enc_weights']}) and a feed-forward block (hidden "
        f"{s['enc_hidden']}), each followed by Add & Norm; the result is the memory "
        f"{s['memory']}. Decoder, right: the target "
        f"shifted right {s['tgt']}, embedded with the same table, {s['tgt_embedded']}, passes "
        f"N layers of masked self-attention (causal and padding mask {s['tgt_mask']}, weights "
        f"{s['self_weights']}), cross-attention whose keys and values are the memory "
        f"{s['cross_kv']} (mask {s['src_mask']}, weights "
        f"{s['cross_weights']}) and a feed-forward block, each followed by Add & Norm; a "
        f"linear layer tied to the embedding gives logits {s['logits']} and a softmax the "
        f"next-token probabilities. Sizes: {', '.join(_sizes(config))}."
    )
    c = Canvas(width, height, "The Transformer, encoder and decoder", desc, "transformer-diagram")
    ex, dx, bw = 182.0, 475.0, 220.0  # column centres and box width
    gap = 24.0

    def stack(cx, y, items, residual_x):
        """Boxes bottom-up from y (the arrow into the first box starts there); returns the top.

        ``items``: (lines, fill, tag, residual) with residual=True for a sub-layer whose
        input goes around it to the Add & Norm above. Records each box's middle in ``mids``.
        """
        mids = []
        for lines, fill, label, residual in items:
            h = 12 + 16 * len(lines)
            top = y - gap - h
            c.line([(cx, y), (cx, top + h)])
            c.box(cx - bw / 2, top, bw, lines, fill, tag=label)
            mids.append(top + h / 2)
            if residual:
                # Around the sub-layer: from just below it to the Add & Norm above it.
                branch = y - gap / 2
                norm_mid = top - gap - 15
                edge = cx - bw / 2 if residual_x < cx else cx + bw / 2
                c.line([(cx, branch), (residual_x, branch), (residual_x, norm_mid)], arrow=False)
                c.line([(residual_x, norm_mid), (edge, norm_mid)])
            y = top
        return y, mids

    def add_norm():
        return (["Add & Norm"], FILL["norm"], tag["norm"], False)

    def ffn(hidden):
        return (["Feed-forward", "D → d_ff → D", f"hidden {hidden}"], FILL["ffn"], None, True)

    def embedding_and_positions(cx, bottom, tokens, label, side):
        """Tokens, embedding × √D, then + positions; returns the y above the ⊕."""
        c.text(cx, bottom, label, 13)
        c.text(cx, bottom + 18, tokens, 12)
        emb_top = bottom - 18 - gap - 44
        c.line([(cx, bottom - 16), (cx, emb_top + 44)])
        c.box(cx - bw / 2, emb_top, bw, ["Embedding × √D", "one table, V × D"], FILL["embedding"])
        if tag["model"]:
            c.tag(cx + bw / 2, emb_top, tag["model"])
        plus_y = emb_top - gap - 12
        c.line([(cx, emb_top), (cx, plus_y + 12)])
        c.circle(cx, plus_y, 12)
        c.text(cx, plus_y + 5, "+", 16, weight="bold")
        px = cx - 60 if side == "left" else cx + 60
        anchor = "end" if side == "left" else "start"
        c.line([(px, plus_y), (cx - 12 if side == "left" else cx + 12, plus_y)])
        c.text(px + (-4 if side == "left" else 4), plus_y - 3, "sinusoidal", 12, anchor=anchor)
        c.text(px + (-4 if side == "left" else 4), plus_y + 13, "positions", 12, anchor=anchor)
        if tag["positions"]:
            c.tag(px + (-4 if side == "left" else 50), plus_y - 20, tag["positions"])
        return plus_y - 12

    bottom = height - 40
    # Encoder.
    enc_in = embedding_and_positions(ex, bottom, s["src"], "source tokens", "left")
    block_bottom = enc_in - 40
    c.line([(ex, enc_in), (ex, block_bottom)], arrow=False)
    c.text(ex + 6, enc_in - 16, s["src_embedded"], 12, anchor="start")
    enc_items = [
        (
            ["Self-attention", "mask: source padding", s["src_mask"]],
            FILL["attention"],
            tag["attention"],
            True,
        ),
        add_norm(),
        ffn(s["enc_hidden"]),
        add_norm(),
    ]
    enc_top, enc_mids = stack(ex, block_bottom, enc_items, residual_x=ex - bw / 2 - 18)
    c.rect(
        ex - bw / 2 - 32, enc_top - 8, bw + 50, block_bottom - enc_top + 2, fill="none",
        stroke=MUTED, rx=10, dashed=True,
    )  # fmt: skip
    c.text(ex - bw / 2 - 28, block_bottom + 18, _layers(config.n_enc_layers), 13,
           anchor="start", weight="bold")  # fmt: skip
    # The memory: up, then across to the decoder's cross-attention.
    mem_y = enc_top - 44
    # Decoder: its cross-attention sits at the height the memory arrives.
    dec_items = [
        (
            ["Masked self-attention", "mask: causal ∧ padding", s["tgt_mask"]],
            FILL["attention"],
            tag["attention"],
            True,
        ),
        add_norm(),
        (
            ["Cross-attention", "mask: source padding", s["src_mask"]],
            FILL["attention"],
            tag["attention"],
            True,
        ),
        add_norm(),
        ffn(s["dec_hidden"]),
        add_norm(),
    ]
    # Heights below the cross-attention's middle: masked attention, its Add & Norm, gaps.
    below = gap + 60 + gap + 28 + gap + 30
    dec_block_bottom = mem_y + below
    dec_in = embedding_and_positions(dx, bottom, s["tgt"], "target, shifted right", "right")
    c.line([(dx, dec_in), (dx, dec_block_bottom)], arrow=False)
    c.text(dx + 6, dec_in - 16, s["tgt_embedded"], 12, anchor="start")
    dec_top, dec_mids = stack(dx, dec_block_bottom, dec_items, residual_x=dx + bw / 2 + 18)
    c.rect(
        dx - bw / 2 - 18, dec_top - 8, bw + 50, dec_block_bottom - dec_top + 2, fill="none",
        stroke=MUTED, rx=10, dashed=True,
    )  # fmt: skip
    c.text(dx + bw / 2 + 28, dec_block_bottom + 18, _layers(config.n_dec_layers), 13,
           anchor="end", weight="bold")  # fmt: skip
    cross_mid = dec_mids[2]
    c.line([(ex, enc_top), (ex, cross_mid), (dx - bw / 2, cross_mid)])
    c.text(ex + 6, enc_top - 17, f"memory {s['memory']}", 12, anchor="start")
    c.text((ex + bw / 2 + dx - bw / 2) / 2 - 10, cross_mid - 6, "keys, values", 12)
    # Output: linear tied to the embedding, then softmax.
    lin_top = dec_top - 40 - 44
    c.line([(dx, dec_top), (dx, lin_top + 44)])
    c.text(dx + 6, dec_top - 18, s["dec_out"], 12, anchor="start")
    c.box(dx - bw / 2, lin_top, bw, ["Linear: y E^T", "tied to the embedding"], FILL["linear"],
          tag=tag["model"])  # fmt: skip
    soft_top = lin_top - gap - 14 - 28
    c.line([(dx, lin_top), (dx, soft_top + 28)])
    c.text(dx + 6, lin_top - 10, f"logits {s['logits']}", 12, anchor="start")
    c.box(dx - bw / 2, soft_top, bw, ["Softmax"], FILL["softmax"])
    c.line([(dx, soft_top), (dx, soft_top - 22)])
    c.text(dx, soft_top - 28, "next-token probabilities", 13)
    legend = [
        *_sizes(config),
        "Every attention box runs H heads.",
        "Add & Norm: LayerNorm(x + sub-layer(x)).",
    ]
    c.text(20, 24, "The Transformer (post-LN, as in the paper)", 13, anchor="start", weight="bold")
    for i, line in enumerate(legend):
        c.text(20, 43 + 17 * i, line, 12, anchor="start", colour=MUTED)
    return c.render()

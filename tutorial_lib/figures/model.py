"""Figures and explorers for the whole Transformer: shape tour, masks, attention, decoding.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src source length, T_tgt
target length, D = d_model, H = n_head, d_ff feed-forward width, V vocabulary, N layers.

Every ``draw_*`` function draws on a matplotlib Figure it is given (the Explorer
contract in :mod:`tutorial_lib.figures.explorer`); nothing here calls ``pyplot``.

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

import functools
import html
import io
from dataclasses import dataclass

import PIL.Image
import torch
from matplotlib.patches import Rectangle
from torch import Tensor

from ..data import N_SPECIAL, PAD, from_text, to_text
from ..decoding import greedy_decode_cached
from ..model import Transformer, TransformerConfig, count_parameters, source_mask, target_mask
from .explorer import Explorer

__all__ = [
    "ShapeRow",
    "model_shape_trace",
    "model_shape_html",
    "draw_masks",
    "draw_trained_attention",
    "DecodingRecord",
    "record_decoding",
    "draw_decoding_step",
    "decoding_explorer",
    "token_table_html",
]


@dataclass(frozen=True)
class ShapeRow:
    part: str  # encoder, decoder, or one sub-layer of the first layer
    tensor: str  # what the tensor is
    letters: str  # its shape in the book's letters
    shape: tuple[int, ...]  # its shape, measured by running the model
    params: int | None = None  # parameters of the module that made it, where one did


_TOUR_MAX_LEN = 512


@functools.lru_cache(maxsize=16)
def _meta_model(d_model: int, n_head: int, n_layers: int, vocab: int) -> Transformer:
    """The paper's layout at the given sizes, on the meta device (shapes, no numbers)."""
    config = TransformerConfig(
        src_vocab=vocab,
        tgt_vocab=vocab,
        d_model=d_model,
        n_head=n_head,
        d_ff=4 * d_model,
        n_enc_layers=n_layers,
        n_dec_layers=n_layers,
        dropout=0.0,
        max_len=_TOUR_MAX_LEN,
    )
    with torch.device("meta"):
        return Transformer(config).eval()


def model_shape_trace(
    B: int, T_src: int, T_tgt: int, d_model: int, n_head: int, n_layers: int, vocab: int = 37000
) -> tuple[list[ShapeRow], int]:
    """Run a whole Transformer and record the shape of every sub-layer's input and output.

    The model is built on PyTorch's ``meta`` device: modules and tensors have shapes but
    no numbers, so even the paper's 63M-parameter model costs no memory and no time.
    Shapes are those of the first layer of each stack; the other N-1 layers repeat them.
    d_ff = 4D and d_k = d_v = D/H, as in the paper; embeddings shared and tied.
    Returns the rows and the model's total parameter count.
    """
    if max(T_src, T_tgt) > _TOUR_MAX_LEN:
        raise ValueError(
            f"the shape tour covers T_src, T_tgt <= {_TOUR_MAX_LEN}; got {T_src}, {T_tgt}"
        )
    # Layers 2..N repeat the shapes of layer 1, so one layer per stack is run (meta kernels are
    # slow Python); the N-layer model is only built, for its parameter count.
    model = _meta_model(d_model, n_head, 1, vocab)
    config = model.config
    with torch.device("meta"):
        src = torch.zeros(B, T_src, dtype=torch.long)  # (B, T_src)
        tgt_in = torch.zeros(B, T_tgt, dtype=torch.long)  # (B, T_tgt)
    seen: dict[str, tuple] = {}

    def keep(name):
        def hook(module, args, kwargs, output):
            seen[name] = (args, kwargs, output)

        return hook

    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    watched = {
        "enc_embed": model.encoder.embed,
        "enc_attn": enc.self_attn,
        "enc_hidden": enc.ffn.w_1,
        "enc_ffn": enc.ffn,
        "dec_embed": model.decoder.embed,
        "dec_attn": dec.self_attn,
        "cross": dec.cross_attn,
        "dec_hidden": dec.ffn.w_1,
        "dec_ffn": dec.ffn,
    }
    handles = [m.register_forward_hook(keep(n), with_kwargs=True) for n, m in watched.items()]
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        logits = model.decode(tgt_in, memory, src_mask)
    for h in handles:
        h.remove()
    tgt_mask = target_mask(tgt_in, config.pad_id)

    def n_params(module):
        return sum(p.numel() for p in module.parameters())

    def out(name, i=None):
        o = seen[name][2]
        return tuple((o if i is None else o[i]).shape)

    counts = count_parameters(_meta_model(d_model, n_head, n_layers, vocab))
    enc_part, dec_part = "encoder layer 1 of N", "decoder layer 1 of N"
    rows = [
        ShapeRow("encoder", "source tokens", "(B, T_src)", tuple(src.shape)),
        ShapeRow(
            "encoder",
            "embedding × √D + positions",
            "(B, T_src, D)",
            out("enc_embed"),
            counts["embeddings"],
        ),
        ShapeRow("encoder", "source (padding) mask", "(B, 1, T_src)", tuple(src_mask.shape)),
        ShapeRow(
            enc_part,
            "self-attention weights",
            "(B, H, T_src, T_src)",
            out("enc_attn", 1),
            n_params(enc.self_attn),
        ),
        ShapeRow(enc_part, "self-attention output", "(B, T_src, D)", out("enc_attn", 0)),
        ShapeRow(
            enc_part,
            "feed-forward hidden",
            "(B, T_src, d_ff)",
            out("enc_hidden"),
            n_params(enc.ffn),
        ),
        ShapeRow(enc_part, "feed-forward output", "(B, T_src, D)", out("enc_ffn")),
        ShapeRow("encoder", "memory (after N layers)", "(B, T_src, D)", tuple(memory.shape)),
        ShapeRow("decoder", "decoder input (shifted right)", "(B, T_tgt)", tuple(tgt_in.shape)),
        ShapeRow("decoder", "embedding × √D + positions", "(B, T_tgt, D)", out("dec_embed"), 0),
        ShapeRow(
            "decoder", "target mask (causal & padding)", "(B, T_tgt, T_tgt)", tuple(tgt_mask.shape)
        ),
        ShapeRow(
            dec_part,
            "masked self-attention weights",
            "(B, H, T_tgt, T_tgt)",
            out("dec_attn", 1),
            n_params(dec.self_attn),
        ),
        ShapeRow(dec_part, "masked self-attention output", "(B, T_tgt, D)", out("dec_attn", 0)),
        ShapeRow(
            dec_part,
            "cross-attention keys, values (= memory)",
            "(B, T_src, D)",
            tuple(seen["cross"][0][1].shape),
        ),
        ShapeRow(
            dec_part,
            "cross-attention weights",
            "(B, H, T_tgt, T_src)",
            out("cross", 1),
            n_params(dec.cross_attn),
        ),
        ShapeRow(dec_part, "cross-attention output", "(B, T_tgt, D)", out("cross", 0)),
        ShapeRow(
            dec_part,
            "feed-forward hidden",
            "(B, T_tgt, d_ff)",
            out("dec_hidden"),
            n_params(dec.ffn),
        ),
        ShapeRow(dec_part, "feed-forward output", "(B, T_tgt, D)", out("dec_ffn")),
        ShapeRow(
            "decoder",
            "logits (tied: y Eᵀ)",
            "(B, T_tgt, V)",
            tuple(logits.shape),
            counts["output projection"],
        ),
    ]
    return rows, sum(counts.values())


def model_shape_html(B: int, T_src: int, T_tgt: int, d_model: int, n_head: int, N: int) -> str:
    """The shape tour as an HTML table (an Explorer of kind "html" draws with it)."""
    rows, total = model_shape_trace(B, T_src, T_tgt, d_model, n_head, N)
    body = []
    for i, r in enumerate(rows):
        params = "" if r.params is None else f"{r.params:,}"
        where = ""
        if i == 0 or rows[i - 1].part != r.part:  # one "where" cell per run of rows
            span = next((j for j in range(i, len(rows)) if rows[j].part != r.part), len(rows)) - i
            where = f"<td rowspan={span}>{html.escape(r.part)}</td>"
        body.append(
            f"<tr>{where}<td>{html.escape(r.tensor)}</td><td><code>{html.escape(r.letters)}"
            f"</code></td><td><code>{r.shape}</code></td><td align=right>{params}</td></tr>"
        )
    weights = N * n_head * B * (T_src * T_src + T_tgt * T_tgt + T_tgt * T_src)
    caption = (
        f"B={B}, T_src={T_src}, T_tgt={T_tgt}, D={d_model}, H={n_head} (d_k={d_model // n_head}), "
        f"d_ff={4 * d_model}, N={N}, V=37,000 shared. Parameters in all: {total:,}. "
        f"Attention weights per forward pass: {weights:,}."
    )
    return (
        '<table class="shape-trace" style="font-size:0.85em;border-collapse:collapse">'
        f"<caption style='caption-side:top;text-align:left'>{caption}</caption>"
        "<thead><tr><th>where</th><th>tensor</th><th>letters</th><th>shape</th>"
        "<th>parameters</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _labels(tokens: Tensor) -> list[str]:
    return to_text(tokens).split(" ")


def draw_masks(fig, src: Tensor, tgt_in: Tensor, pad_id: int = PAD):
    """The three masks of one example: src (T_src,) and decoder input tgt_in (T_tgt,) token ids.

    Encoder self-attention and cross-attention use the source's padding mask; the decoder's
    self-attention uses causal AND padding. Dark = masked (False), light = may attend (True).
    """
    src, tgt_in = src[None], tgt_in[None]  # (1, T_src), (1, T_tgt)
    T_src, T_tgt = src.shape[1], tgt_in.shape[1]
    panels = [
        ("encoder self-attention\n(padding)", source_mask(src, pad_id).expand(1, T_src, T_src)),
        ("decoder self-attention\n(causal & padding)", target_mask(tgt_in, pad_id)),
        ("cross-attention\n(source padding)", source_mask(src, pad_id).expand(1, T_tgt, T_src)),
    ]
    rows = [_labels(src[0]), _labels(tgt_in[0]), _labels(tgt_in[0])]
    cols = [_labels(src[0]), _labels(tgt_in[0]), _labels(src[0])]
    axes = fig.subplots(1, 3, gridspec_kw={"wspace": 0.5})
    for ax, (title, mask), r, c in zip(axes, panels, rows, cols, strict=True):
        ax.imshow(mask[0].float().numpy(), cmap="Greys_r", vmin=-0.3, vmax=1.0)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(c)), c, fontsize=7)
        ax.set_yticks(range(len(r)), r, fontsize=7)
        ax.set_xlabel("key (what is read)", fontsize=8)
        ax.set_ylabel("query (who reads)", fontsize=8)
    return axes


def draw_trained_attention(fig, model: Transformer, src: Tensor, tgt_in: Tensor, layer: int = 0):
    """Head-averaged attention of one example (src (T_src,), tgt_in (T_tgt,)) after a forward.

    Three panels: encoder self-attention, decoder self-attention, cross-attention.
    """
    with torch.no_grad():
        model.eval()
        model(src[None], tgt_in[None])
    maps = [
        ("encoder self-attention", model.attention["encoder"][layer], src, src),
        ("decoder self-attention", model.attention["decoder_self"][layer], tgt_in, tgt_in),
        ("cross-attention", model.attention["cross"][layer], tgt_in, src),
    ]
    axes = fig.subplots(1, 3, gridspec_kw={"wspace": 0.4})
    image = None
    for ax, (title, w, rows, cols) in zip(axes, maps, strict=True):
        image = ax.imshow(w[0].mean(0).numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(cols)), _labels(cols), fontsize=6)
        ax.set_yticks(range(len(rows)), _labels(rows), fontsize=6)
        ax.set_xlabel("key", fontsize=8)
        ax.set_ylabel("query", fontsize=8)
    fig.colorbar(image, ax=list(axes), shrink=0.7, label="weight (mean over heads)")
    return axes


@dataclass
class DecodingRecord:
    """One greedy decoding, kept for drawing: source (T_src,), output tokens (T_out,),
    next-token probabilities (T_out, V), cross-attention of the last layer averaged over
    heads (T_out, T_src)."""

    source: Tensor
    tokens: Tensor
    probs: Tensor
    cross: Tensor


def record_decoding(model: Transformer, text: str, max_len: int | None = None) -> DecodingRecord:
    """Decode one typed input such as "3 1 4 1 5" greedily, with the KV cache."""
    src = from_text(text, model.config.src_vocab - N_SPECIAL)  # (1, T_src)
    max_len = src.shape[1] + 1 if max_len is None else max_len
    out = greedy_decode_cached(model, src, max_len)
    T_out = out.logits.shape[1]
    cross = torch.stack([step[-1][0].mean(0) for step in out.cross])  # (T_out, T_src)
    probs = out.logits[0].softmax(-1)  # (T_out, V)
    return DecodingRecord(src[0], out.tokens[0, :T_out], probs, cross)


def _label_axis(ax, labels: list[str], axis: str) -> None:
    """Tick labels as plain text: a matplotlib Tick (two lines, two texts) costs ~5 ms each."""
    for i, label in enumerate(labels):
        if axis == "x":
            ax.text(
                i,
                -0.02,
                label,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="top",
                fontsize=7,
            )
        else:
            ax.text(
                -0.01,
                i,
                label,
                transform=ax.get_yaxis_transform(),
                ha="right",
                va="center",
                fontsize=7,
            )


def draw_decoding_step(fig, record: DecodingRecord, step: int):
    """Step ``step`` (1-based) of a greedy decoding: what cross-attention read, what came out.

    Few text objects on purpose: each costs about a millisecond to draw, and a live
    explorer redraws the whole frame on every move.
    """
    T_out, T_src = record.cross.shape
    step = min(step, T_out)
    shown = torch.full((T_out, T_src), float("nan"))
    shown[:step] = record.cross[:step]
    ax = fig.add_axes((0.08, 0.14, 0.52, 0.6))
    ax.imshow(shown.numpy(), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    # Outline the row of this step (the query being answered now) and name what it wrote.
    ax.add_patch(
        Rectangle((-0.5, step - 1.5), T_src, 1, fill=False, edgecolor="#D55E00", linewidth=1.5)
    )
    ax.text(
        T_src - 0.3,
        step - 1,
        "→ " + _labels(record.tokens[step - 1 : step])[0],
        color="#D55E00",
        fontsize=8,
        va="center",
    )
    ax.set_xticks([])
    ax.set_yticks([0, T_out - 1], ["1", str(T_out)], fontsize=7)
    _label_axis(ax, _labels(record.source), "x")
    ax.set_xlabel("source token (key)", fontsize=8, labelpad=11)
    ax.set_ylabel("decoding step (query)", fontsize=8)
    ax.set_title("cross-attention, mean over heads", fontsize=9)
    p = record.probs[step - 1]  # (V,)
    top = p.topk(3)
    lines = [f"step {step}, next token:"] + [
        f"{_labels(token[None])[0]:>4}  p={prob.item():.3f}{'  <- greedy' if rank == 0 else ''}"
        for rank, (prob, token) in enumerate(zip(top.values, top.indices, strict=True))
    ]
    fig.text(0.66, 0.7, "\n".join(lines), fontsize=8, va="top", family="monospace")
    fig.text(0.01, 0.96, f"output so far: {to_text(record.tokens[:step])}", fontsize=9, va="top")


class _PalettePNGExplorer(Explorer):
    """An Explorer whose frames *in the static page* use a 64-colour palette.

    The page carries every frame, so their bytes are its weight: a palette PNG of these
    figures is a third of the size and looks the same. Live redraws skip the conversion.
    """

    def _frame_source(self, frame: bytes) -> str:
        image = PIL.Image.open(io.BytesIO(frame)).convert("RGB").quantize(colors=64)
        buffer = io.BytesIO()
        image.save(buffer, format="png")
        return super()._frame_source(buffer.getvalue())


def decoding_explorer(model: Transformer, inputs: list[str]) -> Explorer:
    """An Explorer over typed inputs x decoding steps. Add your own strings to ``inputs``."""
    records = {text: record_decoding(model, text) for text in inputs}
    n_steps = max(r.cross.shape[0] for r in records.values())

    def draw(fig, input, step):  # noqa: A002 - the control is labelled "input"
        draw_decoding_step(fig, records[input], step)

    return _PalettePNGExplorer(
        draw,
        {"input": list(inputs), "step": list(range(1, n_steps + 1))},
        kind="figure",
        figsize=(7.5, 3.0),
        title="Greedy decoding, one step at a time",
        alt="cross-attention map filling in row by row, and the most likely next tokens",
    )


def token_table_html(columns: dict[str, list[str]], marked: dict[str, list[bool]] | None = None):
    """A small table, one column per list; cells where ``marked[column]`` is True are bold."""
    marked = marked or {}
    n = max(len(v) for v in columns.values())
    head = "".join(f"<th>{html.escape(k)}</th>" for k in columns)
    rows = []
    for i in range(n):
        cells = []
        for name, values in columns.items():
            text = html.escape(values[i]) if i < len(values) else ""
            if marked.get(name, [False] * n)[i]:
                text = f"<b style='color:#D55E00'>{text}</b>"
            cells.append(f"<td style='text-align:center'>{text}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        "<table style='font-size:0.85em;border-collapse:collapse'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )

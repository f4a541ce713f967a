"""The shape tour of chapter Q5: every tensor the whole Transformer makes, in the book's
letters, with the parameters of the module that made it, for any sizes (the model is built on
the meta device, so the paper's base model costs no memory).

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src source length, T_tgt
target length, D = d_model, H = n_head, d_ff feed-forward width, V vocabulary, N layers.
"""

from __future__ import annotations

import functools
import html
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..model import Transformer, TransformerConfig, count_parameters
from ..norms import LayerNorm, RMSNorm
from .common import INK, code_html
from .trace import letters_of, shape_of

__all__ = ["ShapeRow", "model_shape_trace", "model_shape_html"]


@dataclass(frozen=True)
class ShapeRow:
    part: str  # encoder, decoder, or one sub-layer of the first layer
    tensor: str  # what the tensor is
    letters: str  # its shape in the book's letters
    shape: tuple[int, ...]  # its shape, measured by running the model
    params: int | None = None  # parameters of the module that made it (norms aside)


_TOUR_MAX_LEN = 512
# Probe sizes: one size per letter that no other letter or product of two has, so each
# traced size names its letter. d_ff = 4D and V are letters of their own.
_PROBE = {"B": 2, "T_src": 3, "T_tgt": 5, "H": 7, "d_k": 4, "D": 28, "d_ff": 112, "V": 13}

# What the tour shows, in the order the model makes it: (module path, "in" for its inputs or
# "out" for its outputs, a name per tensor (None: not shown), whether the row carries the
# module's parameter count). Shapes come from running the model with hooks on these modules.
_ENC, _DEC = "encoder layer 1 of N", "decoder layer 1 of N"
_TOUR = [
    ("encoder", "in", "encoder", ["source tokens", "source (padding) mask"], False),
    ("encoder.embed", "out", "encoder", ["embedding × √D + positions"], True),
    ("encoder.layers.0.self_attention", "out", _ENC,
     ["self-attention output", "self-attention weights"], True),
    ("encoder.layers.0.ffn.w_1", "out", _ENC, ["feed-forward hidden"], False),
    ("encoder.layers.0.ffn", "out", _ENC, ["feed-forward output"], True),
    ("encoder", "out", "encoder", ["memory (after N layers)", None], False),
    ("decoder", "in", "decoder",
     ["decoder input (shifted right)", None, "target mask (causal & padding)", None], False),
    ("decoder.embed", "out", "decoder", ["embedding × √D + positions"], True),
    ("decoder.layers.0.self_attention", "out", _DEC,
     ["masked self-attention output", "masked self-attention weights"], True),
    ("decoder.layers.0.cross_attention", "in", _DEC,
     [None, "cross-attention keys, values (= memory)", None], False),
    ("decoder.layers.0.cross_attention", "out", _DEC,
     ["cross-attention output", "cross-attention weights"], True),
    ("decoder.layers.0.ffn.w_1", "out", _DEC, ["feed-forward hidden"], False),
    ("decoder.layers.0.ffn", "out", _DEC, ["feed-forward output"], True),
    ("decoder", "out", "decoder", ["logits (tied: y Eᵀ)", None, None], False),
]  # fmt: skip


def _config(d_model: int, n_head: int, n_layers: int, vocab: int) -> TransformerConfig:
    return TransformerConfig(
        src_vocab=vocab, tgt_vocab=vocab, d_model=d_model, n_head=n_head, d_ff=4 * d_model,
        n_enc_layers=n_layers, n_dec_layers=n_layers, dropout=0.0, max_len=_TOUR_MAX_LEN,
    )  # fmt: skip


@functools.cache
def _probe_rows() -> tuple[tuple[str, str, str, str], ...]:
    """Run the model once at probe sizes with hooks on the watched modules.

    Returns (module path, part, tensor name, letters) per shown tensor, in the order
    the model made them (hooks fire as the forward pass reaches each module).
    """
    p = _PROBE
    # Tiny and on the CPU (a first forward pass on the meta device costs seconds of set-up).
    model = Transformer(_config(p["D"], p["H"], 1, p["V"])).eval()
    src = torch.zeros(p["B"], p["T_src"], dtype=torch.long)  # (B, T_src)
    tgt_in = torch.zeros(p["B"], p["T_tgt"], dtype=torch.long)  # (B, T_tgt)
    modules = dict(model.named_modules())
    rows: list[tuple[str, str, str, str]] = []

    def record(path, side, part, names):
        def hook(module, args, kwargs, *output):
            tensors = args + tuple(kwargs.values()) if side == "in" else output[0]
            tensors = tensors if isinstance(tensors, tuple) else (tensors,)
            for name, t in zip(names, tensors, strict=False):
                if name is not None and isinstance(t, Tensor):
                    rows.append((path, part, name, letters_of(tuple(t.shape), p)))

        return hook

    handles = []
    for path, side, part, names, _ in _TOUR:
        module, hook = modules[path], record(path, side, part, names)
        if side == "in":
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
        else:
            handles.append(module.register_forward_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            model(src, tgt_in)
    finally:
        for h in handles:
            h.remove()
    return tuple(rows)


_NORMS = (nn.LayerNorm, LayerNorm, RMSNorm)


@functools.lru_cache(maxsize=8)
def _parameter_counts(d_model: int, n_head: int, vocab: int) -> dict[str, int]:
    """Parameters of each watched module and of one layer of each stack, at these sizes.

    A shared tensor counts once, in the first module that holds it (the decoder's embedding
    shares the encoder's table, so it shows 0), as ``named_parameters`` lists it. A row
    counts its module's weights without any norm inside it, so an attention row reads
    4D^2 wherever the layer keeps that sub-layer's LayerNorm; the totals count every norm.
    """
    with torch.device("meta"):
        model = Transformer(_config(d_model, n_head, 1, vocab))
    named = list(model.named_parameters())  # each shared tensor once
    norm_ids = {id(p) for m in model.modules() if isinstance(m, _NORMS) for p in m.parameters()}

    def under(prefix, norms=True):
        return sum(
            p.numel()
            for name, p in named
            if name.startswith(prefix + ".") and (norms or id(p) not in norm_ids)
        )

    counts = {path: under(path, norms=False) for path, *_ in _TOUR}
    counts["encoder layer"] = under("encoder.layers.0")
    counts["decoder layer"] = under("decoder.layers.0")
    counts["rest"] = sum(p.numel() for _, p in named) - counts["encoder layer"]
    counts["rest"] -= counts["decoder layer"]
    counts["output projection"] = count_parameters(model)["output projection"]
    return counts


def model_shape_trace(
    B: int, T_src: int, T_tgt: int, d_model: int, n_head: int, n_layers: int, vocab: int = 37000
) -> tuple[list[ShapeRow], int]:
    """Every sub-layer's input and output shape in the first layer of each stack, and the total
    parameter count of the N-layer model.

    The rows are what forward hooks on the model's own modules record in one run at tiny probe
    sizes, where every letter has its own size; each frame's shapes are those letters at the
    asked sizes, which equal a direct run's (the tests check). Parameter counts are read from
    the modules of a model built at the asked sizes on PyTorch's ``meta`` device (shapes, no
    numbers, so even the paper's 63M-parameter model costs no memory). d_ff = 4D,
    d_k = d_v = D/H, as in the paper; embeddings shared and tied.
    """
    if max(T_src, T_tgt) > _TOUR_MAX_LEN:
        raise ValueError(
            f"the shape tour covers T_src, T_tgt <= {_TOUR_MAX_LEN}; got {T_src}, {T_tgt}"
        )
    if d_model % n_head:
        raise ValueError(f"D = d_model must be divisible by H = n_head; got {d_model}, {n_head}")
    sizes = {"B": B, "T_src": T_src, "T_tgt": T_tgt, "H": n_head, "d_k": d_model // n_head,
             "D": d_model, "d_ff": 4 * d_model, "V": vocab}  # fmt: skip
    counts = _parameter_counts(d_model, n_head, vocab)
    # A module's parameters go on one row: the first tensor it outputs.
    carriers = {
        path: next(name for name in names if name)
        for path, side, _, names, carries in _TOUR
        if carries and side == "out"
    }
    rows, shown = [], set()
    for path, part, name, letters in _probe_rows():
        params = None
        if carriers.get(path) == name and path not in shown:
            params = counts[path]
            shown.add(path)
        if name.startswith("logits"):
            params = counts["output projection"]
        rows.append(ShapeRow(part, name, letters, shape_of(letters, sizes), params))
    total = counts["rest"] + n_layers * (counts["encoder layer"] + counts["decoder layer"])
    return rows, total


def model_shape_html(B: int, T_src: int, T_tgt: int, d_model: int, n_head: int, N: int) -> str:
    """The shape tour as an HTML table (an Explorer of kind "html" draws with it)."""
    rows, total = model_shape_trace(B, T_src, T_tgt, d_model, n_head, N)
    body = []
    for i, r in enumerate(rows):
        params = "" if r.params is None else f"{r.params:,}"
        where = ""
        if i == 0 or rows[i - 1].part != r.part:  # one "where" cell per run of rows
            span = next((j for j in range(i, len(rows)) if rows[j].part != r.part), len(rows)) - i
            where = f'<td rowspan="{span}" style="vertical-align:top">{html.escape(r.part)}</td>'
        body.append(
            f"<tr>{where}<td>{html.escape(r.tensor)}</td>"
            f"<td>{code_html(r.letters)}</td><td>{code_html(str(r.shape))}</td>"
            f'<td style="text-align:right">{params}</td></tr>'
        )
    weights = N * n_head * B * (T_src * T_src + T_tgt * T_tgt + T_tgt * T_src)
    caption = (
        f"B={B}, T_src={T_src}, T_tgt={T_tgt}, D={d_model}, H={n_head} (d_k={d_model // n_head}), "
        f"d_ff={4 * d_model}, N={N}, V=37,000 shared. Parameters in all, LayerNorms included: "
        f"{total:,}. "
        f"Attention weights per forward pass: {weights:,}."
    )
    return (
        f'<table class="shape-trace" style="font-size:14px;border-collapse:collapse;color:{INK}">'
        f'<caption style="caption-side:top;text-align:left;color:{INK}">{html.escape(caption)}'
        "</caption><thead><tr><th>where</th><th>tensor</th><th>letters</th><th>shape</th>"
        '<th style="text-align:right">parameters</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )

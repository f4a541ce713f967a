"""Chapter Q5's decoding explorer: greedy decoding one step at a time, and what it read.

Dimension letters as in :mod:`tutorial_lib.model`: T_src source length, T_out output
length, V vocabulary. Importable from :mod:`tutorial_lib.figures.model` too.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import torch
from torch import Tensor

from ..data import N_SPECIAL, from_text, to_text
from ..decoding import greedy_decode_cached
from ..model import Transformer
from .common import INK, MUTED, matrix_png
from .explorer import Explorer
from .svg import Panel, key, row

__all__ = ["DecodingRecord", "record_decoding", "draw_decoding_step", "decoding_explorer"]

_STEP_COLOUR = "#D55E00"  # the outline of the step being taken
_STEP_TEXT = "#B34700"  # the same orange, darker: 5.2:1 on white, for text


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


def _labels(tokens: Tensor) -> list[str]:
    return to_text(tokens).split(" ")


def draw_decoding_step(record: DecodingRecord, step: int) -> str:
    """Step ``step`` (1-based) of a greedy decoding as HTML: what cross-attention read, what
    came out. Rows of steps not taken yet are grey; the step being taken is outlined."""
    T_out, T_src = record.cross.shape
    asked, step = step, min(max(step, 1), T_out)
    shown = torch.full((T_out, T_src), float("nan"))
    shown[:step] = record.cross[:step]

    # Cells sized so that the panel fits a phone's 340 px column for inputs up to 17 tokens.
    cell = max(12, min(22, 240 // max(T_src, T_out)))
    panel = Panel(
        48 + cell * T_src + 62, 48 + cell * T_out + 44, xlim=(-0.5, T_src - 0.5),
        ylim=(T_out - 0.5, -0.5), title="cross-attention, mean over heads",
        xlabel="source token (key)", ylabel="decoding step (query)", margins=(48, 24, 62, 44),
    )  # fmt: skip
    panel.image(matrix_png(shown.numpy(), "viridis", 0.0, 1.0))
    panel.rect(-0.5, step - 1.5, T_src - 0.5, step - 0.5, stroke=_STEP_COLOUR, width=2.5)
    panel.xticks(range(T_src), _labels(record.source))
    steps = sorted({0, step - 1, T_out - 1})
    panel.yticks(steps, [str(s + 1) for s in steps])
    panel.colourbar("viridis", 0.0, 1.0, [0, 0.5, 1], "weight")

    p = record.probs[step - 1]  # (V,)
    top = p.topk(3)
    rows = "".join(
        f"<tr><td style='padding:1px 10px 1px 0;text-align:right'><b>{html.escape(tok)}</b></td>"
        f"<td style='text-align:right'>{prob:.3f}</td>"
        f"<td style='padding-left:8px;color:{_STEP_TEXT}'>{'← greedy' if rank == 0 else ''}"
        "</td></tr>"
        for rank, (tok, prob) in enumerate(
            zip(_labels(top.indices), top.values.tolist(), strict=True)
        )
    )
    heading = (
        f"<b>step {step} of {T_out}</b>"
        if asked == step
        else f"<b>step {asked}: this input stopped after {T_out} steps</b> (showing step {T_out})"
    )
    side = (
        f'<div style="font-size:14px;color:{INK};min-width:12em;max-width:20em">'
        f"<div>{heading}</div>"
        f'<div style="margin:4px 0">output so far: <span style="font-family:monospace">'
        f"{html.escape(to_text(record.tokens[:step]))}</span></div>"
        "<div>the most likely tokens at this step:</div>"
        '<table style="border-collapse:collapse;font-size:14px"><tr>'
        f'<th style="text-align:right;padding-right:10px">token</th><th>p</th><th></th></tr>'
        f"{rows}</table></div>"
    )
    legend = key(
        [
            ("the step being taken", _STEP_COLOUR, "line"),
            ("steps not taken yet", "#d7d7d7", "box"),
        ]
    )
    source = html.escape(to_text(record.source))
    note = f'<div style="font-size:13px;color:{MUTED}">source: {source}</div>'
    return row(panel.svg(), side) + legend + note


def decoding_explorer(model: Transformer, inputs: list[str]) -> Explorer:
    """An Explorer over typed inputs x decoding steps. Add your own strings to ``inputs``."""
    records = {text: record_decoding(model, text) for text in inputs}
    n_steps = max(r.cross.shape[0] for r in records.values())

    def draw(input, step):  # noqa: A002 - the control is labelled "input"
        return draw_decoding_step(records[input], step)

    return Explorer(
        draw,
        {"input": list(inputs), "step": list(range(1, n_steps + 1))},
        kind="html",
        title="Greedy decoding, one step at a time",
    )

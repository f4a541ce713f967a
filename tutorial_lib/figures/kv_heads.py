"""Figures and the explorer of chapter Q6: accuracy against the bytes a cache keeps per token,
the learning curves, uptraining, and the table of published cache sizes.

Letters as in :mod:`tutorial_lib.labs.kv_heads` (H, H_kv, d_k, d_c, d_R). Every drawing reads
the chapter's trained runs, a dict from :class:`~tutorial_lib.labs.kv_heads.KVSpec` to
:class:`~tutorial_lib.labs.kv_heads.Run`; the explorer's frames are SVG (a few kB each).
"""

from __future__ import annotations

import html

from ..labs.kv_heads import D_ROPE, HEADS, WIDTH, KVSpec, Run, cache_numbers
from .common import HEAD_COLOURS, INK, MUTED, html_table
from .explorer import Explorer
from .svg import Panel, key, row

__all__ = [
    "BYTES",
    "COLOURS",
    "VARIANT_COLOURS",
    "cache_explorer",
    "cache_frame_html",
    "draw_curves",
    "draw_uptraining",
    "table_html",
]

BYTES = 4  # float32, what the chapter's models keep
COLOURS = {"grouped": HEAD_COLOURS[0], "latent": HEAD_COLOURS[5]}  # blue, vermilion
LIGHT = {"grouped": "#a6cee3", "latent": "#fdbf8f"}  # the same hues, light enough for dark text


def _family(spec: KVSpec) -> str:
    return "latent" if spec.d_c is not None else "grouped"


def _mean(run: Run) -> float:
    return 100 * run.accuracy.mean().item()


def cache_frame_html(runs: dict[KVSpec, Run], n_kv_head: int, d_c: int) -> str:
    """Two panels: every variant's accuracy against its cache bytes per token (the chosen GQA
    and MLA ringed), and what those two, and MHA, keep per token, part by part."""
    chosen = [KVSpec(n_kv_head=n_kv_head), KVSpec(d_c=d_c)]
    mha = KVSpec(n_kv_head=HEADS)
    xmax = BYTES * cache_numbers(mha) * 1.1
    plot = Panel(
        320, 240, xlim=(0, xmax), ylim=(0, 100), title="accuracy against cache",
        xlabel="cache per token and layer (bytes)", ylabel="test digits right (%)",
    )  # fmt: skip
    for family in ("grouped", "latent"):
        specs = sorted((s for s in runs if _family(s) == family), key=cache_numbers)
        xs = [BYTES * cache_numbers(s) for s in specs]
        plot.line(xs, [_mean(runs[s]) for s in specs], COLOURS[family], 1.4)
        for spec, x in zip(specs, xs, strict=True):
            lo, hi = (100 * v.item() for v in runs[spec].accuracy.aminmax())  # over the seeds
            plot.line([x, x], [lo, hi], COLOURS[family], 1.2)
        plot.dots(xs, [_mean(runs[s]) for s in specs], COLOURS[family], 3.2)
    for spec in chosen:
        x, y = BYTES * cache_numbers(spec), _mean(runs[spec])
        plot.marks.append(
            f'<circle cx="{plot.x(x):.1f}" cy="{plot.y(y):.1f}" r="8" fill="none" '
            f'stroke="{INK}" stroke-width="1.6"/>'
        )
        plot.text(x, y, spec.name.split(",")[0], anchor="middle", dy=-12)
    plot.hline(10, MUTED, "2,3", 1.0)
    plot.text(xmax * 0.98, 10, "chance", colour=MUTED, anchor="end", dy=-4)
    plot.xticks([0, 64, 128, 192, 256])
    plot.yticks([0, 25, 50, 75, 100])

    d_k = WIDTH // HEADS
    parts = [  # (label, [(part, numbers)], family)
        ("MHA", [("k", HEADS * d_k), ("v", HEADS * d_k)], "grouped"),
        (chosen[0].name.split(",")[0], [("k", n_kv_head * d_k), ("v", n_kv_head * d_k)],
         "grouped"),
        ("MLA", [("c", d_c), ("kᴿ", D_ROPE)], "latent"),
    ]  # fmt: skip
    bars = Panel(
        300, 240, xlim=(0, xmax), ylim=(len(parts) - 0.4, -0.6), title="what one token keeps",
        xlabel="bytes per token and layer", margins=(52, 26, 12, 42),
    )  # fmt: skip
    for i, (label, pieces, family) in enumerate(parts):
        start = 0.0
        for j, (piece, n) in enumerate(pieces):
            width = BYTES * n
            # Dark letters on light fills: readable in either page theme (the frame is white).
            fill = LIGHT[family] if j == 0 else "#dddddd"
            bars.rect(start, i - 0.3, start + width, i + 0.3, fill=fill, stroke=INK, width=0.6)
            if width >= 16:  # room for the letter inside the bar
                bars.text(start + width / 2, i, piece, anchor="middle")
            start += width
        bars.text(start + 4, i, f"{start:.0f}")
        bars.labels.append(
            f'<text x="{bars.left - 6}" y="{bars.y(i) + 4:.1f}" text-anchor="end">'
            f"{html.escape(label)}</text>"
        )
    bars.xticks([0, 64, 128, 192, 256])
    gqa, mla = chosen
    # The chosen grouping, the chosen latent and, unless the grouping is MHA itself, MHA.
    shown = [gqa, mla] if gqa == mha else [gqa, mla, mha]
    caption = "; ".join(
        f"{s.name}: {BYTES * cache_numbers(s)} bytes, {_mean(runs[s]):.0f}% right" for s in shown
    ) + (
        f" (means over {len(runs[mha].accuracy)} seeds; vertical bars: the worst and the best "
        "seed)."
    )
    legend = key([("grouped-query (MHA, GQA, MQA)", COLOURS["grouped"], "line"),
                  ("latent (MLA)", COLOURS["latent"], "line")])  # fmt: skip
    return row(plot.svg(), bars.svg()) + legend + row(caption=caption)


def cache_explorer(runs: dict[KVSpec, Run]) -> Explorer:
    """Chapter Q6's explorer: n_kv_head and d_c over the trained variants (HTML frames)."""
    n_kv = sorted(s.n_kv_head for s in runs if s.d_c is None)
    d_c = sorted(s.d_c for s in runs if s.d_c is not None)
    return Explorer(
        lambda n_kv_head, d_c: cache_frame_html(runs, n_kv_head, d_c),
        {"n_kv_head": n_kv, "d_c": d_c},
        kind="html",
        initial={"n_kv_head": n_kv[len(n_kv) // 2], "d_c": d_c[len(d_c) // 2]},
        title="Cache explorer: what each token keeps, and the accuracy measured with it",
    )


# One colour per variant: blues for the grouped family, warm colours for the latent one.
VARIANT_COLOURS = {
    "MHA": HEAD_COLOURS[0],
    "GQA, 2 kv heads": HEAD_COLOURS[4],
    "MQA": HEAD_COLOURS[2],
    "MLA, d_c = 8": HEAD_COLOURS[3],
    "MLA, d_c = 16": HEAD_COLOURS[1],
    "MLA, d_c = 32": HEAD_COLOURS[5],
}


def _band(ax, run: Run, colour: str, label: str, style: str = "-", width: float = 1.8) -> None:
    """A run's mean test accuracy per evaluated step, and the band from its worst to best seed."""
    steps = sorted(run.curve)
    acc = [100 * run.curve[s] for s in steps]
    ax.plot(steps, [a.mean().item() for a in acc], style, color=colour, lw=width, label=label)
    ax.fill_between(steps, [a.min().item() for a in acc], [a.max().item() for a in acc],
                    color=colour, alpha=0.13, lw=0)  # fmt: skip


def draw_curves(fig, runs: dict[KVSpec, Run]) -> None:
    """Test accuracy against training steps, every variant: the mean over seeds, and the band
    between the worst and best seed; grouped variants solid, latent ones dashed."""
    fig.set_layout_engine("constrained")
    ax = fig.subplots()
    for spec, run in runs.items():
        style = "--" if spec.d_c is not None else "-"
        _band(ax, run, VARIANT_COLOURS.get(spec.name, INK), spec.name, style)
    ax.axhline(10, color=MUTED, ls=":", lw=1)
    last = max(max(run.curve) for run in runs.values())
    ax.text(last, 11, "chance", color=MUTED, ha="right", va="bottom")
    ax.set_xlabel("training steps")
    ax.set_ylabel("test digits right (%)")
    ax.set_ylim(0, 100)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over


def draw_uptraining(fig, runs: dict[KVSpec, Run], uptrained: Run, pooled_from: int) -> None:
    """A multi-head model mean-pooled into ``pooled_from`` key/value heads and trained on,
    against the grouped variant trained from scratch; MHA's final accuracy dotted."""
    fig.set_layout_engine("constrained")
    ax = fig.subplots()
    gqa = runs[KVSpec(n_kv_head=pooled_from)]
    _band(ax, gqa, VARIANT_COLOURS.get(gqa.spec.name, HEAD_COLOURS[4]), "from scratch")
    _band(ax, uptrained, INK, "pooled from MHA, then trained")
    mha = runs[KVSpec(n_kv_head=HEADS)]
    ax.axhline(_mean(mha), color=HEAD_COLOURS[0], ls=":", lw=1.4)
    ax.text(max(gqa.curve), _mean(mha) + 1.5, "MHA after its training", ha="right",
            va="bottom", color=HEAD_COLOURS[0])  # fmt: skip
    ax.set_xlabel(f"steps of training with {pooled_from} key/value heads")
    ax.set_ylabel("test digits right (%)")
    ax.set_ylim(0, 100)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def table_html(header: list[str], rows: list[list[str]]) -> str:
    """A table in its own sideways-scrolling box, so that a phone's 375 px never overflows."""
    align = ["left"] + ["right"] * (len(header) - 1)
    return f'<div style="overflow-x:auto">{html_table(header, rows, align=align)}</div>'

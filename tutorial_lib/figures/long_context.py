"""Figures and the explorer of chapter Q7 (reading past the training length).

Dimension letters as in :mod:`tutorial_lib.positional`: d = d_k, so d/2 pairs; L the training
length; s the scale factor.

The explorer draws HTML frames (SVG panels, :mod:`tutorial_lib.figures.svg`); the static
figures are matplotlib drawing functions that take a ``fig`` and never call ``pyplot``.
"""

from __future__ import annotations

import math

from .. import positional
from ..positional import rotations_within, scaled_frequencies, sinusoidal_frequencies
from .common import HEAD_COLOURS, INK, MUTED, html_table
from .explorer import Explorer
from .svg import Panel, key, row

__all__ = [
    "METHOD_COLOURS",
    "SETTINGS",
    "pairs_html",
    "pairs_explorer",
    "draw_accuracy",
    "draw_pair_leads",
    "draw_distance_profile",
    "draw_entropy",
    "accuracy_table_html",
]

# One colour per method, the same in every figure of the chapter.
METHOD_COLOURS = {
    "rope": "#000000",
    "interpolation": HEAD_COLOURS[1],
    "ntk": HEAD_COLOURS[4],
    "ntk-dynamic": HEAD_COLOURS[4],
    "yarn": HEAD_COLOURS[0],
    "by-parts": HEAD_COLOURS[2],
    "logn": HEAD_COLOURS[3],
    "rerope": HEAD_COLOURS[5],
    "leaky-rerope": "#999999",
}
# The explorer's two settings: (d_k, L). LLaMA 2 7B: 128-wide heads, 4096 positions, base 10000.
SETTINGS = {"this chapter (d_k 16, L 256)": (16, 256), "LLaMA 2 7B (d_k 128, L 4096)": (128, 4096)}
_PAIRS_SHOWN = ("rope", "interpolation", "ntk", "yarn")


def _label(method: str) -> str:
    return positional.variant(method).label


def pairs_html(scale: int, setting: str, base: float = 10000.0) -> str:
    """Two SVG panels for one scale factor s and one setting: each pair's wavelength against L
    and s * L, and what each method multiplies each pair's frequency by."""
    d, L = SETTINGS[setting]
    theta = sinusoidal_frequencies(d, base)  # (d/2,)
    wavelength = (2 * math.pi / theta).tolist()
    turns = rotations_within(L, theta).tolist()  # YaRN's r: turns within L
    pairs = list(range(d // 2))

    waves = Panel(
        300, 230, xlim=(-0.5, d // 2 - 0.5), ylim=(1, 1e5), logy=True,
        title="each pair's wavelength", xlabel="pair l", ylabel="positions (log)",
        margins=(52, 26, 40, 42),
    )  # fmt: skip
    waves.hline(L, INK, "4,3")
    waves.text(d // 2 - 0.5, L, "L", colour=INK, dy=4)
    if scale > 1:
        waves.hline(scale * L, MUTED, "2,2")
        waves.text(d // 2 - 0.5, scale * L, "sL", colour=MUTED, dy=4)
    slow = [w > L for w in wavelength]
    waves.dots([p for p, s in zip(pairs, slow, strict=True) if not s],
               [w for w, s in zip(wavelength, slow, strict=True) if not s], INK, 2.6)  # fmt: skip
    waves.dots([p for p, s in zip(pairs, slow, strict=True) if s],
               [w for w, s in zip(wavelength, slow, strict=True) if s], "#D55E00", 2.6)  # fmt: skip
    waves.xticks([0, d // 4, d // 2 - 1])
    waves.yticks([10, 100, 1e3, 1e4, 1e5], ["10", "100", "10³", "10⁴", "10⁵"])

    factor = Panel(
        330, 230, xlim=(max(min(turns) / 2, 1e-3), max(turns) * 2), ylim=(1 / 64, 1.6),
        logx=True, logy=True, title="frequency kept, per pair", xlabel="turns within L (log)",
        ylabel="new / old frequency", margins=(56, 26, 12, 42),
    )  # fmt: skip
    factor.span(factor.xlim[0], 1.0, "#D55E00", 0.08)  # slow pairs: never a full turn in L
    for r in (1.0, 32.0):  # YaRN's alpha and beta
        factor.vline(r, MUTED, "2,2")
    factor.hline(1.0, INK, None, 0.8)
    if scale > 1:
        factor.hline(1 / scale, INK, "4,3")
    for i, method in enumerate(_PAIRS_SHOWN):
        scaling = "yarn" if method == "yarn" else method
        new = scaled_frequencies(scaling, d, scale, L, base) / theta
        # Methods that coincide draw on top of each other: offset each a hair to keep all seen.
        shift = 1 + 0.04 * (i - 1.5)
        factor.line(turns, [v * shift for v in new.tolist()], METHOD_COLOURS[method], 1.6)
        factor.dots(turns, [v * shift for v in new.tolist()], METHOD_COLOURS[method], 2.2)
    factor.text(1.0, 1 / 64, "α", colour=MUTED, anchor="end", dy=-5)
    factor.text(32.0, 1 / 64, "β", colour=MUTED, anchor="end", dy=-5)
    factor.text(factor.xlim[0] * 1.3, 1 / 40, "slow pairs", colour="#A04000", dy=0)
    factor.xticks([t for t in (0.01, 0.1, 1, 10, 100) if factor.xlim[0] <= t <= factor.xlim[1]])
    factor.yticks([1 / 32, 1 / 8, 1 / 2, 1], ["1/32", "1/8", "1/2", "1"])

    n_slow, n_beyond = sum(slow), sum(t > 32 for t in turns)
    caption = (
        f"{d // 2} pairs: {n_beyond} turn more than β = 32 times within L = {L}, {n_slow} "
        f"less than once (orange: their wavelength exceeds L, so training saw only part of their "
        f"circle). Reading s·L = {scale * L} positions, such a pair stays inside what training "
        f"saw only if its frequency is divided by at least s = {scale} (dashed line); a fast "
        "pair keeps its neighbours apart only if its frequency is kept (solid line at 1)."
    )
    items = [(_label(m), METHOD_COLOURS[m], "line") for m in _PAIRS_SHOWN]
    return row(waves.svg(), factor.svg(), caption=caption) + key(items)


def pairs_explorer() -> Explorer:
    """Chapter Q7's explorer: 12 frames over the scale factor and the setting (HTML)."""
    return Explorer(
        pairs_html,
        {"scale": [1, 2, 4, 8, 16, 32], "setting": list(SETTINGS)},
        kind="html",
        initial={"scale": 8},
        labels={"scale": "scale factor s", "setting": "setting"},
        title="What each method does to each pair of RoPE, as the scale factor moves",
    )


def _mean_over(rows, key, T):
    return sum(r[key][T] for r in rows) / len(rows)


def draw_accuracy(fig, reading: dict, cfg, methods=None) -> None:
    """Accuracy against length: one panel per task and phase (trained at L, then after the
    fine-tune), one line per method, the mean over seeds; ``reading`` as
    :func:`~tutorial_lib.labs.long_context_reading.long_context_experiment` returns it."""
    methods = methods or cfg.methods
    S = len(cfg.seeds)
    axes = fig.subplots(2, len(cfg.tasks), sharex=True, sharey=True, squeeze=False)
    for r, (phase, title) in enumerate((("trained", "no fine-tune"),
                                        ("finetuned", "after the fine-tune at 2L"))):  # fmt: skip
        for c, task in enumerate(cfg.tasks):
            ax = axes[r][c]
            for i, method in enumerate(methods):
                rows = reading[phase][method][c * S : (c + 1) * S]
                ys = [100 * _mean_over(rows, "accuracy", T) for T in cfg.eval_lens]
                ax.plot(cfg.scales, [y + 0.8 * (i - 2.5) for y in ys], marker="o", ms=3.5,
                        color=METHOD_COLOURS[method], label=_label(method))  # fmt: skip
            ax.set_xscale("log", base=2)
            ax.set_xticks(cfg.scales, [f"{s}L" for s in cfg.scales])
            ax.set_ylim(0, 105)
            ax.set_title(f"{task}, {title}")
            if c == 0:
                ax.set_ylabel("accuracy (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    fig.subplots_adjust(bottom=0.22, hspace=0.45)


def draw_pair_leads(fig, leads: dict, wavelength, L: int) -> None:
    """What each pair adds to the lead of the answer's key, one bar group per task: ``leads``
    maps a task to a (seeds, d/2) tensor of its best head's leads, shown as each seed's share
    of the total (mean, with the seeds' range); pairs whose wavelength exceeds L are shaded."""
    ax = fig.subplots()
    pairs = len(wavelength)
    slow = [i for i in range(pairs) if wavelength[i] > L]
    ax.axvspan(min(slow) - 0.5, pairs - 0.5, color="#D55E00", alpha=0.08, lw=0)
    width = 0.8 / len(leads)
    for i, (task, lead) in enumerate(leads.items()):
        share = lead / lead.sum(-1, keepdim=True)  # (seeds, d/2)
        x = [p - 0.4 + width * (i + 0.5) for p in range(pairs)]
        low, high = share.min(0).values, share.max(0).values
        mean = share.mean(0)
        ax.bar(x, mean.tolist(), width, color=HEAD_COLOURS[i], label=task)
        ax.errorbar(x, mean.tolist(), yerr=[(mean - low).tolist(), (high - mean).tolist()],
                    fmt="none", ecolor=INK, lw=0.8)  # fmt: skip
    ax.axhline(0, color=INK, lw=0.6)
    ax.text(pairs - 0.6, ax.get_ylim()[1] * 0.92, "wavelength > L", ha="right", color="#A04000")
    ax.set_xticks(range(pairs))
    ax.set_xlabel("pair l (fast to slow)")
    ax.set_ylabel("share of the lead")
    ax.legend(loc="upper center", frameon=False)


def draw_distance_profile(fig, profiles: dict, lag: int, far_from: int, shown: int = 12) -> None:
    """Where one head looks: mean attention weight on the key d back, for d = 0 .. shown - 1,
    one line per method (``profiles``: method -> (T,) weights); the legend gives each one's
    weight on keys ``far_from`` or more back."""
    ax = fig.subplots()
    for method, profile in profiles.items():
        far = float(profile[far_from:].sum())
        ax.plot(range(shown), profile[:shown].tolist(), marker="o", ms=3.5,
                color=METHOD_COLOURS[method],
                label=f"{_label(method)} ({100 * far:.0f}% at {far_from} or more)")  # fmt: skip
    ax.axvline(lag, color=MUTED, ls=":", lw=1)
    ax.set_xlabel("distance back (keys)")
    ax.set_ylabel("attention weight")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)


def draw_entropy(fig, reading: dict, cfg, task: str = "lag") -> None:
    """The entropy (nats) of the head that finds the answer, against length, for one set of
    frequencies with nothing, YaRN's temperature, or log-n on the scores; mean over seeds."""
    S = len(cfg.seeds)
    c = cfg.tasks.index(task)
    ax = fig.subplots()
    for method in ("by-parts", "yarn", "logn"):
        rows = reading["trained"][method][c * S : (c + 1) * S]
        ax.plot(cfg.scales, [_mean_over(rows, "entropy", T) for T in cfg.eval_lens], marker="o",
                ms=3.5, color=METHOD_COLOURS[method], label=_label(method))  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xticks(cfg.scales, [f"{s}L" for s in cfg.scales])
    ax.set_xlabel("length read")
    ax.set_ylabel("entropy (nats)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", frameon=False)


def accuracy_table_html(reading: dict, cfg) -> str:
    """Accuracy (%) of every method at every length, mean over seeds with the worst and best
    seed, without and with the fine-tune, one column per task and length."""
    S = len(cfg.seeds)
    header = ["method", ""] + [f"{task} {s}L" for task in cfg.tasks for s in cfg.scales]
    body = []
    for method in cfg.methods:
        for phase, name in (("trained", "none"), ("finetuned", "2L, tuned")):
            cells = [_label(method) if phase == "trained" else "", name]
            for c, _ in enumerate(cfg.tasks):
                rows = reading[phase][method][c * S : (c + 1) * S]
                for T in cfg.eval_lens:
                    values = [100 * r["accuracy"][T] for r in rows]
                    cells.append(f"{sum(values) / S:.0f}<br><small>{min(values):.0f}–"
                                 f"{max(values):.0f}</small>")  # fmt: skip
            body.append(cells)
    caption = (
        f"Accuracy (%) at the last {cfg.queries} positions of inputs of 1 to 8 times the training "
        f"length L = {cfg.train_len}: mean over {S} seeds, worst–best below. Fine-tune: "
        f"{cfg.finetune_steps} steps at 2L with the method set for s = 2, the same for every "
        "method."
    )
    align = ["left", "left"] + ["right"] * (len(header) - 2)
    table = html_table(header, body, caption, align=align, escape=False)
    return f'<div style="overflow-x:auto;font-size:0.85em">{table}</div>'

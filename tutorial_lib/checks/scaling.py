"""Self-check for a learner's scaled RoPE frequencies (chapter Q7).

Letters: d the width being rotated (d/2 pairs), L the training length, s the scale factor.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ..positional import (
    by_parts_frequencies,
    interpolation_frequencies,
    ntk_frequencies,
    sinusoidal_frequencies,
)
from .engine import Mistake, call_learner, compare_and_explain, describe, expect_tensor, fail

__all__ = ["check_scaled_frequencies", "SCALED_METHODS"]

# What the check knows, and where each rule comes from.
SCALED_METHODS = {
    "interpolation": "position interpolation (Chen et al. 2023): every frequency divided by s",
    "ntk": "NTK-aware scaling (bloc97 2023): RoPE with the base b * s^(d/(d-2))",
    "yarn": "NTK-by-parts, YaRN's frequencies (Peng et al. 2023, section 3.2), alpha 1, beta 32",
}
# The cases tried: (d, s, L, base), each with YaRN pairs above beta, inside the ramp and below
# alpha (the last has no pair above beta).
CASES = ((16, 4.0, 256, 10000.0), (32, 8.0, 1024, 10000.0), (8, 2.0, 64, 500.0))
# What a grader's hidden test tries (other_settings).
OTHER_CASES = ((24, 2.0, 512, 10000.0), (64, 16.0, 4096, 500000.0), (12, 3.0, 256, 1000.0))


def _ramp_rule(d, s, L, base, *, turns=None, reverse=False, clamp=True) -> Tensor:
    """NTK-by-parts with one mistake switched on: turns(theta) replaces L theta / 2 pi."""
    theta = sinusoidal_frequencies(d, base)
    r = L * theta / (2 * math.pi) if turns is None else turns(theta)
    gamma = (r - 1.0) / 31.0
    gamma = gamma.clamp(0, 1) if clamp else gamma
    gamma = 1 - gamma if reverse else gamma
    return (1 - gamma) * theta / s + gamma * theta


def _mistakes(method: str, d: int, s: float, L: int, base: float) -> list[Mistake]:
    theta = sinusoidal_frequencies(d, base)
    rules = {
        "interpolation": interpolation_frequencies(d, s, base),
        "ntk": ntk_frequencies(d, s, base),
        "yarn": by_parts_frequencies(d, s, L, base),
    }
    names = {"interpolation": "position interpolation", "ntk": "NTK-aware", "yarn": "YaRN"}
    # The exponent l/d where 2l/d belongs: base^(-l/d) is base sqrt(b) with the right exponent.
    halved = {
        "interpolation": interpolation_frequencies(d, s, base**0.5),
        "ntk": ntk_frequencies(d, s, base).sqrt(),  # (b s^(d/(d-2)))^(-l/d)
        "yarn": by_parts_frequencies(d, s, L, base**0.5),  # the ramp reads the wrong theta
    }[method]
    mistakes = [
        Mistake("no scaling", "these are RoPE's own frequencies base^(-2l/d): s was not used.",
                theta),
        Mistake("pairs counted as dimensions (exponent l/d)",
                "pair l has the exponent 2l/d: l counts pairs, 2l is the dimension.", halved),
    ]  # fmt: skip
    for other, result in rules.items():
        if other != method:
            mistakes.append(Mistake(f"{names[other]}'s rule", f"you computed {names[other]}'s "
                                    f"frequencies; {SCALED_METHODS[method]}.", result))  # fmt: skip
    if method == "interpolation":
        mistakes += [
            Mistake("multiplied by s", "interpolation divides every frequency by s = L'/L (the "
                    "positions m become m / s), so the longest input turns no further than "
                    "training did; multiplying turns it s times further.", theta * s),
            Mistake("base times s", "that raises the base, which slows the slow pairs and barely "
                    "touches the fast ones; interpolation divides every frequency by s.",
                    sinusoidal_frequencies(d, base * s)),
            Mistake("only the slow half divided", "interpolation divides every pair's frequency "
                    "by s, fast pairs too.",
                    torch.cat([theta[: d // 4], theta[d // 4 :] / s])),
        ]  # fmt: skip
    elif method == "ntk":
        mistakes += [
            Mistake("base times s, exponent forgotten", "the new base is b * s^(d/(d-2)), so that "
                    "the slowest pair, l = d/2 - 1, turns exactly s times slower.",
                    sinusoidal_frequencies(d, base * s)),
            Mistake("exponent (d-2)/d", "the exponent is d/(d-2), the inverse: with it the "
                    "slowest pair's frequency is divided by exactly s.",
                    sinusoidal_frequencies(d, base * s ** ((d - 2) / d))),
            Mistake("base divided", "the base grows, b' = b * s^(d/(d-2)): a larger base turns "
                    "every pair but the first more slowly.",
                    sinusoidal_frequencies(d, base / s ** (d / (d - 2)))),
        ]  # fmt: skip
    else:
        mistakes += [
            Mistake("ramp reversed (or alpha and beta swapped)", "gamma is 1 for the fast pairs "
                    "(more than beta = 32 turns within L), which keep their frequency, and 0 for "
                    "the slow ones (fewer than alpha = 1 turn), which are divided by s: h = "
                    "(1 - gamma) theta / s + gamma theta.",
                    _ramp_rule(d, s, L, base, reverse=True)),
            Mistake("turns without 2 pi", "r counts whole turns within L: r = L / wavelength = "
                    "L theta / (2 pi), not L theta.",
                    _ramp_rule(d, s, L, base, turns=lambda t: L * t)),
            Mistake("wavelength over L", "r = L / wavelength (turns within L), not wavelength / L.",
                    _ramp_rule(d, s, L, base, turns=lambda t: 2 * math.pi / t / L)),
            Mistake("turns within s L", "r counts the turns within the training length L, what "
                    "training saw, not within the new length s L.",
                    _ramp_rule(d, s, L, base, turns=lambda t: s * L * t / (2 * math.pi))),
            Mistake("ramp not clipped", "gamma is clipped to [0, 1]: pairs beyond beta keep "
                    "exactly theta, pairs below alpha get exactly theta / s.",
                    _ramp_rule(d, s, L, base, clamp=False)),
        ]  # fmt: skip
    return mistakes


def check_scaled_frequencies(
    fn: Callable[..., Tensor], method: str = "yarn", *, cases: tuple = CASES
) -> None:
    """Check ``fn(d, scale, train_len, base) -> (d/2,)``, RoPE's frequencies scaled by ``method``.

    ``method``: "interpolation", "ntk" or "yarn" (its NTK-by-parts frequencies, alpha = 1,
    beta = 32; the temperature is not a frequency). Tried on three settings (d, s, L, base)
    with pairs on both sides of YaRN's thresholds. Names the usual mistakes: s unused or
    multiplied, another method's rule, the exponent l/d, the NTK exponent inverted or
    forgotten, YaRN's ramp reversed, unclipped, or counted without 2 pi, as wavelength / L, or
    within s L instead of L. ``cases`` chooses other settings (a grader's hidden test passes
    OTHER_CASES).
    """
    check = "check_scaled_frequencies"
    if method not in SCALED_METHODS:
        fail(check, f"method must be one of {list(SCALED_METHODS)}; got {method!r}")
    for d, s, L, base in cases:
        call = f"fn({d}, {s}, {L}, {base:g})"
        out = call_learner(check, fn, d, s, L, base, call=call,
                           names=("d", "scale", "train_len", "base"))  # fmt: skip
        out = expect_tensor(check, out, call, "(d/2,)", (d // 2,))
        reference = {
            "interpolation": interpolation_frequencies(d, s, base),
            "ntk": ntk_frequencies(d, s, base),
            "yarn": by_parts_frequencies(d, s, L, base),
        }[method]
        compare_and_explain(
            check,
            "your frequencies",
            out,
            reference,
            _mistakes(method, d, s, L, base),
            SCALED_METHODS[method],
            config=describe(d=d, s=f"{s:g}", L=L, base=f"{base:g}"),
        )

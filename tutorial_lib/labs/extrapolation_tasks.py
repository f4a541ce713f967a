"""The two toy tasks of chapter Q3b's length-extrapolation experiment
(:mod:`tutorial_lib.labs.extrapolation`): each needs a position, relative or absolute, to be
solved, and both can be generated at any length T.

* lag copy: the answer at t is the token at t - lag, a fixed *relative* offset;
* hold last value: the answer is the latest "value" token, however far back it is.

Tokens (n, T) and targets (n, T); a target of ``IGNORE`` is not scored.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..validate import require_int, require_real

__all__ = ["IGNORE", "lag_copy_batch", "hold_last_value_batch", "EXTRAPOLATION_TASKS", "VOCAB"]

IGNORE = -100  # target value that cross_entropy skips


def _check_batch(n: int, T: int, generator: torch.Generator | None) -> tuple[int, int]:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None; got {type(generator).__name__}"
        )
    return require_int("n", n), require_int("T", T)


def lag_copy_batch(n: int, T: int, generator: torch.Generator, lag: int = 3, vocab: int = 10):
    """Tokens (n, T) uniform over ``vocab``; target at t: the token at t - lag (none if t < lag)."""
    n, T = _check_batch(n, T, generator)
    lag, vocab = require_int("lag", lag), require_int("vocab", vocab)
    if lag >= T:
        raise ValueError(f"lag must be below T = {T}, or no position has a target; got lag = {lag}")
    tokens = torch.randint(0, vocab, (n, T), generator=generator)
    target = tokens.roll(lag, dims=1)  # (n, T)
    target[:, :lag] = IGNORE
    return tokens, target


def hold_last_value_batch(
    n: int, T: int, generator: torch.Generator, values: int = 8, fillers: int = 4, p: float = 0.3
):
    """Each token is a value (0..values-1, probability p) or a filler; target: the latest value."""
    n, T = _check_batch(n, T, generator)
    values, fillers = require_int("values", values), require_int("fillers", fillers)
    p = require_real("p", p, minimum=0, maximum=1)
    value = torch.randint(0, values, (n, T), generator=generator)
    filler = values + torch.randint(0, fillers, (n, T), generator=generator)
    is_value = torch.rand(n, T, generator=generator) < p
    is_value[:, 0] = True  # so every position has a latest value
    tokens = torch.where(is_value, value, filler)  # (n, T)
    where = torch.where(is_value, torch.arange(T).expand(n, T), 0).cummax(dim=1).values
    return tokens, tokens.gather(1, where)  # (n, T), (n, T)


# task -> (batch maker, the tokens it uses, what the answer is)
EXTRAPOLATION_TASKS: dict[str, tuple[Callable, int, str]] = {
    "lag": (lag_copy_batch, 10, "copy the token 3 places back"),
    "hold": (hold_last_value_batch, 12, "repeat the latest value token"),
}
# One vocabulary for every task, so that the models of both tasks can train as one ensemble.
VOCAB = max(vocab for _, vocab, _ in EXTRAPOLATION_TASKS.values())

"""Toy sequence-to-sequence tasks: copy, reverse, sort. Generated, never downloaded.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T sequence length, V vocabulary.

Token ids: three special tokens, then the symbols.
    0 PAD  fills short sequences (masks are built from it; the loss ignores it)
    1 BOS  "begin": the first decoder input, before any output exists
    2 EOS  "end": the last target, so the model learns when to stop
    3 ..   the symbols, written as the digits 0, 1, 2, ... in text

Every batch is a function of its seed and the book seed alone (``BOOK_SEED``, through
:mod:`tutorial_lib.seeds`), so a chapter rebuilt tomorrow sees the same numbers, and a
book built with another ``BOOK_SEED`` sees other ones.

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from . import seeds

__all__ = [
    "PAD",
    "BOS",
    "EOS",
    "N_SPECIAL",
    "TASKS",
    "vocab_size",
    "make_batch",
    "batches",
    "teacher_forcing",
    "to_text",
    "from_text",
]

PAD, BOS, EOS = 0, 1, 2
N_SPECIAL = 3
TASKS = ("copy", "reverse", "sort")


def vocab_size(n_symbols: int) -> int:
    """V: the symbols plus PAD, BOS and EOS."""
    return n_symbols + N_SPECIAL


def _answer(task: str, src: Tensor, lengths: Tensor) -> Tensor:
    """The target for each source row (B, T), touching only its first ``lengths[b]`` tokens."""
    if task == "copy":
        return src.clone()
    T = src.shape[1]
    idx = torch.arange(T)
    if task == "reverse":
        # Token j of a length-L row moves to L-1-j; padding (j >= L) stays where it is.
        order = torch.where(idx < lengths[:, None], lengths[:, None] - 1 - idx, idx)  # (B, T)
        return src.gather(1, order)
    if task == "sort":
        # PAD is 0, below every symbol, so send it to the end with a large key before sorting.
        keys = src.masked_fill(src == PAD, torch.iinfo(src.dtype).max)
        return keys.sort(dim=1).values.masked_fill(idx >= lengths[:, None], PAD)
    raise ValueError(f"task must be one of {TASKS}; got {task!r}")


def make_batch(
    task: str,
    batch_size: int,
    length: int,
    n_symbols: int = 10,
    *,
    min_length: int | None = None,
    generator: torch.Generator | None = None,
    seed: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Random sources and their answers.

    Args:
        task: "copy", "reverse" or "sort".
        batch_size: B.
        length: T, the longest sequence; every row has this length unless min_length is set.
        n_symbols: how many distinct symbols (the vocabulary without the specials).
        min_length: if given, each row's length is drawn uniformly from min_length..length
            and the rest is PAD.
        generator: the source of randomness.
        seed: used when no generator is given, to make a fresh one from the book seed
            (:mod:`tutorial_lib.seeds`): the same seed gives the same batch for one BOOK_SEED.

    Returns:
        src (B, T) and tgt (B, T), int64 token ids, PAD after each row's end.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}")
    low = length if min_length is None else min_length
    if generator is None:
        generator = seeds.generator("data", 0 if seed is None else seed)
    src = torch.randint(N_SPECIAL, N_SPECIAL + n_symbols, (batch_size, length), generator=generator)
    lengths = torch.randint(low, length + 1, (batch_size,), generator=generator)  # (B,)
    src = src.masked_fill(torch.arange(length) >= lengths[:, None], PAD)  # (B, T)
    return src, _answer(task, src, lengths)


def batches(
    task: str, batch_size: int, length: int, n_symbols: int = 10, *, seed: int = 0, **kwargs
) -> Iterator[tuple[Tensor, Tensor]]:
    """An endless stream of fresh batches from one seeded generator (stream ``seed`` of the book's
    seed)."""
    generator = seeds.generator("batches", seed)
    while True:
        yield make_batch(task, batch_size, length, n_symbols, generator=generator, **kwargs)


def teacher_forcing(tgt: Tensor) -> tuple[Tensor, Tensor]:
    """Decoder input and decoder target for training with teacher forcing::

        tgt (B, T) -> decoder input (B, T+1) = BOS, y_1 .. y_T  (the answer shifted right)
                      decoder target (B, T+1) = y_1 .. y_T, EOS

    Position t reads the *true* tokens before it and is scored on the true token at t.
    Rows shorter than T get EOS right after their last symbol and PAD after that; PAD may
    only fill the end of a row (a PAD before a symbol would be overwritten by EOS).
    """
    tgt = torch.as_tensor(tgt)
    is_pad = tgt == PAD
    after_pad = is_pad.long().cummax(dim=1).values.bool() & ~is_pad  # (B, T): a symbol after PAD
    if after_pad.any():
        row = int(after_pad.any(dim=1).nonzero()[0])
        raise ValueError(
            f"tgt row {row} has PAD ({PAD}) before a symbol: {tgt[row].tolist()}; PAD may only "
            "fill the end of a row"
        )
    B = tgt.shape[0]
    lengths = (tgt != PAD).sum(dim=1)  # (B,)
    full = torch.cat([torch.full((B, 1), BOS), tgt, torch.full((B, 1), PAD)], dim=1)  # (B, T+2)
    full[torch.arange(B), lengths + 1] = EOS
    return full[:, :-1], full[:, 1:]  # (B, T+1), (B, T+1)


_SPECIAL_TEXT = {PAD: "·", BOS: "<s>", EOS: "</s>"}


def to_text(tokens: Tensor | list[int]) -> str:
    """Token ids (T,) -> "3 1 4 1 5": symbols as digits (or numbers), specials as ·, <s>, </s>."""
    ids = torch.as_tensor(tokens, dtype=torch.long).tolist()
    return " ".join(_SPECIAL_TEXT.get(t, str(t - N_SPECIAL)) for t in ids)


def from_text(text: str, n_symbols: int = 10) -> Tensor:
    """ "3 1 4 1 5" (or "31415" when every symbol is one digit, n_symbols <= 10) -> (1, T) ids.

    Symbols are written with the digits 0-9 only: no sign, no underscore, no other script.
    """
    parts = text.split()
    if len(parts) == 1 and n_symbols <= 10:  # "31415": one digit per symbol
        parts = list(parts[0])
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError(
            f"expected text of symbols 0..{n_symbols - 1} written with the digits 0-9, separated "
            f"by spaces; got {text!r}"
        )
    values = [int(p) for p in parts]
    if not values or not all(0 <= v < n_symbols for v in values):
        raise ValueError(f"expected text of symbols 0..{n_symbols - 1}; got {text!r}")
    return torch.tensor([values]) + N_SPECIAL  # (1, T)

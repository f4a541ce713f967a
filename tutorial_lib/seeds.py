"""One knob for every random draw in the book: the ``BOOK_SEED`` environment variable.

A claim that holds for one seed is an anecdote, so the book can be rebuilt with
another seed (``BOOK_SEED=1 make book``) and must stay true. Every chapter and every
helper in ``tutorial_lib`` that draws random numbers derives its seed here, from the
book seed and a key that names the draw::

    manual_seed("q1", "walk")          # torch's global generator, for one chapter step
    generator("data", "reverse", 3)    # a private torch.Generator for a data stream

The same key gives the same seed on every machine (a hash, not Python's ``hash``),
and a different ``BOOK_SEED`` gives different seeds for every key.
"""

from __future__ import annotations

import hashlib
import os

import torch

__all__ = ["ENV", "book_seed", "derive", "generator", "manual_seed"]

ENV = "BOOK_SEED"


def book_seed() -> int:
    """The book seed: ``BOOK_SEED`` from the environment, 0 when it is unset or empty."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{ENV} must be an integer; got {ENV}={raw!r}") from None


def derive(*key: object) -> int:
    """A seed in [0, 2^63) from the book seed and ``key`` (strings and integers).

    ``derive("q2", "train", 3)`` names run 3 of chapter Q2's training; the result
    changes with ``BOOK_SEED`` and is the same on every machine and Python version. Each part
    counts as its text, so a NumPy 3 is the integer 3, and True is not 1.
    """
    text = "/".join([str(book_seed()), *map(str, key)])
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def generator(*key: object) -> torch.Generator:
    """A fresh ``torch.Generator`` seeded with ``derive(*key)``."""
    return torch.Generator().manual_seed(derive(*key))


def manual_seed(*key: object) -> int:
    """Seed torch's global generator with ``derive(*key)``; returns the seed used."""
    seed = derive(*key)
    torch.manual_seed(seed)
    return seed

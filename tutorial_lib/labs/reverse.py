"""Chapter Q5's experiment: a tiny encoder-decoder learns to reverse strings of digits.

The chapter trains it live; the tests and ``make bench`` train the same model with the
same settings from here, so the three cannot drift apart.
"""

from __future__ import annotations

import dataclasses

from .. import seeds
from ..data import vocab_size
from ..model import Transformer, TransformerConfig
from ..training import TrainResult, train
from ..validate import check_int

__all__ = ["N_SYMBOLS", "LENGTH", "chapter_config", "train_reverse"]

N_SYMBOLS = 10  # digits 0..9
LENGTH = 16  # the longest string


def chapter_config(**changes) -> TransformerConfig:
    """The chapter's model: D=32, H=4, d_ff=128, one layer per stack; ``changes`` override."""
    V = vocab_size(N_SYMBOLS)
    config = TransformerConfig(
        src_vocab=V,
        tgt_vocab=V,
        d_model=32,
        n_head=4,
        d_ff=128,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,  # the data are fresh every step, so there is nothing to overfit
        max_len=128,
        token_rms=0.25,  # small token vectors leave the positions audible (the chapter shows why)
    )
    unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(TransformerConfig)})
    if unknown:
        raise TypeError(f"chapter_config got fields TransformerConfig does not have: {unknown}")
    return dataclasses.replace(config, **changes)


def train_reverse(seed: int = 0, **train_kwargs) -> tuple[Transformer, TrainResult]:
    """A fresh chapter model trained on reverse (length 16, lr 5e-3) until greedy decoding is
    exact on 1,000 held-out strings; ``train_kwargs`` pass on to :func:`.train`."""
    seeds.manual_seed("reverse", check_int("seed", seed, None))
    model = Transformer(chapter_config())
    options = {"length": LENGTH, "n_symbols": N_SYMBOLS, "lr": 5e-3, "seed": seed} | train_kwargs
    return model, train(model, "reverse", **options)

"""Chapter Q5's task and model: reversing strings of digits with the chapter's small
encoder-decoder, trained alone by :func:`tutorial_lib.training.train`; and the floor label
smoothing puts under its loss. :mod:`tutorial_lib.labs.reverse` trains many at once.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, D width, H heads, V vocabulary.
"""

from __future__ import annotations

import dataclasses
import math

from .. import seeds
from ..data import vocab_size
from ..model import Transformer, TransformerConfig
from ..training import TrainResult, train

__all__ = ["N_SYMBOLS", "LENGTH", "chapter_config", "train_reverse", "smoothed_loss_floor"]

N_SYMBOLS = 10  # digits 0..9
LENGTH = 8  # the string length: as many steps to learn as 16 digits take, at half the cost


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
        dropout=0.0,  # fresh data every step: nothing to overfit (the paper's 0.1 fights that)
        max_len=128,
        token_rms=0.25,  # small token vectors leave the positions audible (the chapter shows why)
    )
    return dataclasses.replace(config, **changes)


def train_reverse(seed: int = 0, **train_kwargs) -> tuple[Transformer, TrainResult]:
    """A fresh chapter model trained on reverse by the chapter's recipe (length ``LENGTH`` = 8,
    batches of 32, lr 5e-3, as :func:`~tutorial_lib.labs.reverse.train_ensemble` trains each
    member) until greedy decoding is exact on 1,000 held-out strings; ``train_kwargs`` pass on
    to :func:`.train`."""
    seeds.manual_seed("reverse", seed)
    model = Transformer(chapter_config())
    options = dict(length=LENGTH, n_symbols=N_SYMBOLS, batch_size=32, lr=5e-3, seed=seed)
    return model, train(model, "reverse", **options | train_kwargs)


def smoothed_loss_floor(epsilon: float, V: int) -> tuple[float, float]:
    """The lowest cross-entropy a model can reach with label smoothing, and its confidence there.

    Smoothing trains against q = (1 - epsilon) one_hot + epsilon / V (PyTorch's
    ``label_smoothing``: the epsilon is spread over all V classes, the right one included).
    The cross-entropy -sum q log p is smallest at p = q, where it equals the entropy of q,
    and the model's top probability is then 1 - epsilon + epsilon / V.
    """
    if not 0 <= epsilon < 1:  # 1 would smooth the target into the uniform; NaN fails too
        raise ValueError(f"epsilon must lie in [0, 1) (label smoothing); got epsilon={epsilon}")
    top, rest = 1 - epsilon + epsilon / V, epsilon / V
    floor = -top * math.log(top) - (V - 1) * (rest * math.log(rest) if rest else 0.0)
    return floor, top

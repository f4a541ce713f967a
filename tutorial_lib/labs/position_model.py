"""The models of chapter Q3b's length-extrapolation experiment: a small causal Transformer
with any position variant of :mod:`tutorial_lib.positional` plugged in, and the experiment's
settings. :mod:`tutorial_lib.labs.extrapolation` trains and measures them.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from .. import positional
from ..attention import MultiHeadAttention, causal_mask
from ..positional import with_positions
from ..validate import require_choice, require_int, require_token_ids

__all__ = ["CHAPTER_VARIANTS", "ExtrapolationConfig", "PositionModel"]


# What chapter Q3b compares, in its order: rows of tutorial_lib.positional.VARIANTS, named here so
# that a new row there does not change the chapter.
CHAPTER_VARIANTS = ("none", "learned", "sinusoidal", "shaw", "xl", "t5", "alibi", "rope", "rerope")


@dataclass
class ExtrapolationConfig:
    """The chapter's experiment; ``make bench`` runs it with more seeds and a longer length."""

    train_len: int = 16  # L: the longest sequence seen in training
    eval_lens: tuple[int, ...] = (16, 32, 64)  # L, 2L, 4L
    d_model: int = 32  # D: tiny, so that every variant trains in seconds on one CPU thread
    n_head: int = 4  # H: ALiBi needs a few heads for a spread of slopes
    n_layer: int = 1  # one layer: enough for the tasks, and the cheapest
    d_ff: int = 0  # feed-forward width; 0 leaves it out (attention alone solves both tasks)
    steps: int = 100  # Adam steps: every variant that can fit a task at L does within these
    lr: float = 0.02  # a large rate for a short run
    batch: int = 8  # B: sequences per step and per run
    lag: int = 3  # lag-copy task: the answer at t is the token at t - lag
    shaw_clip: int = 8  # Shaw's K: distances beyond K share one vector
    rerope_window: int = 8  # ReRoPE's w: below the training length, so w was seen in training
    t5_buckets: int = 32  # T5's defaults; with L = 16 only the 16 exact buckets are ever used
    t5_max_distance: int = 128
    eval_batch: int = 64  # test sequences per length (the same for every variant and seed)
    seeds: tuple[int, ...] = tuple(range(8))  # every seed fixes initial weights and data
    variants: tuple[str, ...] = CHAPTER_VARIANTS
    tasks: tuple[str, ...] = ("lag", "hold")

    def __post_init__(self):
        # What would train something else than asked, silently, or fail deep inside a run.
        for name in ("train_len", "d_model", "n_head", "n_layer", "batch", "lag", "eval_batch"):
            require_int(name, getattr(self, name))
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model = {self.d_model} must be divisible by n_head = {self.n_head}"
            )
        if self.lag >= self.train_len:
            raise ValueError(
                f"lag must be below train_len = {self.train_len} (the first lag positions have "
                f"no target); got lag = {self.lag}"
            )
        for task in self.tasks:
            require_choice("tasks", task, ("lag", "hold"))


def _settings(cfg: ExtrapolationConfig) -> positional.Settings:
    """The registry's settings for this experiment: a learned table as long as the longest
    test, every variant in its causal form."""
    return positional.Settings(
        cfg.d_model, cfg.n_head, max(cfg.eval_lens), True, cfg.shaw_clip, cfg.t5_buckets,
        cfg.t5_max_distance, cfg.rerope_window,
    )  # fmt: skip


class _Block(nn.Module):
    """Attention (residual and post-LayerNorm inside), then a feed-forward block if d_ff > 0."""

    def __init__(self, D: int, H: int, d_ff: int, bias, rotation):
        super().__init__()
        attention = MultiHeadAttention(H, D, D // H, D // H, dropout=0.0)
        self.attention = with_positions(attention, bias=bias, rotation=rotation)
        self.mlp = None
        if d_ff:
            self.mlp = nn.Sequential(nn.Linear(D, d_ff), nn.ReLU(), nn.Linear(d_ff, D))
            self.norm = nn.LayerNorm(D)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        x, weights = self.attention(x, x, x, mask=mask)  # (B, T, D), (B, H, T, T)
        if self.mlp is not None:
            x = self.norm(x + self.mlp(x))  # (B, T, D)
        return x, weights


class PositionModel(nn.Module):
    """A causal Transformer of ``n_layer`` blocks with one position variant plugged in.

    tokens (B, T) -> logits (B, T, vocab), and with ``return_weights=True`` also the first
    layer's attention weights (B, H, T, T). Every block gets its own copy of the variant's
    score bias or rotation.
    """

    def __init__(self, variant: str, vocab: int, cfg: ExtrapolationConfig):
        super().__init__()
        if not isinstance(cfg, ExtrapolationConfig):
            raise TypeError(f"cfg must be an ExtrapolationConfig; got {type(cfg).__name__}")
        row = positional.variant(variant)  # its factory, and where it acts
        self.variant, self.vocab = variant, require_int("vocab", vocab)
        settings = _settings(cfg)
        self.embed = nn.Embedding(vocab, cfg.d_model)
        self.absolute = row.make(settings) if row.acts == "absolute" else None
        self.blocks = nn.ModuleList(
            _Block(cfg.d_model, cfg.n_head, cfg.d_ff,
                   row.make(settings) if row.acts == "bias" else None,
                   row.make(settings) if row.acts == "rotation" else None)
            for _ in range(cfg.n_layer)
        )  # fmt: skip
        self.readout = nn.Linear(cfg.d_model, vocab)

    def forward(self, tokens: Tensor, return_weights: bool = False):
        require_token_ids("tokens", tokens, self.vocab)
        x = self.embed(tokens)  # (B, T, D)
        if self.absolute is not None:
            x = self.absolute(x)
        # (1, T, T): the batch axis made explicit, so the mask reads the same whatever B is.
        mask = causal_mask(tokens.shape[1], device=tokens.device)[None]
        first = None
        for block in self.blocks:
            x, weights = block(x, mask)  # (B, T, D), (B, H, T, T)
            first = weights if first is None else first
        logits = self.readout(x)  # (B, T, vocab)
        return (logits, first) if return_weights else logits

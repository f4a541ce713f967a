"""Chapter Q3a's experiment: how the sqrt(d_model) factor sets the balance of tokens and positions.

Dimension letters as in :mod:`tutorial_lib.positional` (B, T, D, H, d_k, d_v).

A tiny model learns to reverse its input, which it can do only by reading positions;
the chapter varies the size of the token vectors against the positions'.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .. import seeds
from ..attention import MultiHeadAttention
from ..positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from ..training import fit, one_thread
from ..validate import check_choice, check_int, check_real, check_token_ids

__all__ = ["ReversalModel", "train_reversal"]


class ReversalModel(nn.Module):
    """Embedding (x factor) + positions, one multi-head attention layer, a small MLP, a readout.

    tokens (B, T) -> logits (B, T, vocab). The embedding is initialised
    N(0, embed_std^2), multiplied by ``embed_factor`` and added to the positions.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int,
        max_len: int,
        positions: str = "sinusoidal",
        embed_std: float = 1.0,
        embed_factor: float = 1.0,
        n_head: int = 4,
    ):
        super().__init__()
        self.vocab, d_model = check_int("vocab", vocab), check_int("d_model", d_model, why="(D)")
        max_len, n_head = check_int("max_len", max_len), check_int("n_head", n_head, why="(H)")
        check_choice("positions", positions, ("sinusoidal", "learned"))
        if d_model % n_head:
            raise ValueError(f"d_model = {d_model} must be divisible by n_head = {n_head}")
        self.embed = nn.Embedding(self.vocab, d_model)
        nn.init.normal_(self.embed.weight, std=check_real("embed_std", embed_std, minimum=0))
        self.embed_factor = check_real("embed_factor", embed_factor, minimum=0)
        if positions == "sinusoidal":
            self.positions = SinusoidalPositionalEncoding(d_model)
        else:
            self.positions = LearnedPositionalEmbedding(max_len, d_model, init_std=0.02)
        d_head = d_model // n_head
        self.attention = MultiHeadAttention(n_head, d_model, d_head, d_head, dropout=0.0)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, d_model)
        )
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, vocab)

    def inputs(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """The two parts added at the input: token part (B, T, D) and position part (T, D)."""
        check_token_ids("tokens", tokens, self.vocab)
        tokens_part = self.embed(tokens) * self.embed_factor  # (B, T, D)
        return tokens_part, self.positions.encoding(tokens.shape[1])

    def forward(self, tokens: Tensor) -> Tensor:
        check_token_ids("tokens", tokens, self.vocab)
        h = self.positions(self.embed(tokens) * self.embed_factor)  # (B, T, D)
        h, _ = self.attention(h, h, h)  # (B, T, D)
        h = self.norm(h + self.mlp(h))  # (B, T, D)
        return self.readout(h)  # (B, T, vocab)


def train_reversal(
    model: ReversalModel, T: int, vocab: int, steps: int = 200, seed: int = 0
) -> dict[str, float]:
    """Train ``model`` to output its input reversed; returns final loss and held-out accuracy."""
    if not isinstance(model, ReversalModel):
        raise TypeError(f"model must be a ReversalModel; got {type(model).__name__}")
    T, steps, seed = check_int("T", T), check_int("steps", steps), check_int("seed", seed, None)
    vocab = check_int("vocab", vocab)
    if vocab > model.vocab:
        raise ValueError(f"vocab = {vocab} token ids, but the model embeds only {model.vocab}")
    data = seeds.generator("embedding_scale", "data", seed)
    stream = iter(lambda: torch.randint(0, vocab, (32, T), generator=data), None)

    def loss_fn(model, tokens):
        logits = model(tokens)  # (B, T, the model's vocabulary)
        return nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flip(1).flatten())

    with one_thread():
        losses = fit(model, stream, loss_fn, steps=steps, lr=3e-3)
        tokens = torch.randint(
            0, vocab, (1000, T), generator=seeds.generator("embedding_scale", "test")
        )
        with torch.no_grad():
            accuracy = (model(tokens).argmax(-1) == tokens.flip(1)).float().mean().item()
    last = losses[-20:]  # the mean of the last 20 steps (fewer if training was shorter)
    return {"loss": sum(last) / len(last), "accuracy": accuracy}

"""The Transformer's layers: the feed-forward block, the encoder layer and the decoder layer.

Dimension letters, fixed book-wide::

    B      batch size
    T      sequence length: T_src for the source (encoder) side, T_tgt for the target
           (decoder) side; T_q and T_k inside one attention call
    D      d_model, the width of the residual stream
    H      n_head, the number of heads (H_kv key/value heads)
    d_k    per-head width of queries and keys; d_v of values
    d_ff   inner width of the feed-forward block

Every sub-layer is post-LN, as in the paper: ``x = norm(x + dropout(sublayer(x)))``, written
out in each layer's ``forward``, so both residuals of a layer are in view. The attention
sub-layers are :class:`tutorial_lib.attention.Attention` (no residual, no norm inside).
Masks are boolean, True = may attend, broadcastable to (B, T_q, T_k).

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .attention import Attention, KVCache

__all__ = ["FeedForward", "EncoderLayer", "DecoderLayer", "LayerCache"]


class FeedForward(nn.Module):
    """The paper's position-wise feed-forward network: FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2.

    x: (B, T, D) -> (B, T, D), through a hidden width d_ff. The same two Linears act on
    every position on its own. No residual and no norm inside: the layers add those
    (post-LN here; chapter Q4's lab places the norm both ways around this same block).
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.w_1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w_2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_2(torch.relu(self.w_1(x)))  # (B, T, D), through (B, T, d_ff)


def _attention(config) -> Attention:
    d_k, d_v = config.head_dims
    return Attention(
        config.d_model, config.n_head, config.n_kv_head, d_k, d_v, dropout=config.dropout
    )


def _norm(config) -> nn.LayerNorm:
    return nn.LayerNorm(config.d_model, eps=1e-6)  # the seed code's eps


class EncoderLayer(nn.Module):
    """Self-attention over the whole source, then the feed-forward block, each post-LN.

    ``config`` is a :class:`tutorial_lib.model.TransformerConfig`.
    """

    def __init__(self, config):
        super().__init__()
        self.self_attention = _attention(config)
        self.self_attention_norm = _norm(config)
        self.ffn = FeedForward(config.d_model, config.d_ff, config.ffn_bias)
        self.ffn_norm = _norm(config)
        self.dropout = nn.Dropout(config.dropout)  # on each sub-layer's output (paper, 5.4)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (B, T_src, D), mask (B, 1, T_src) -> x (B, T_src, D), weights (B, H, T_src, T_src)."""
        attended, weights = self.self_attention(x, mask=mask)
        x = self.self_attention_norm(x + self.dropout(attended))
        x = self.ffn_norm(x + self.dropout(self.ffn(x)))
        return x, weights

    # Chapter Q5's own layer-by-layer code still calls these (see _SeedInterface).
    self_attn = property(lambda self: _SeedInterface(self, "self_attention"))
    ffn_layer_norm = property(lambda self: self.ffn_norm)


@dataclass
class LayerCache:
    """What one decoder layer keeps between decoding steps, already projected and split.

    cross_k, cross_v: (B, H_kv, T_src, d_k / d_v), the encoder memory, projected once;
    past: the self-attention's :class:`~tutorial_lib.attention.KVCache`, one position more
    each step; real: (B, t) bool, False where that position's token was PAD: the model reads
    PAD as padding wherever it stands, so a cached PAD key is masked as recomputation masks it.
    """

    cross_k: Tensor
    cross_v: Tensor
    past: KVCache = field(default_factory=KVCache)
    real: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        """Row b takes row ``index[b]``'s past, keys, values and padding alike (beam search)."""
        self.past.reorder(index)
        self.real = self.real[index]


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder memory, then feed-forward."""

    def __init__(self, config):
        super().__init__()
        self.self_attention = _attention(config)
        self.self_attention_norm = _norm(config)
        self.cross_attention = _attention(config)
        self.cross_attention_norm = _norm(config)
        self.ffn = FeedForward(config.d_model, config.d_ff, config.ffn_bias)
        self.ffn_norm = _norm(config)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        cross_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """y (B, T_tgt, D), memory (B, T_src, D); self_mask (B, T_tgt, T_tgt) (causal),
        cross_mask (B, 1, T_src) -> y (B, T_tgt, D), self weights (B, H, T_tgt, T_tgt),
        cross weights (B, H, T_tgt, T_src)."""
        attended, self_weights = self.self_attention(y, mask=self_mask)
        y = self.self_attention_norm(y + self.dropout(attended))
        # Queries from the decoder, keys and values from the encoder's output.
        attended, cross_weights = self.cross_attention(y, memory, mask=cross_mask)
        y = self.cross_attention_norm(y + self.dropout(attended))
        y = self.ffn_norm(y + self.dropout(self.ffn(y)))  # (B, T_tgt, D)
        return y, self_weights, cross_weights

    def start_cache(self, memory: Tensor) -> LayerCache:
        """Project the memory (B, T_src, D) to cross-attention keys and values, once."""
        return LayerCache(*self.cross_attention.project_kv(memory))

    def step(
        self,
        y_new: Tensor,
        cache: LayerCache,
        cross_mask: Tensor | None = None,
        is_real: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One decoding step. y_new (B, 1, D): the newest position only; is_real (B, 1) bool,
        False if that position's token is PAD (None: every token is real).

        Its key and value join the cache; the query attends to every cached position, all of
        which are earlier or equal, so no causal mask is needed; cached PAD keys are masked, as
        in :meth:`forward`. Returns y (B, 1, D), self weights (B, H, 1, t), cross weights
        (B, H, 1, T_src).
        """
        if is_real is None:
            is_real = torch.ones(y_new.shape[0], 1, dtype=torch.bool, device=y_new.device)
        cache.real = is_real if cache.real is None else torch.cat([cache.real, is_real], dim=1)
        self_mask = None if bool(cache.real.all()) else cache.real.unsqueeze(1)  # (B, 1, t)
        attended, self_weights = self.self_attention(y_new, mask=self_mask, cache=cache.past)
        y = self.self_attention_norm(y_new + self.dropout(attended))
        attended, cross_weights = self.cross_attention.attend(
            y, cache.cross_k, cache.cross_v, cross_mask
        )
        y = self.cross_attention_norm(y + self.dropout(attended))
        y = self.ffn_norm(y + self.dropout(self.ffn(y)))  # (B, 1, D)
        return y, self_weights, cross_weights

    self_attn = property(lambda self: _SeedInterface(self, "self_attention"))
    cross_attn = property(lambda self: _SeedInterface(self, "cross_attention"))
    ffn_layer_norm = property(lambda self: self.ffn_norm)


class _SeedInterface:
    """``layer.self_attn(q, k, v, mask=None)`` as the seed's MultiHeadAttention computes it,
    norm(q + dropout(attention)), from the layer's own attention and norm.

    Kept while chapter Q5's layer-by-layer code calls ``self_attn``, ``cross_attn`` and
    ``ffn_layer_norm``; it will call ``self_attention`` and ``self_attention_norm`` instead.
    """

    def __init__(self, layer: nn.Module, name: str):
        self.layer, self.name = layer, name

    def __call__(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None):
        attention = getattr(self.layer, self.name)
        attention._require_inputs(q, k, v, mask)
        out, weights = attention.attend(q, *attention.project_kv(k, v), mask)
        norm = getattr(self.layer, self.name + "_norm")
        return norm(q + self.layer.dropout(out)), weights

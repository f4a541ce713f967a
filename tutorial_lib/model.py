"""The whole Transformer: its config, the encoder, the decoder and the encoder-decoder.

Dimension letters, fixed book-wide::

    B      batch size
    T      sequence length: T_src for the source (encoder) side, T_tgt for the target
           (decoder) side; T_q and T_k inside one attention call
    D      d_model, the width of the residual stream
    H      n_head, the number of heads (H_kv key/value heads)
    d_k    per-head width of queries and keys; d_v of values
    d_ff   inner width of the feed-forward block
    V      vocabulary size
    N      number of layers in the encoder (and in the decoder)

The layers are in ``tutorial_lib.layers`` (each post-LN, ``x = norm(x + sublayer(x))``), the
masks in ``tutorial_lib.masks`` (boolean, True = may attend); both are importable from here.
This module reads top to bottom like the paper's Figure 1: embeddings plus positions, N
encoder layers, N decoder layers, the projection to the vocabulary.

Introduced in chapter Q5 ("The whole Transformer").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor, nn

from .layers import DecoderLayer, EncoderLayer, FeedForward, LayerCache
from .masks import source_mask, target_mask  # chapter Q5 imports them from here too
from .positional.absolute import sinusoidal_encoding

__all__ = [
    "TransformerConfig",
    "FeedForward",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
    "LayerCache",
    "source_mask",
    "target_mask",
    "count_parameters",
]


@dataclass(frozen=True)
class TransformerConfig:
    """Every size of the model, with the reason it is there. Defaults: the paper's base model."""

    src_vocab: int = 37000  # V_src: rows of the source embedding table (paper: ~37k shared BPE)
    tgt_vocab: int = 37000  # V_tgt: rows of the target table and width of the logits
    d_model: int = 512  # D: width of every token vector; residuals need one width throughout
    n_head: int = 8  # H: attention patterns per layer, each reading a D/H slice
    n_kv_head: int | None = None  # H_kv key/value heads shared by groups of H/H_kv; None means H
    d_k: int | None = None  # per-head query/key width; None means D/H, as in the paper
    d_v: int | None = None  # per-head value width; None means D/H
    d_ff: int = 2048  # hidden width of the feed-forward block (4D in the paper)
    n_enc_layers: int = 6  # N on the encoder side: depth of the source representation
    n_dec_layers: int = 6  # N on the decoder side
    dropout: float = 0.1  # on sub-layer outputs, attention weights, embeddings (paper: 0.1)
    max_len: int = 256  # longest sequence the sinusoidal table covers
    share_embeddings: bool = True  # one table for source and target (needs one shared vocabulary)
    tie_output: bool = True  # logits = y E^T with the target table E, paper section 3.4
    scale_embedding: bool = True  # multiply embeddings by sqrt(D), paper section 3.4
    # Size (RMS of the entries) of a token vector at init, sqrt(D) factor included. 1.0 matches
    # TensorFlow's model-garden Transformer (init std D^-0.5, then x sqrt(D)); nn.Embedding's
    # default init with the factor gives sqrt(D). Positions have RMS 0.71: too large drowns them.
    token_rms: float = 1.0
    pad_id: int = 0  # the token that fills short sequences; masks are built from it
    causal: bool = True  # decoder position t reads only positions <= t; False lets training cheat
    ffn_bias: bool = True  # biases in the feed-forward Linears (the paper's FFN has b_1, b_2)

    def __post_init__(self):
        # What would build a model that computes something else than asked, silently.
        if self.d_model % 2:
            raise ValueError(
                f"d_model must be even: the sinusoidal positions come in (sin, cos) pairs; got "
                f"d_model={self.d_model}"
            )
        if not 0 <= self.pad_id < min(self.src_vocab, self.tgt_vocab):
            raise ValueError(
                f"pad_id must be a token id below both vocabulary sizes (V_src={self.src_vocab}, "
                f"V_tgt={self.tgt_vocab}); got pad_id={self.pad_id}"
            )
        if (self.d_k is None or self.d_v is None) and self.d_model % self.n_head:
            raise ValueError(
                f"d_k = d_v = D/H needs D divisible by H; got D={self.d_model}, H={self.n_head}"
            )
        if self.share_embeddings and self.src_vocab != self.tgt_vocab:
            raise ValueError(
                "share_embeddings needs one vocabulary for both sides; got "
                f"V_src={self.src_vocab}, V_tgt={self.tgt_vocab}"
            )

    @property
    def head_dims(self) -> tuple[int, int]:
        """(d_k, d_v), filling in D/H where they were left as None."""
        d = self.d_model // self.n_head
        return (self.d_k or d, self.d_v or d)


class _Embedding(nn.Module):
    """Token ids (B, T) -> token vectors (times sqrt(D) if asked) plus sinusoidal positions."""

    def __init__(self, table: nn.Embedding, config: TransformerConfig):
        super().__init__()
        self.table = table
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.register_buffer(
            "positions", sinusoidal_encoding(config.max_len, config.d_model), persistent=False
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, tokens: Tensor, offset: int = 0) -> Tensor:
        """tokens (B, T) at positions offset .. offset+T-1 -> (B, T, D)."""
        T = tokens.shape[1]
        if offset + T > self.positions.shape[0]:
            raise ValueError(
                f"tokens at positions {offset}..{offset + T - 1} need max_len >= {offset + T}, "
                f"but the config has max_len = {self.positions.shape[0]}: raise max_len"
            )
        x = self.table(tokens) * self.scale  # (B, T, D)
        return self.dropout(x + self.positions[offset : offset + T])  # (B, T, D)


def _new_table(vocab: int, config: TransformerConfig) -> nn.Embedding:
    table = nn.Embedding(vocab, config.d_model)
    scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
    nn.init.normal_(table.weight, std=config.token_rms / scale)  # token_rms after the scaling
    return table


class Encoder(nn.Module):
    """Embedding plus positions, then N encoder layers. src (B, T_src) -> memory (B, T_src, D)."""

    def __init__(self, config: TransformerConfig, table: nn.Embedding):
        super().__init__()
        self.embed = _Embedding(table, config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_enc_layers))

    def forward(self, src: Tensor, mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        """src (B, T_src), mask (B, 1, T_src) -> memory (B, T_src, D) and, per layer,
        weights (B, H, T_src, T_src)."""
        x = self.embed(src)  # (B, T_src, D)
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask)
            weights.append(w)
        return x, weights


class Decoder(nn.Module):
    """Embedding plus positions, N decoder layers, then the projection to V logits."""

    def __init__(self, config: TransformerConfig, table: nn.Embedding):
        super().__init__()
        self.pad_id = config.pad_id
        self.embed = _Embedding(table, config)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_dec_layers))
        # Tied: the logits reuse the embedding table, so no separate (V, D) matrix exists.
        self.output = (
            None
            if config.tie_output
            else nn.Linear(config.d_model, table.num_embeddings, bias=False)
        )

    def logits(self, y: Tensor) -> Tensor:
        """y (B, T, D) -> (B, T, V)."""
        if self.output is None:
            return y @ self.embed.table.weight.T  # (B, T, V)
        return self.output(y)

    def forward(
        self, tgt: Tensor, memory: Tensor, self_mask: Tensor | None, cross_mask: Tensor | None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """tgt (B, T_tgt) decoder input, memory (B, T_src, D) -> logits (B, T_tgt, V),
        self weights and cross weights, one (B, H, T_tgt, T) tensor per layer."""
        y = self.embed(tgt)  # (B, T_tgt, D)
        self_weights, cross_weights = [], []
        for layer in self.layers:
            y, s, c = layer(y, memory, self_mask, cross_mask)
            self_weights.append(s)
            cross_weights.append(c)
        return self.logits(y), self_weights, cross_weights

    def start_cache(self, memory: Tensor) -> list[LayerCache]:
        """One :class:`LayerCache` per layer, from the memory (B, T_src, D)."""
        return [layer.start_cache(memory) for layer in self.layers]

    def step(
        self, token: Tensor, position: int, caches: list[LayerCache], cross_mask: Tensor | None
    ) -> tuple[Tensor, list[Tensor]]:
        """token (B, 1) at ``position`` -> logits (B, 1, V) and cross weights (B, H, 1, T_src)
        per layer; every layer's cache grows by one position (a PAD token is masked there, as
        :meth:`forward` masks it)."""
        if token.shape[1] != 1 or len(caches) != len(self.layers):
            raise ValueError(
                f"step takes the newest token only, (B, 1), and one LayerCache per layer "
                f"({len(self.layers)}, from start_cache); got a token of shape "
                f"{tuple(token.shape)} and {len(caches)} caches"
            )
        y = self.embed(token, offset=position)  # (B, 1, D)
        is_real = token != self.pad_id  # (B, 1)
        cross_weights = []
        for layer, cache in zip(self.layers, caches, strict=True):
            y, _, c = layer.step(y, cache, cross_mask, is_real)
            cross_weights.append(c)
        return self.logits(y), cross_weights


class Transformer(nn.Module):
    """The encoder-decoder of the paper. ``forward(src, tgt_in) -> logits (B, T_tgt, V_tgt)``.

    src (B, T_src) and tgt_in (B, T_tgt) are token ids, padded with ``config.pad_id``; the
    masks are built from them. The last attention weights of every layer are kept in
    ``self.attention`` (lists of (B, H, T_q, T_k)) for plots.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        src_table = _new_table(config.src_vocab, config)
        tgt_table = src_table if config.share_embeddings else _new_table(config.tgt_vocab, config)
        self.encoder = Encoder(config, src_table)
        self.decoder = Decoder(config, tgt_table)
        self.attention: dict[str, list[Tensor]] = {}

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, T_src) -> memory (B, T_src, D) and its mask (B, 1, T_src)."""
        mask = source_mask(src, self.config.pad_id)  # (B, 1, T_src)
        memory, weights = self.encoder(src, mask)
        self.attention["encoder"] = [w.detach() for w in weights]
        return memory, mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """tgt_in (B, T_tgt), memory (B, T_src, D), src_mask (B, 1, T_src) -> (B, T_tgt, V)."""
        if self.config.causal:
            self_mask = target_mask(tgt_in, self.config.pad_id)  # (B, T_tgt, T_tgt)
        else:
            self_mask = source_mask(tgt_in, self.config.pad_id)  # (B, 1, T_tgt): sees the future
        logits, self_w, cross_w = self.decoder(tgt_in, memory, self_mask, src_mask)
        self.attention["decoder_self"] = [w.detach() for w in self_w]
        self.attention["cross"] = [w.detach() for w in cross_w]
        return logits

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        memory, src_mask = self.encode(src)
        return self.decode(tgt_in, memory, src_mask)


_COMPONENTS = (
    "embeddings",
    "encoder self-attention",
    "encoder feed-forward",
    "decoder self-attention",
    "decoder cross-attention",
    "decoder feed-forward",
    "layer norms",
    "output projection",
)


def _component(name: str) -> str:
    """The component of a parameter, from its name, e.g. decoder.layers.0.cross_attention.w_q."""
    module = name.rsplit(".", 1)[0]
    if module.endswith("_norm"):
        return "layer norms"
    if ".table." in name:
        return "embeddings"
    if name.startswith("decoder.output"):
        return "output projection"
    side = "encoder" if name.startswith("encoder.") else "decoder"
    for part, label in (
        ("self_attention", "self-attention"),
        ("cross_attention", "cross-attention"),
    ):
        if f".{part}." in name:
            return f"{side} {label}"
    if ".ffn." in name:
        return f"{side} feed-forward"
    raise ValueError(f"parameter {name!r} belongs to no known component")


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Parameters per component; a shared tensor is counted once, where it first appears.

    Works on a model built on the meta device (no memory), so the paper's base model is
    counted without allocating its 63M floats. The values sum to the model's total.
    """
    counts = dict.fromkeys(_COMPONENTS, 0)
    for name, p in model.named_parameters():  # named_parameters skips repeats of a shared tensor
        counts[_component(name)] += p.numel()
    return counts

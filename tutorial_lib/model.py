"""The whole Transformer: feed-forward block, encoder and decoder layers, the encoder-decoder.

Dimension letters, fixed book-wide::

    B      batch size
    T      sequence length: T_src for the source (encoder) side, T_tgt for the target
           (decoder) side; T_q and T_k inside one attention call
    D      d_model, the width of the residual stream
    H      n_head, the number of heads
    d_k    per-head width of queries and keys; d_v of values
    d_ff   inner width of the feed-forward block
    V      vocabulary size
    N      number of layers in the encoder (and in the decoder)

Every sub-layer is post-LN with its residual inside, like
:class:`tutorial_lib.attention.MultiHeadAttention`: ``x -> LayerNorm(x + sublayer(x))``.
Masks are boolean, True = may attend, broadcastable to (B, T_q, T_k).

Introduced in chapter Q5 ("The whole Transformer").

About 500 lines, one file on purpose: the encoder-decoder reads top to bottom like the
paper's Figure 1 (each part checking its own inputs), and splitting it would send a reader
between files for one picture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import MultiHeadAttention, causal_mask
from .positional.absolute import sinusoidal_encoding
from .validate import (
    check_bool,
    check_int,
    check_real,
    check_same_batch,
    check_same_dtype,
    check_tensor,
    check_token_ids,
    check_tokens,
    format_shape,
)

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
        # Every field checked, and NumPy numbers stored as Python ones (the config is frozen).
        minimum = {"n_enc_layers": 0, "pad_id": 0}
        for name in ("src_vocab", "tgt_vocab", "d_model", "n_head", "d_ff", "n_enc_layers",
                     "n_dec_layers", "max_len", "pad_id", "d_k", "d_v"):  # fmt: skip
            if getattr(self, name) is not None or name not in ("d_k", "d_v"):
                value = check_int(name, getattr(self, name), minimum.get(name, 1))
                object.__setattr__(self, name, value)
        for name in ("share_embeddings", "tie_output", "scale_embedding", "causal", "ffn_bias"):
            object.__setattr__(self, name, check_bool(name, getattr(self, name)))
        dropout = check_real("dropout", self.dropout, minimum=0, maximum=1)
        object.__setattr__(self, "dropout", dropout)
        object.__setattr__(self, "token_rms", check_real("token_rms", self.token_rms, above=0))
        if self.d_model % 2:
            raise ValueError(
                f"d_model must be even: the sinusoidal positions come in (sin, cos) pairs; got "
                f"d_model={self.d_model}"
            )
        if self.pad_id >= min(self.src_vocab, self.tgt_vocab):
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


def _check_ids(name: str, tokens: Tensor) -> None:
    check_tensor(name, tokens, "integer", "(B, T) token ids")
    if tokens.dim() != 2:
        raise ValueError(
            f"{name} must be token ids (B, T); got {name} of shape {format_shape(tokens)}"
        )


def source_mask(src: Tensor, pad_id: int) -> Tensor:
    """src (B, T_src) token ids -> (B, 1, T_src) bool, True at real tokens.

    Used for encoder self-attention and for cross-attention: no query may read a padding key.
    """
    _check_ids("src", src)
    return (src != check_int("pad_id", pad_id, minimum=0)).unsqueeze(1)  # (B, 1, T_src)


def target_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """tgt (B, T_tgt) token ids -> (B, T_tgt, T_tgt) bool: causal AND not padding.

    Query i may read key j when j <= i (no peeking at later tokens) and j is a real token.
    """
    _check_ids("tgt", tgt)
    keys = (tgt != check_int("pad_id", pad_id, minimum=0)).unsqueeze(1)  # (B, 1, T_tgt)
    return causal_mask(tgt.shape[1], device=tgt.device) & keys  # (B, T_tgt, T_tgt)


class FeedForward(nn.Module):
    """The paper's position-wise feed-forward network: FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2.

    x: (B, T, D) -> (B, T, D), through a hidden width d_ff. The same two Linears act on
    every position on its own. No residual and no norm inside: the layers add those
    (post-LN here; chapter Q4's lab places the norm both ways around this same block).
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = True):
        super().__init__()
        self.d_model, d_ff = check_int("d_model", d_model, why="(D)"), check_int("d_ff", d_ff)
        bias = check_bool("bias", bias)
        self.w_1 = nn.Linear(self.d_model, d_ff, bias=bias)
        self.w_2 = nn.Linear(d_ff, self.d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        check_tokens(x, self.d_model, "FeedForward")
        check_same_dtype("x", x, self.w_1.weight, "FeedForward")
        return self.w_2(torch.relu(self.w_1(x)))  # (B, T, D), through (B, T, d_ff)


def _feed_forward_parts(config: TransformerConfig) -> tuple[FeedForward, nn.Dropout, nn.LayerNorm]:
    """The feed-forward sub-layer's parts; a layer applies them as LN(x + dropout(FFN(x)))."""
    return (
        FeedForward(config.d_model, config.d_ff, config.ffn_bias),
        nn.Dropout(config.dropout),
        nn.LayerNorm(config.d_model, eps=1e-6),
    )


def _check_config(config: TransformerConfig) -> None:
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig; got {type(config).__name__}")


def _mha(config: TransformerConfig) -> MultiHeadAttention:
    d_k, d_v = config.head_dims
    return MultiHeadAttention(config.n_head, config.d_model, d_k, d_v, dropout=config.dropout)


class EncoderLayer(nn.Module):
    """Self-attention over the whole source, then the feed-forward block."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        _check_config(config)
        self.d_model = config.d_model
        self.self_attn = _mha(config)
        self.ffn, self.ffn_dropout, self.ffn_layer_norm = _feed_forward_parts(config)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (B, T_src, D), mask (B, 1, T_src) -> x (B, T_src, D), weights (B, H, T_src, T_src)."""
        check_tokens(x, self.d_model, "EncoderLayer")
        x, weights = self.self_attn(x, x, x, mask=mask)
        return self.ffn_layer_norm(x + self.ffn_dropout(self.ffn(x))), weights  # (B, T_src, D)


@dataclass
class LayerCache:
    """What one decoder layer keeps between decoding steps, already projected and split.

    self_k, self_v: (B, H, t, d_k / d_v), one row per token decoded so far (grows by one a step);
    self_keep: (B, t) bool, False where that token was PAD: the model reads PAD as padding
    wherever it stands, so a cached PAD key is masked as recomputation masks it;
    cross_k, cross_v: (B, H, T_src, d_k / d_v), the encoder memory, projected once.
    """

    cross_k: Tensor
    cross_v: Tensor
    self_k: Tensor | None = None
    self_v: Tensor | None = None
    self_keep: Tensor | None = None


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder memory, then feed-forward."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        _check_config(config)
        self.d_model = config.d_model
        self.self_attn = _mha(config)
        self.cross_attn = _mha(config)
        self.ffn, self.ffn_dropout, self.ffn_layer_norm = _feed_forward_parts(config)

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
        check_tokens(y, self.d_model, "DecoderLayer", "y")
        check_tokens(memory, self.d_model, "DecoderLayer", "memory")
        check_same_batch("y", y, "memory", memory)
        y, self_weights = self.self_attn(y, y, y, mask=self_mask)
        # Queries from the decoder, keys and values from the encoder's output.
        y, cross_weights = self.cross_attn(y, memory, memory, mask=cross_mask)
        y = self.ffn_layer_norm(y + self.ffn_dropout(self.ffn(y)))  # (B, T_tgt, D)
        return y, self_weights, cross_weights

    def start_cache(self, memory: Tensor) -> LayerCache:
        """Project the memory (B, T_src, D) to cross-attention keys and values, once."""
        check_tokens(memory, self.d_model, "DecoderLayer.start_cache", "memory")
        return LayerCache(*self.cross_attn.project_kv(memory, memory))

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
        check_tokens(y_new, self.d_model, "DecoderLayer.step", "y_new")
        if not isinstance(cache, LayerCache):
            raise TypeError(
                f"cache must be a LayerCache (from start_cache); got {type(cache).__name__}"
            )
        B = y_new.shape[0]
        if y_new.shape[1] != 1 or cache.cross_k.shape[0] != B:
            raise ValueError(
                "step takes the newest position only, y_new (B, 1, D) with "
                f"B = {cache.cross_k.shape[0]} "
                f"as in the cache; got y_new of shape {format_shape(y_new)}"
            )
        if is_real is None:
            is_real = torch.ones(B, 1, dtype=torch.bool, device=y_new.device)
        check_tensor("is_real", is_real, "bool", "(B, 1)")
        if tuple(is_real.shape) != (B, 1):
            raise ValueError(f"is_real must be (B, 1) = ({B}, 1); got {format_shape(is_real)}")
        k, v = self.self_attn.project_kv(y_new, y_new)  # (B, H, 1, d_k), (B, H, 1, d_v)
        keep = is_real
        if cache.self_k is not None:
            k = torch.cat([cache.self_k, k], dim=2)  # (B, H, t, d_k)
            v = torch.cat([cache.self_v, v], dim=2)  # (B, H, t, d_v)
            keep = torch.cat([cache.self_keep, is_real], dim=1)  # (B, t)
        cache.self_k, cache.self_v, cache.self_keep = k, v, keep
        self_mask = None if bool(keep.all()) else keep.unsqueeze(1)  # (B, 1, t)
        y, self_weights = self.self_attn.attend(y_new, k, v, self_mask)
        y, cross_weights = self.cross_attn.attend(y, cache.cross_k, cache.cross_v, cross_mask)
        y = self.ffn_layer_norm(y + self.ffn_dropout(self.ffn(y)))  # (B, T_tgt, D)
        return y, self_weights, cross_weights


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
        check_token_ids("tokens", tokens, self.table.num_embeddings)
        T, offset = tokens.shape[1], check_int("offset", offset, minimum=0)
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


def _check_table(table: nn.Embedding, config: TransformerConfig) -> None:
    _check_config(config)
    if not isinstance(table, nn.Embedding) or table.embedding_dim != config.d_model:
        found = (
            f"an nn.Embedding of width {table.embedding_dim}"
            if isinstance(table, nn.Embedding)
            else type(table).__name__
        )
        raise TypeError(
            f"table must be an nn.Embedding(V, D) with D = d_model = {config.d_model}; got {found}"
        )


class Encoder(nn.Module):
    """Embedding plus positions, then N encoder layers. src (B, T_src) -> memory (B, T_src, D)."""

    def __init__(self, config: TransformerConfig, table: nn.Embedding):
        super().__init__()
        _check_table(table, config)
        self.embed = _Embedding(table, config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_enc_layers))

    def forward(self, src: Tensor, mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        """src (B, T_src), mask (B, 1, T_src) -> memory (B, T_src, D) and, per layer,
        weights (B, H, T_src, T_src)."""
        check_token_ids("src", src, self.embed.table.num_embeddings)
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
        _check_table(table, config)
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
        table = self.embed.table.weight  # (V, D)
        check_tokens(y, table.shape[1], "Decoder.logits", "y")
        check_same_dtype("y", y, table, "Decoder")
        if self.output is None:
            return y @ self.embed.table.weight.T  # (B, T, V)
        return self.output(y)

    def forward(
        self, tgt: Tensor, memory: Tensor, self_mask: Tensor | None, cross_mask: Tensor | None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """tgt (B, T_tgt) decoder input, memory (B, T_src, D) -> logits (B, T_tgt, V),
        self weights and cross weights, one (B, H, T_tgt, T) tensor per layer."""
        check_token_ids("tgt", tgt, self.embed.table.num_embeddings)
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
        check_token_ids("token", token, self.embed.table.num_embeddings)
        if token.shape[1] != 1:
            raise ValueError(
                f"token must be the newest token only, (B, 1); got {format_shape(token)}"
            )
        y = self.embed(token, offset=check_int("position", position, minimum=0))  # (B, 1, D)
        found = len(caches) if isinstance(caches, (list, tuple)) else type(caches).__name__
        if found != len(self.layers):
            raise ValueError(
                f"caches must be a list of one LayerCache per layer ({len(self.layers)}, from "
                f"start_cache); got {found}"
            )
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
        check_token_ids("src", src, self.config.src_vocab)
        mask = source_mask(src, self.config.pad_id)  # (B, 1, T_src)
        memory, weights = self.encoder(src, mask)
        self.attention["encoder"] = [w.detach() for w in weights]
        return memory, mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """tgt_in (B, T_tgt), memory (B, T_src, D), src_mask (B, 1, T_src) -> (B, T_tgt, V)."""
        check_token_ids("tgt_in", tgt_in, self.config.tgt_vocab)
        check_tokens(memory, self.config.d_model, "Transformer.decode", "memory")
        check_same_batch("tgt_in", tgt_in, "memory (from src)", memory)
        check_tensor("src_mask", src_mask, "bool", "(B, 1, T_src), from encode")
        if tuple(src_mask.shape) != (memory.shape[0], 1, memory.shape[1]):
            raise ValueError(
                f"src_mask must be (B, 1, T_src) = ({memory.shape[0]}, 1, {memory.shape[1]}) as "
                f"encode returns it; got src_mask of shape {format_shape(src_mask)}"
            )
        if self.config.causal:
            self_mask = target_mask(tgt_in, self.config.pad_id)  # (B, T_tgt, T_tgt)
        else:
            self_mask = source_mask(tgt_in, self.config.pad_id)  # (B, 1, T_tgt): sees the future
        logits, self_w, cross_w = self.decoder(tgt_in, memory, self_mask, src_mask)
        self.attention["decoder_self"] = [w.detach() for w in self_w]
        self.attention["cross"] = [w.detach() for w in cross_w]
        return logits

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        check_token_ids("src", src, self.config.src_vocab)
        check_token_ids("tgt_in", tgt_in, self.config.tgt_vocab)
        check_same_batch("src", src, "tgt_in", tgt_in)
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
    if "layer_norm" in name:
        return "layer norms"
    if ".table." in name:
        return "embeddings"
    if name.startswith("decoder.output"):
        return "output projection"
    side = "encoder" if name.startswith("encoder.") else "decoder"
    for part, label in (("self_attn", "self-attention"), ("cross_attn", "cross-attention")):
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
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a Transformer (an nn.Module); got {type(model).__name__}")
    counts = dict.fromkeys(_COMPONENTS, 0)
    for name, p in model.named_parameters():  # named_parameters skips repeats of a shared tensor
        counts[_component(name)] += p.numel()
    return counts

"""Chapter Q4's lab: tiny Transformer encoder layers whose norm and its placement can be swapped.

Dimension letters, fixed book-wide:
    B    batch size
    T    sequence length (padded)
    D    d_model, the width of the residual stream
    H    n_head; d_k = D / H per head

Padding mask: bool (B, T), True = a real token, as in :mod:`tutorial_lib.norms`.

Where the norm sits (one encoder layer = attention sub-layer, then feed-forward sub-layer)::

    post  x = Norm(x + Sublayer(x))   Vaswani et al. (2017), and the seed's MultiHeadAttention
    pre   x = x + Sublayer(Norm(x))   Xiong et al. (2020); the stack ends with one more Norm

Which norm (``norm=``)::

    "layer"         LayerNorm, per token
    "rms"           RMSNorm, per token
    "batch"         BatchNorm over every position of the batch, padding included
    "batch_masked"  BatchNorm over the real tokens only

Introduced in chapter Q4 ("LayerNorm or BatchNorm?"). The full model of chapter Q5
lives in ``tutorial_lib.model``; these layers are deliberately minimal.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from ..attention import causal_mask, scaled_dot_product_attention
from ..model import FeedForward
from ..norms import BatchNorm, LayerNorm, RMSNorm
from ..positional import sinusoidal_encoding
from ..validate import (
    require_bool,
    require_choice,
    require_int,
    require_padding_mask,
    require_token_ids,
    require_tokens,
)

__all__ = [
    "NORM_KINDS",
    "PLACEMENTS",
    "make_norm",
    "SelfAttention",
    "Block",
    "TinyEncoder",
    "ffn_gradient_norms",
    "first_layers",
    "position_influence",
]

NORM_KINDS = ("layer", "rms", "batch", "batch_masked")
PLACEMENTS = ("post", "pre")


def make_norm(kind: str, d_model: int) -> nn.Module:
    """A fresh norm layer of the given kind (see the module docstring)."""
    require_choice("kind", kind, NORM_KINDS)
    if kind == "layer":
        return LayerNorm(d_model)
    if kind == "rms":
        return RMSNorm(d_model)
    return BatchNorm(d_model)


class SelfAttention(nn.Module):
    """Multi-head self-attention with no residual and no norm inside.

    ``forward(x, mask=None)``: x (B, T, D), mask bool (B, T) True = real token
    (padded keys are not attended to) -> (B, T, D). With ``causal=True`` position t
    attends to positions 0..t only, as in a decoder.
    """

    def __init__(self, d_model: int, n_head: int, causal: bool = False):
        super().__init__()
        d_model, n_head = require_int("d_model", d_model, why="(D)"), require_int("n_head", n_head)
        if d_model % n_head:
            raise ValueError(f"d_model = {d_model} must be divisible by n_head = {n_head}")
        self.d_model, self.n_head, self.d_k = d_model, n_head, d_model // n_head
        self.causal = causal
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) True = real token, or None -> (B, T, D)."""
        require_tokens(x, self.d_model, "SelfAttention")
        require_padding_mask(mask, x, "SelfAttention")
        B, T, D = x.shape
        H, d_k = self.n_head, self.d_k
        q = self.w_q(x).view(B, T, H, d_k).transpose(1, 2)  # (B, H, T, d_k)
        k = self.w_k(x).view(B, T, H, d_k).transpose(1, 2)  # (B, H, T, d_k)
        v = self.w_v(x).view(B, T, H, d_k).transpose(1, 2)  # (B, H, T, d_k)
        key_mask = None if mask is None else mask[:, None, None, :]  # (B, 1, 1, T_k)
        if self.causal:
            # (1, 1, T_q, T_k), True = j <= i: the scores' rank, so that with B = T it is not
            # mistaken for a (B, T_k) padding mask (the attention refuses such a 2-D mask).
            future = causal_mask(T, device=x.device)[None, None]
            key_mask = future if key_mask is None else key_mask & future  # (B, 1, T_q, T_k)
        out, _ = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (B, H, T, d_k)
        return self.w_o(out.transpose(1, 2).reshape(B, T, D))  # (B, T, D)


class Block(nn.Module):
    """One encoder layer: attention, then feed-forward, each with a residual and a norm.

    ``forward(x, mask=None)``: x (B, T, D), mask bool (B, T) -> (B, T, D).
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        d_ff: int,
        norm: str = "layer",
        placement: str = "post",
        causal: bool = False,
    ):
        super().__init__()
        require_choice("placement", placement, PLACEMENTS)
        require_choice("norm", norm, NORM_KINDS)
        self.d_model, self.norm_kind, self.placement = d_model, norm, placement
        self.attention = SelfAttention(d_model, n_head, causal)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm_1 = make_norm(norm, d_model)
        self.norm_2 = make_norm(norm, d_model)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), mask bool (B, T) True = real token, or None -> (B, T, D)."""
        require_tokens(x, self.d_model, "Block")
        require_padding_mask(mask, x, "Block")
        # Only the masked BatchNorm looks at the mask; plain BatchNorm counts padding on purpose.
        norm_mask = mask if self.norm_kind == "batch_masked" else None
        if self.placement == "post":
            x = self.norm_1(x + self.attention(x, mask), norm_mask)
            return self.norm_2(x + self.ffn(x), norm_mask)
        x = x + self.attention(self.norm_1(x, norm_mask), mask)
        return x + self.ffn(self.norm_2(x, norm_mask))


class TinyEncoder(nn.Module):
    """Token embedding + sinusoidal positions + ``n_layers`` Blocks + a per-token classifier.

    ``forward(tokens, mask=None)``: tokens long (B, T), index 0 is padding;
    mask bool (B, T) True = real token -> logits (B, T, n_classes).
    ``causal=True`` makes every attention causal (a decoder-only stack: position t reads
    positions 0..t), the setting in which a norm must not mix positions either.
    Linear weights start Xavier-uniform with zero biases, as in Xiong et al. (2020).
    """

    def __init__(
        self,
        vocab: int,
        n_classes: int,
        d_model: int = 32,
        n_head: int = 2,
        d_ff: int = 64,
        n_layers: int = 2,
        norm: str = "layer",
        placement: str = "post",
        max_len: int = 64,
        positions: bool = True,
        causal: bool = False,
    ):
        super().__init__()
        self.vocab, d_model = (
            require_int("vocab", vocab),
            require_int("d_model", d_model, why="(D)"),
        )
        n_classes, n_layers = (
            require_int("n_classes", n_classes),
            require_int("n_layers", n_layers, 0),
        )
        positions = require_bool("positions", positions)
        causal = require_bool("causal", causal)
        # Checked here too: with n_layers = 0 no Block would ever see them.
        n_head, d_ff = require_int("n_head", n_head, why="(H)"), require_int("d_ff", d_ff)
        require_choice("norm", norm, NORM_KINDS)
        require_choice("placement", placement, PLACEMENTS)
        self.embed = nn.Embedding(self.vocab, d_model, padding_idx=0)  # padding embeds to zeros
        self.max_len = max_len = require_int("max_len", max_len)
        # Tasks that ignore order can drop positions; then nothing in the model depends on T.
        table = sinusoidal_encoding(max_len, d_model) if positions else torch.zeros(1, d_model)
        self.register_buffer("positions", table)
        self.use_positions = positions
        self.layers = nn.ModuleList(
            Block(d_model, n_head, d_ff, norm, placement, causal) for _ in range(n_layers)
        )
        self.norm_kind = norm
        # A Pre-LN stack's residual stream is never normalised inside the layers.
        self.final_norm = make_norm(norm, d_model) if placement == "pre" else None
        self.head = nn.Linear(d_model, n_classes)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        """tokens long (B, T), mask bool (B, T) or None -> logits (B, T, n_classes)."""
        require_token_ids("tokens", tokens, self.vocab)
        x = self.embed(tokens)  # (B, T, D)
        if self.use_positions:
            T = tokens.shape[1]
            if T > self.max_len:
                raise ValueError(
                    f"tokens of length T = {T} are longer than max_len = {self.max_len}"
                )
            x = x + self.positions[:T]  # (B, T, D)
        for layer in self.layers:
            x = layer(x, mask)
        if self.final_norm is not None:
            x = self.final_norm(x, mask if self.norm_kind == "batch_masked" else None)
        return self.head(x)  # (B, T, n_classes)


def ffn_gradient_norms(model: TinyEncoder) -> list[float]:
    """The Frobenius norm of each layer's feed-forward output weight gradient, ||dL/dW_2||.

    Call after ``loss.backward()``; one number per layer, bottom layer first.
    """
    if not isinstance(model, TinyEncoder):
        raise TypeError(f"model must be a TinyEncoder; got {type(model).__name__}")
    norms = []
    for layer in model.layers:
        grad = layer.ffn.w_2.weight.grad
        if grad is None:
            raise ValueError("no gradient yet: call loss.backward() first")
        norms.append(grad.norm().item())
    return norms


def first_layers(model: TinyEncoder, n_layers: int) -> TinyEncoder:
    """The same encoder cut to its first ``n_layers`` layers: embedding, layers 1..n, head.

    Nothing is copied: the result shares its weights with ``model``. At initialisation it
    is distributed exactly like a freshly built ``n_layers``-layer encoder, so the stacks of
    one deep initialisation compare depths on the same weights.
    """
    if not isinstance(model, TinyEncoder):
        raise TypeError(f"model must be a TinyEncoder; got {type(model).__name__}")
    n_layers = require_int("n_layers", n_layers)
    if n_layers > len(model.layers):
        raise ValueError(f"n_layers must be between 1 and {len(model.layers)}; got {n_layers}")
    shallow = copy.copy(model)
    shallow._modules = dict(model._modules)  # its own table of submodules, the same submodules
    shallow.layers = nn.ModuleList(list(model.layers)[:n_layers])
    return shallow


def position_influence(model: TinyEncoder, tokens: Tensor, b: int = 0) -> Tensor:
    """(T, T): how strongly each output position of sentence ``b`` depends on each input position.

    Entry [t, t'] is ||d logits[b, t] / d x[b, t']||, the Frobenius norm of the Jacobian of
    output position t (every class) with respect to the vector x[b, t'] that enters the
    first layer (token embedding plus position). A model that respects a causal mask has
    exact zeros above the diagonal (t' > t). ``tokens`` long (B, T); the model runs in the
    mode it is in (training or evaluation), once, without a padding mask.
    """
    if not isinstance(model, TinyEncoder):
        raise TypeError(f"model must be a TinyEncoder; got {type(model).__name__}")
    require_token_ids("tokens", tokens, model.vocab)
    b = require_int("b", b, minimum=0, why="(a sentence's index)")
    if b >= tokens.shape[0]:
        raise ValueError(f"b must pick one of the B = {tokens.shape[0]} sentences; got b = {b}")
    captured = {}

    def make_leaf(module, args, output):  # the embeddings become the input we differentiate by
        captured["x"] = output.detach().requires_grad_(True)
        return captured["x"]

    handle = model.embed.register_forward_hook(make_leaf)
    try:
        logits = model(tokens)[b]  # (T, C): sentence b
    finally:
        handle.remove()
    T, C = logits.shape
    basis = torch.eye(T * C).view(T * C, T, C)  # one backward pass per output number
    (jacobian,) = torch.autograd.grad(logits, captured["x"], basis, is_grads_batched=True)
    jacobian = jacobian[:, b].reshape(T, C, T, -1)  # (T out, C, T in, D)
    return jacobian.pow(2).sum(dim=(1, 3)).sqrt()  # (T, T)

"""Multi-head latent attention (MLA, DeepSeek-V2 section 2.1) and the cache it keeps (chapter Q6).

Letters as in :mod:`tutorial_lib.attention`: B batch, T length (T_q queries, T_k keys), D =
d_model, H = n_head, d_k and d_v per head; d_c the width of the latent, d_R that of the
decoupled RoPE key (the paper's d_h^R).

MLA keeps one latent vector c_t = W^DKV h_t of d_c numbers per token and makes every head's
keys and values from it, k_t,i = W^UK_i c_t and v_t,i = W^UV_i c_t. Positions come from RoPE
on a second, small key k^R_t = RoPE(W^KR h_t), one for all heads, which each head's query part
q^R_t,i = RoPE(W^QR_i h_t) reads. A token's cache is c_t and k^R_t: d_c + d_R numbers per
layer, against 2 H d_k for multi-head attention. The scores of head i are

    q_t,i . k_j,i = (W^Q_i h_t) . (W^UK_i c_j) + q^R_t,i . k^R_j,    scaled by 1/sqrt(d_k + d_R).

The first term is h_t^T (W^Q_i^T W^UK_i) c_j: W^UK can be folded into the queries, and W^UV
into W^O, so that inference attends over the cached latents themselves and never makes a key
or value (``absorbed=True``). RoPE on the content keys would put a rotation R_{j-t} between
W^Q_i and W^UK_i that changes with the offset, and no fixed matrix could be folded: that is
why the paper gives positions a separate key.

Departures from the paper, both irrelevant to the cache: the queries are projected from h_t
directly (the paper first compresses them too, W^DQ then W^UQ, which saves activation memory
in training), and no norm sits after the compression.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import masked_softmax, require_mask
from .positional.rotation import apply_rope
from .validate import format_shape

__all__ = ["LatentCache", "LatentAttention"]


@dataclass
class LatentCache:
    """What MLA keeps per token: the latents c (B, t, d_c) and the rotated RoPE keys
    k_rope (B, t, d_R), one of each for all heads. A key is turned once, at its own position,
    when it is made (its position never changes); queries are turned at theirs."""

    c: Tensor | None = None
    k_rope: Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.c is None else self.c.shape[1]

    def append(self, c: Tensor, k_rope: Tensor) -> tuple[Tensor, Tensor]:
        """Add new positions c (B, T, d_c), k_rope (B, T, d_R); return all of them."""
        if self.c is not None:
            c = torch.cat([self.c, c], dim=1)  # (B, t, d_c)
            k_rope = torch.cat([self.k_rope, k_rope], dim=1)  # (B, t, d_R)
        self.c, self.k_rope = c, k_rope
        return c, k_rope

    def numbers_per_token(self) -> int:
        """Numbers kept per token of one sequence: d_c + d_R."""
        return self.c.shape[-1] + self.k_rope.shape[-1]


class LatentAttention(nn.Module):
    r"""Multi-head latent attention; no residual, no norm inside.

    ``LatentAttention(d_model, n_head, d_c, d_rope, d_k=None, d_v=None, base=10000.0)``:
    projections ``w_q`` (D -> H d_k, the content queries), ``w_qr`` (D -> H d_R, the RoPE
    queries), ``w_dkv`` (D -> d_c, the compression W^DKV), ``w_kr`` (D -> d_R, the shared RoPE
    key), ``w_uk`` (d_c -> H d_k), ``w_uv`` (d_c -> H d_v), ``w_o`` (H d_v -> D), bias-free.
    d_k and d_v default to D / H; RoPE with ``base``, pairs (2i, 2i+1).
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        d_c: int,
        d_rope: int,
        d_k: int | None = None,
        d_v: int | None = None,
        *,
        base: float = 10000.0,
    ):
        super().__init__()
        if d_model % n_head and None in (d_k, d_v):
            raise ValueError(f"D = {d_model} does not split into H = {n_head} heads; pass d_k, d_v")
        if d_rope < 2 or d_rope % 2:
            raise ValueError(f"RoPE turns pairs: d_rope must be even and >= 2; got {d_rope}")
        self.d_model, self.n_head, self.d_c, self.d_rope = d_model, n_head, d_c, d_rope
        self.base = base
        self.d_k = d_model // n_head if d_k is None else d_k
        self.d_v = d_model // n_head if d_v is None else d_v
        self.w_q = nn.Linear(d_model, n_head * self.d_k, bias=False)
        self.w_qr = nn.Linear(d_model, n_head * d_rope, bias=False)
        self.w_dkv = nn.Linear(d_model, d_c, bias=False)
        self.w_kr = nn.Linear(d_model, d_rope, bias=False)
        self.w_uk = nn.Linear(d_c, n_head * self.d_k, bias=False)
        self.w_uv = nn.Linear(d_c, n_head * self.d_v, bias=False)
        self.w_o = nn.Linear(n_head * self.d_v, d_model, bias=False)
        self.scale = 1.0 / math.sqrt(self.d_k + d_rope)  # the paper's 1/sqrt(d_h + d_h^R)

    def compress(self, x: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
        """What the cache keeps for x (B, T, D) at positions start .. start+T-1:
        c (B, T, d_c) and the RoPE key turned by its position, k_rope (B, T, d_R)."""
        positions = torch.arange(start, start + x.shape[1], device=x.device)  # (T,)
        return self.w_dkv(x), apply_rope(self.w_kr(x), positions, self.base)

    def absorbed(self) -> tuple[Tensor, Tensor]:
        """W^UK folded into the queries and W^UV into W^O: q_latent (H, d_c, D), so that
        q_latent[i] @ h_t = W^UK_i^T W^Q_i h_t; and o_latent (D, H, d_c), W^O_i W^UV_i side by
        side. nn.Linear stores (out, in), so head i owns rows i*d_k ... of w_q and w_uk."""
        H, D, d_c = self.n_head, self.d_model, self.d_c
        w_q = self.w_q.weight.view(H, self.d_k, D)  # (H, d_k, D)
        w_uk = self.w_uk.weight.view(H, self.d_k, d_c)  # (H, d_k, d_c)
        w_uv = self.w_uv.weight.view(H, self.d_v, d_c)  # (H, d_v, d_c)
        w_o = self.w_o.weight.view(D, H, self.d_v)  # (D, H, d_v)
        q_latent = w_uk.transpose(1, 2) @ w_q  # (H, d_c, D)
        o_latent = torch.einsum("dhv,hvc->dhc", w_o, w_uv)  # (D, H, d_c)
        return q_latent, o_latent

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        cache: LatentCache | None = None,
        absorbed: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Self-attention of x (B, T_q, D) -> out (B, T_q, D), weights (B, H, T_q, T_k).

        cache: x's latents and RoPE keys join it and the queries (at positions len(cache) ..)
        read every position it holds. mask, bool, True = may attend: (B, T_q, T_k) or
        (T_q, T_k), shared by the heads. absorbed: the same attention computed over the
        latents with :meth:`absorbed`'s matrices, no key or value made.
        """
        past = 0 if cache is None else len(cache)
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"LatentAttention takes x (B, T, D) with D = {self.d_model}; got {format_shape(x)}"
            )
        B, T_q, H = x.shape[0], x.shape[1], self.n_head
        if mask is not None:
            require_mask(mask, (B, T_q, past + T_q))
            mask = mask.unsqueeze(1) if mask.dim() == 3 else mask  # (B, 1, T_q, T_k): every head
        # 1. Compress: one latent and one RoPE key per token, all a cache needs.
        c, k_rope = self.compress(x, past)  # (B, T_q, d_c), (B, T_q, d_R)
        if cache is not None:
            c, k_rope = cache.append(c, k_rope)  # every position so far: (B, T_k, ...)
        T_k = c.shape[1]
        # 2. The position part of the scores: per-head RoPE queries against the shared RoPE key.
        q_pos = torch.arange(past, past + T_q, device=x.device)  # (T_q,)
        q_rope = self.w_qr(x).view(B, T_q, H, self.d_rope).transpose(1, 2)  # (B, H, T_q, d_R)
        q_rope = apply_rope(q_rope, q_pos, self.base)
        rope_scores = q_rope @ k_rope[:, None].transpose(-2, -1)  # (B, H, T_q, T_k)
        # 3. The content part, then the weights, then the values.
        if absorbed:
            q_latent, o_latent = self.absorbed()  # (H, d_c, D), (D, H, d_c)
            q_tilde = torch.einsum("hcd,btd->bhtc", q_latent, x)  # (B, H, T_q, d_c)
            scores = q_tilde @ c[:, None].transpose(-2, -1) + rope_scores  # (B, H, T_q, T_k)
            weights = masked_softmax(scores * self.scale, mask)  # (B, H, T_q, T_k)
            mixed = weights @ c[:, None]  # (B, H, T_q, d_c): each head's mixture of latents
            return torch.einsum("dhc,bhtc->btd", o_latent, mixed), weights  # (B, T_q, D)
        q = self.w_q(x).view(B, T_q, H, self.d_k).transpose(1, 2)  # (B, H, T_q, d_k)
        k = self.w_uk(c).view(B, T_k, H, self.d_k).transpose(1, 2)  # (B, H, T_k, d_k)
        v = self.w_uv(c).view(B, T_k, H, self.d_v).transpose(1, 2)  # (B, H, T_k, d_v)
        scores = q @ k.transpose(-2, -1) + rope_scores  # (B, H, T_q, T_k)
        weights = masked_softmax(scores * self.scale, mask)  # (B, H, T_q, T_k)
        out = (weights @ v).transpose(1, 2).reshape(B, T_q, H * self.d_v)  # (B, T_q, H d_v)
        return self.w_o(out), weights  # (B, T_q, D), (B, H, T_q, T_k)

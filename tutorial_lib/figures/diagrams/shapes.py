"""The shapes the diagrams print, read from the library by running it at probe sizes.

Nothing on a diagram's arrow is typed: the real modules run at *probe* sizes, one distinct
prime per letter, and every shape is read back in the book's letters with
:func:`tutorial_lib.figures.trace.letters_of`. The probe models are tiny, so they run on
the CPU in milliseconds (the ``meta`` device would first import torch's compiler, seconds),
inside ``fork_rng`` so that drawing a diagram never moves a chapter's random numbers.
"""

from __future__ import annotations

import functools

import torch

from ...attention import MultiHeadAttention
from ...model import Transformer, TransformerConfig, source_mask, target_mask
from ..trace import letters_of

__all__ = ["multihead_shapes", "transformer_shapes"]

# Probe sizes: a distinct prime per letter, so every size names its letter (see trace.py);
# the model's D is 2 x 29 (sinusoidal positions need an even width), a product of no two others.
_MHA_PROBE = {"B": 2, "T_q": 3, "T_k": 5, "H": 7, "d_k": 11, "d_v": 13, "D": 17}
_MODEL_PROBE = {
    "B": 2,
    "T_src": 3,
    "T_tgt": 5,
    "H": 7,
    "d_k": 11,
    "d_v": 13,
    "D": 58,
    "d_ff": 19,
    "V": 23,
}


def _recorder(seen: dict, name: str):
    def hook(module, args, kwargs, output):
        seen[name] = (args, kwargs, output)

    return hook


@functools.cache
def multihead_shapes() -> dict[str, str]:
    """Every tensor of one ``MultiHeadAttention`` call, in letters, read from a probe run.

    Keys: q_in, k_in, v_in, q_proj, k_proj, v_proj, q_heads, k_heads, v_heads, weights,
    heads_out, concat, out, normed. Queries and keys have different lengths in the probe,
    so T_q and T_k are told apart, as d_k and d_v are.
    """
    p = _MHA_PROBE
    seen: dict = {}
    with torch.random.fork_rng(devices=[]):
        mha = MultiHeadAttention(p["H"], p["D"], p["d_k"], p["d_v"], dropout=0.0).eval()
        q = torch.zeros(p["B"], p["T_q"], p["D"])  # (B, T_q, D)
        kv = torch.zeros(p["B"], p["T_k"], p["D"])  # (B, T_k, D)
        parts = ("w_qs", "w_ks", "w_vs", "attention", "fc", "layer_norm")
        handles = [
            getattr(mha, name).register_forward_hook(_recorder(seen, name), with_kwargs=True)
            for name in parts
        ]
        with torch.no_grad():
            mha(q, kv, kv)
    for handle in handles:
        handle.remove()
    (q_heads, k_heads, v_heads), (heads_out, weights) = seen["attention"][0], seen["attention"][2]
    shapes = {
        "q_in": q.shape,
        "k_in": kv.shape,
        "v_in": kv.shape,
        "q_proj": seen["w_qs"][2].shape,
        "k_proj": seen["w_ks"][2].shape,
        "v_proj": seen["w_vs"][2].shape,
        "q_heads": q_heads.shape,
        "k_heads": k_heads.shape,
        "v_heads": v_heads.shape,
        "weights": weights.shape,
        "heads_out": heads_out.shape,
        "concat": seen["fc"][0][0].shape,
        "out": seen["fc"][2].shape,
        "normed": seen["layer_norm"][2].shape,
    }
    return {name: letters_of(tuple(shape), p) for name, shape in shapes.items()}


@functools.cache
def transformer_shapes() -> dict[str, str]:
    """Every tensor the Transformer diagram labels, in letters, read from a probe run.

    Keys: src, tgt, src_embedded, src_mask, enc_weights, enc_hidden, memory, tgt_embedded,
    tgt_mask, self_weights, cross_kv, cross_weights, dec_hidden, dec_out, logits.
    """
    p = _MODEL_PROBE
    config = TransformerConfig(
        src_vocab=p["V"],
        tgt_vocab=p["V"],
        d_model=p["D"],
        n_head=p["H"],
        d_k=p["d_k"],
        d_v=p["d_v"],
        d_ff=p["d_ff"],
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,
        max_len=max(p["T_src"], p["T_tgt"]),
    )
    seen: dict = {}
    with torch.random.fork_rng(devices=[]):
        model = Transformer(config).eval()
        enc, dec = model.encoder.layers[0], model.decoder.layers[0]
        watched = {
            "enc_embed": model.encoder.embed,
            "enc_attn": enc.self_attention,
            "enc_hidden": enc.ffn.w_1,
            "enc_out": enc.ffn_norm,
            "dec_embed": model.decoder.embed,
            "dec_attn": dec.self_attention,
            "cross": dec.cross_attention,
            "dec_hidden": dec.ffn.w_1,
            "dec_out": dec.ffn_norm,
        }
        handles = [
            module.register_forward_hook(_recorder(seen, name), with_kwargs=True)
            for name, module in watched.items()
        ]
        src = torch.zeros(p["B"], p["T_src"], dtype=torch.long)  # (B, T_src)
        tgt = torch.zeros(p["B"], p["T_tgt"], dtype=torch.long)  # (B, T_tgt)
        with torch.no_grad():
            logits = model(src, tgt)
        src_mask, tgt_mask = source_mask(src, config.pad_id), target_mask(tgt, config.pad_id)
    for handle in handles:
        handle.remove()
    shapes = {
        "src": src.shape,
        "tgt": tgt.shape,
        "src_embedded": seen["enc_embed"][2].shape,
        "src_mask": src_mask.shape,
        "enc_weights": seen["enc_attn"][2][1].shape,
        "enc_hidden": seen["enc_hidden"][2].shape,
        "memory": seen["enc_out"][2].shape,
        "tgt_embedded": seen["dec_embed"][2].shape,
        "tgt_mask": tgt_mask.shape,
        "self_weights": seen["dec_attn"][2][1].shape,
        "cross_kv": seen["cross"][0][1].shape,
        "cross_weights": seen["cross"][2][1].shape,
        "dec_hidden": seen["dec_hidden"][2].shape,
        "dec_out": seen["dec_out"][2].shape,
        "logits": logits.shape,
    }
    return {name: letters_of(tuple(shape), p) for name, shape in shapes.items()}

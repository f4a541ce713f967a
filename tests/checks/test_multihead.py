"""check_multihead: correct styles pass, every common mistake is caught and named."""

import math
import re

import pytest
import torch

from tutorial_lib.checks import check_multihead
from tutorial_lib.checks.multihead import _multihead


def by_loop(x, w_q, w_k, w_v, w_o, n_head):
    d_k = x.shape[-1] // n_head
    heads = []
    for h in range(n_head):
        cols = slice(h * d_k, (h + 1) * d_k)
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]
        heads.append(torch.softmax(q @ k.transpose(-2, -1) / d_k**0.5, dim=-1) @ v)
    return torch.cat(heads, dim=-1) @ w_o


def by_view(x, w_q, w_k, w_v, w_o, n_head):
    B, T, D = x.shape
    d_k = D // n_head

    def split(t):
        return t.view(B, T, n_head, d_k).transpose(1, 2)  # (B, H, T, d_k)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    return out.transpose(1, 2).contiguous().view(B, T, D) @ w_o


def by_einsum(x, w_q, w_k, w_v, w_o, n_head):
    B, T, D = x.shape
    q, k, v = (
        torch.einsum("btd,de->bte", x, w).unflatten(-1, (n_head, -1)) for w in (w_q, w_k, w_v)
    )
    scores = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(q.shape[-1])
    out = torch.einsum("bhij,bjhd->bihd", scores.softmax(-1), v).flatten(-2)
    return out @ w_o


def by_linear_layers(x, w_q, w_k, w_v, w_o, n_head):
    """nn.functional.linear stores (out, in) weights: pass the transposes."""
    B, T, D = x.shape
    lin = torch.nn.functional.linear
    q, k, v = (lin(x, w.T).view(B, T, n_head, -1).transpose(1, 2) for w in (w_q, w_k, w_v))
    out = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, -1) @ v
    return lin(out.transpose(1, 2).reshape(B, T, D), w_o.T)


CORRECT = {"loop": by_loop, "view": by_view, "einsum": by_einsum, "linear": by_linear_layers}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_multihead_passes(name):
    assert check_multihead(CORRECT[name]) is None


def variant(**mistake):
    return lambda x, w_q, w_k, w_v, w_o, n_head: _multihead(
        x, (w_q, w_k, w_v, w_o), n_head, **mistake
    )


def three_heads(x, w_q, w_k, w_v, w_o, n_head):
    return by_view(x, w_q, w_k, w_v, w_o, 3)  # n_head ignored


def with_layer_norm(x, w_q, w_k, w_v, w_o, n_head):
    return torch.nn.functional.layer_norm(x + by_view(x, w_q, w_k, w_v, w_o, n_head), x.shape[-1:])


WRONG = {
    "one head": (
        lambda x, w_q, w_k, w_v, w_o, n_head: by_view(x, w_q, w_k, w_v, w_o, 1),
        r"one head over all of D",
    ),
    "view(B, H, T, d_k) without transpose": (
        variant(split="view without transpose"),
        r"heads split with view\(B, H, T, d_k\)",
    ),
    "merged without transpose": (
        variant(merge="reshape without transpose"),
        r"heads merged without transpose",
    ),
    "split along the wrong axis": (variant(split="wrong axis"), r"split along the wrong axis"),
    "scale 1/sqrt(D)": (variant(scale="D"), r"scale 1/sqrt\(D\)"),
    "scale 1/d_k": (variant(scale="1/d_k"), r"scale 1/d_k"),
    "no scale": (variant(scale="none"), r"scale missing"),
    "scale 1/sqrt(T)": (variant(scale="T"), r"scale 1/sqrt\(T\)"),
    "softmax over the queries": (variant(softmax_dim=-2), r"softmax over the queries"),
    "no output projection": (variant(project=False), r"missing output projection"),
    "x @ W.T": (
        lambda x, w_q, w_k, w_v, w_o, n_head: by_view(x, w_q.T, w_k.T, w_v.T, w_o.T, n_head),
        r"x @ W.T",
    ),
    "residual added": (
        lambda x, w_q, w_k, w_v, w_o, n_head: x + by_view(x, w_q, w_k, w_v, w_o, n_head),
        r"residual added",
    ),
    "residual and LayerNorm": (with_layer_norm, r"residual and LayerNorm added"),
    "three heads hard-coded": (three_heads, r"n_head ignored \(computed with 3\)"),
    "crashes on other sizes": (
        lambda x, w_q, w_k, w_v, w_o, n_head: by_view(x.view(2, 4, 12), w_q, w_k, w_v, w_o, n_head),
        r"raised RuntimeError",
    ),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_each_mistake_is_caught_and_named(name):
    fn, feedback = WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_multihead: ") as caught:
        check_multihead(fn)
    assert re.search(feedback, str(caught.value)), str(caught.value)

"""Self-checks for masks, multi-head, LayerNorm and positions: right passes, wrong is named."""

import math

import pytest
import torch

from tutorial_lib.checks import (
    check_causal_mask,
    check_layer_norm,
    check_multihead,
    check_rope,
    check_sinusoidal_encoding,
)
from tutorial_lib.positional import apply_rope, sinusoidal_encoding

# -- causal mask ------------------------------------------------------------------------------


def test_causal_mask_right():
    check_causal_mask(lambda T: torch.ones(T, T, dtype=torch.bool).tril())


@pytest.mark.parametrize(
    "fn,message",
    [
        (lambda T: torch.ones(T, T, dtype=torch.bool).triu(1), "True means \\*may attend\\*"),
        (lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1), "hides the diagonal"),
        (lambda T: torch.ones(T, T, dtype=torch.bool).tril(1), "the future leaks: query 0"),
        (lambda T: torch.ones(T, T).tril(), "boolean"),
        (lambda T: torch.ones(T, T + 1, dtype=torch.bool).tril(), r"shape \(T, T\) = \(5, 5\)"),
        (lambda T: torch.eye(T, dtype=torch.bool), "query 1 may not attend to key 0"),
    ],
)
def test_causal_mask_wrong(fn, message):
    with pytest.raises(AssertionError, match=message):
        check_causal_mask(fn)


# -- multi-head ---------------------------------------------------------------------------------


def multihead(x, w_q, w_k, w_v, w_o, n_head, *, scale_width=None, split="right", project=True):
    B, T, D = x.shape
    d_k = D // n_head
    outs = []
    for h in range(n_head):
        cols = slice(h * d_k, (h + 1) * d_k) if split == "right" else slice(h, D, n_head)
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]
        width = scale_width or d_k
        outs.append(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(width), -1) @ v)
    concat = torch.cat(outs, -1)
    return concat @ w_o if project else concat


def one_head(x, w_q, w_k, w_v, w_o, n_head):
    return multihead(x, w_q, w_k, w_v, w_o, 1)


def test_multihead_right():
    check_multihead(multihead)


@pytest.mark.parametrize(
    "fn,message",
    [
        (one_head, "one head over all of D"),
        (lambda *a: multihead(*a, scale_width=12), r"scale 1/sqrt\(D\)"),
        (lambda *a: multihead(*a, split="strided"), "split along the wrong axis"),
        (lambda *a: multihead(*a, project=False), "missing output projection"),
        (lambda *a: multihead(*a)[:, :, :6], r"shape \(B, T, D\) = \(2, 4, 12\)"),
        (lambda *a: multihead(*a) + 1, "match none of the common mistakes"),
    ],
)
def test_multihead_wrong(fn, message):
    with pytest.raises(AssertionError, match=message):
        check_multihead(fn)


# -- LayerNorm ----------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps=1e-5, dims=-1, unbiased=False, eps_inside=True, affine=True):
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, keepdim=True, unbiased=unbiased)
    z = (x - mean) / ((var + eps).sqrt() if eps_inside else var.sqrt() + eps)
    return z * gamma + beta if affine else z


def test_layer_norm_right():
    check_layer_norm(layer_norm)
    check_layer_norm(lambda x, g, b, eps=1e-5: torch.nn.functional.layer_norm(x, (6,), g, b, eps))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"dims": (0, 1)}, "BatchNorm's axes"),
        ({"dims": (1, 2)}, "whole sequence"),
        ({"unbiased": True}, "unbiased variance"),
        ({"eps_inside": False}, "eps outside the square root"),
        ({"affine": False}, "gamma and beta left out"),
    ],
)
def test_layer_norm_wrong(kwargs, message):
    with pytest.raises(AssertionError, match=message):
        check_layer_norm(lambda x, g, b, eps=1e-5: layer_norm(x, g, b, eps, **kwargs))


# -- positions ----------------------------------------------------------------------------------


def sinusoid(L, D, swap=False, halves=False, exponent=2):
    p = torch.arange(L, dtype=torch.float64)[:, None]
    angle = p / 10000 ** (exponent * torch.arange(D // 2) / D)
    first, second = (angle.cos(), angle.sin()) if swap else (angle.sin(), angle.cos())
    if halves:
        return torch.cat([first, second], -1)
    return torch.stack([first, second], -1).flatten(-2)


def test_sinusoidal_right():
    check_sinusoidal_encoding(sinusoid)
    check_sinusoidal_encoding(sinusoidal_encoding)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"swap": True}, "sin and cos swapped"),
        ({"halves": True}, "halves instead of interleaved"),
        ({"exponent": 1}, "exponent i/D"),
    ],
)
def test_sinusoidal_wrong(kwargs, message):
    with pytest.raises(AssertionError, match=message):
        check_sinusoidal_encoding(lambda L, D: sinusoid(L, D, **kwargs))


def rope(x, positions, sign=1.0, base=10000.0):
    d = x.shape[-1]
    angle = sign * positions[:, None].double() * base ** (-2 * torch.arange(d // 2) / d)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = angle.cos().float(), angle.sin().float()
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


def test_rope_right():
    check_rope(rope)
    check_rope(apply_rope)


@pytest.mark.parametrize(
    "fn,message",
    [
        (lambda x, p: rope(x, p, sign=-1.0), "wrong way round"),
        (lambda x, p: apply_rope(x, p, layout="half"), r"pairs \(i, i \+ d/2\)"),
        (lambda x, p: rope(x, p, base=100.0), "exponent i/d"),
        (lambda x, p: x, "match none of the common mistakes"),
    ],
)
def test_rope_wrong(fn, message):
    with pytest.raises(AssertionError, match=message):
        check_rope(fn)

"""check_sinusoidal_encoding and check_rope: correct styles pass, every mistake is named."""

import math
import re

import pytest
import torch

from tutorial_lib.checks import check_rope, check_sinusoidal_encoding
from tutorial_lib.checks.positional import _rope_repeat, _sinusoid
from tutorial_lib.positional import apply_rope, rope_layout_permutation, sinusoidal_encoding

# -- the sinusoidal encoding -----------------------------------------------------------------


def by_loops(max_len, d_model):
    pe = torch.zeros(max_len, d_model)
    for p in range(max_len):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            pe[p, 2 * i], pe[p, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return pe


def by_exp_log(max_len, d_model):
    """The Annotated Transformer's form: exp(-log(10000) * 2i / D)."""
    position = torch.arange(max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


SINUSOID_CORRECT = {
    "tutorial_lib": sinusoidal_encoding,
    "loops": by_loops,
    "exp-log": by_exp_log,
    "float64": lambda L, D: _sinusoid(L, D),
}


@pytest.mark.parametrize("name", list(SINUSOID_CORRECT))
def test_correct_sinusoidal_encodings_pass(name):
    assert check_sinusoidal_encoding(SINUSOID_CORRECT[name]) is None


def mistake(**kw):
    return lambda max_len, d_model: _sinusoid(max_len, d_model, **kw)


SINUSOID_WRONG = {
    "sin and cos swapped": (mistake(swap=True), r"sin and cos swapped"),
    "halves": (mistake(layout="halves"), r"halves instead of interleaved"),
    "exponent i/D": (mistake(exponent=1.0), r"exponent i/D"),
    "exponent 2(2i)/D": (mistake(exponent=4.0), r"exponent 2·\(2i\)/D"),
    "positions from 1": (mistake(first=1), r"positions start at 1"),
    "growing frequencies": (mistake(sign=1.0), r"frequencies growing"),
    "base 1000": (mistake(base=1000.0), r"wrong base 1000"),
    "base 100": (mistake(base=100.0), r"the same as base 100"),
    "base 100000": (mistake(base=1e5), r"wrong base 100000"),
    "transposed": (lambda L, D: sinusoidal_encoding(L, D).T, r"Transpose it"),
    "fixed size": (lambda L, D: sinusoidal_encoding(12, 8), r"should have shape"),
    "degrees": (
        lambda L, D: _sinusoid(L, D) * 0 + torch.sin(torch.deg2rad(torch.ones(L, D))),
        r"is off from",
    ),
}


@pytest.mark.parametrize("name", list(SINUSOID_WRONG))
def test_each_sinusoid_mistake_is_caught_and_named(name):
    fn, feedback = SINUSOID_WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_sinusoidal_encoding: ") as caught:
        check_sinusoidal_encoding(fn)
    assert re.search(feedback, str(caught.value)), str(caught.value)


# -- RoPE ----------------------------------------------------------------------------------


def rope_complex(x, positions):
    """RoFormer's complex form: pair (2i, 2i+1) as one complex number times e^{i m θ_i}."""
    d = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[:, None] * theta  # (T, d/2)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2)


def rope_matrices(x, positions):
    """One 2 x 2 rotation per pair and position, applied with einsum."""
    d = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.double()[:, None] * theta  # (T, d/2)
    c, s = angle.cos(), angle.sin()
    rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = x.double().unflatten(-1, (d // 2, 2))  # (..., T, d/2, 2)
    return torch.einsum("tpij,...tpj->...tpi", rot, pairs).flatten(-2)


def rope_via_half_layout(x, positions):
    """GPT-NeoX's layout, with the permutation that turns it into the paper's."""
    p = rope_layout_permutation(x.shape[-1])
    inverse = torch.argsort(p)
    return apply_rope(x[..., inverse], positions, layout="half")[..., p]


ROPE_CORRECT = {
    "tutorial_lib": apply_rope,
    "complex": rope_complex,
    "matrices": rope_matrices,
    "half layout, permuted": rope_via_half_layout,
}


@pytest.mark.parametrize("name", list(ROPE_CORRECT))
def test_correct_ropes_pass(name):
    assert check_rope(ROPE_CORRECT[name]) is None


ROPE_WRONG = {
    "positions ignored": (
        lambda x, p: apply_rope(x, torch.arange(x.shape[-2])),
        r"positions ignored",
    ),
    "wrong way round": (lambda x, p: apply_rope(x, -p), r"the wrong way round"),
    "GPT-NeoX pairs": (lambda x, p: apply_rope(x, p, layout="half"), r"pairs \(i, i \+ d/2\)"),
    ".repeat frequencies": (_rope_repeat, r"frequencies with \.repeat"),
    "exponent i/d": (lambda x, p: apply_rope(x, p, base=100.0), r"exponent i/d"),
    "off by one": (lambda x, p: apply_rope(x, p + 1), r"positions off by one"),
    "only 3-D inputs": (
        lambda x, p: apply_rope(x.view(-1, *x.shape[-2:])[0], p),
        r"should have shape",
    ),
    "no rotation": (lambda x, p: x.clone(), r"is off from"),
    "in place": (
        lambda x, p: x.mul_(1.0).add_(apply_rope(x, p) - x),
        r"changed its input x in place",
    ),
    "arguments swapped": (
        lambda positions, x: apply_rope(x, positions),
        r"raised ValueError: apply_rope turns pairs of a float x.*got a torch.int64 x",
    ),
}


@pytest.mark.parametrize("name", list(ROPE_WRONG))
def test_each_rope_mistake_is_caught_and_named(name):
    fn, feedback = ROPE_WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_rope: ") as caught:
        check_rope(fn)
    assert re.search(feedback, str(caught.value)), str(caught.value)

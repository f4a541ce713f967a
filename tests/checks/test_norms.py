"""check_layer_norm: correct styles pass, every common mistake is caught and named."""

import re

import pytest
import torch

from tutorial_lib.checks import check_layer_norm
from tutorial_lib.norms import LayerNorm


def by_hand(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def by_torch(x, gamma, beta, eps=1e-5):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)


def by_module(x, gamma, beta, eps=1e-5):
    layer = LayerNorm(x.shape[-1], eps=eps)
    with torch.no_grad():
        layer.weight.copy_(gamma)
        layer.bias.copy_(beta)
    return layer(x)


def by_loops(x, gamma, beta, eps=1e-5):
    out = torch.empty_like(x)
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            token = x[b, t]
            out[b, t] = (token - token.mean()) / (
                token.var(unbiased=False) + eps
            ).sqrt() * gamma + beta
    return out


def in_float64(x, gamma, beta, eps=1e-5):
    return by_hand(x.double(), gamma.double(), beta.double(), eps)


CORRECT = {
    "by hand": by_hand,
    "torch": by_torch,
    "module": by_module,
    "loops": by_loops,
    "float64": in_float64,
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_layer_norms_pass(name):
    assert check_layer_norm(CORRECT[name]) is None


def norm(
    dims=(-1,), unbiased=False, eps_mode="inside", affine="gamma, beta", centre=True, fixed_eps=None
):
    def fn(x, gamma, beta, eps=1e-5):
        eps = fixed_eps if fixed_eps is not None else eps
        mean = x.mean(dims, keepdim=True) if centre else 0.0
        var = (
            x.var(dims, keepdim=True, unbiased=unbiased)
            if centre
            else x.pow(2).mean(dims, keepdim=True)
        )
        if eps_mode == "inside":
            z = (x - mean) / (var + eps).sqrt()
        elif eps_mode == "outside":
            z = (x - mean) / (var.sqrt() + eps)
        else:
            z = (x - mean) / var.sqrt()
        if affine == "gamma, beta":
            return z * gamma + beta
        if affine == "swapped":
            return z * beta + gamma
        if affine == "none":
            return z
        return z * gamma if affine == "gamma only" else z + beta

    return fn


WRONG = {
    "BatchNorm's axes": (norm(dims=(0, 1)), r"BatchNorm's axes"),
    "over the batch": (norm(dims=(0,)), r"statistics over the batch:|statistics over the batch "),
    "over the positions": (norm(dims=(1,)), r"statistics over the positions"),
    "over the whole sequence": (norm(dims=(1, 2)), r"over the whole sequence"),
    "unbiased variance": (norm(unbiased=True), r"unbiased variance"),
    "eps outside the root": (norm(eps_mode="outside"), r"eps outside the square root"),
    "eps dropped": (norm(eps_mode="none"), r"eps left out or ignored"),
    "eps argument ignored": (norm(fixed_eps=1e-5), r"eps left out or ignored"),
    "RMSNorm": (norm(centre=False), r"that is RMSNorm"),
    "gamma and beta swapped": (norm(affine="swapped"), r"gamma and beta swapped"),
    "no affine": (norm(affine="none"), r"gamma and beta left out"),
    "no beta": (norm(affine="gamma only"), r"beta left out"),
    "no gamma": (norm(affine="beta only"), r"gamma left out"),
    "residual added": (
        lambda x, gamma, beta, eps=1e-5: x + by_hand(x, gamma, beta, eps),
        r"residual added",
    ),
    "no eps parameter": (lambda x, gamma, beta: by_hand(x, gamma, beta), r"cannot be called"),
    "a list back": (
        lambda x, gamma, beta, eps=1e-5: by_hand(x, gamma, beta, eps).tolist(),
        r"should be a torch.Tensor",
    ),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_each_mistake_is_caught_and_named(name):
    fn, feedback = WRONG[name]
    with pytest.raises(AssertionError, match=r"^check_layer_norm: ") as caught:
        check_layer_norm(fn)
    assert re.search(feedback, str(caught.value)), str(caught.value)

"""Fuzz entries for tutorial_lib.norms."""

import math

import torch
from hypothesis import strategies as st

from tests.fuzz.harness import (
    FLOATS,
    Call,
    Param,
    Registry,
    Spec,
    holds,
    sizes,
    tensor,
)
from tutorial_lib import norms as N

REGISTRY = Registry()
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt
POSITIVE = Param("int", minimum=1)
spec, illegal = REGISTRY.spec, REGISTRY.illegal


# -- norms ------------------------------------------------------------------------------------


def padded_tokens(draw, D, dtype=None):
    B, T = sizes(draw, 2, 1, 5)
    x = tensor(
        draw,
        B,
        T,
        D,
        dtype=dtype or draw(st.sampled_from(FLOATS)),
        scale=draw(st.sampled_from([0.1, 1.0, 300.0])),
    )
    lengths = torch.tensor([draw(st.integers(1, T)) for _ in range(B)])
    mask = draw(st.sampled_from([None, torch.arange(T) < lengths[:, None]]))
    if mask is not None and draw(st.booleans()):  # padding may hold anything, even NaN
        x = torch.where(
            mask[..., None],
            x,
            torch.tensor(draw(st.sampled_from([math.nan, math.inf, 1e4])), dtype=x.dtype),
        )
    return x, mask


def norm_check(x, mask):
    def check(out, kw):
        assert out.shape == x.shape and out.dtype == x.dtype
        real = out if mask is None else out[mask]
        assert torch.isfinite(real).all(), "a real token's output is not finite"

    return check


def bad_norm_inputs(draw, D):
    x = tensor(draw, 2, 3, D)
    options = [
        ((x[0], None), ("x",)),
        ((tensor(draw, 2, 3, D + 1), None), ("x", "D")),
        ((x.long(), None), ("x",)),
        ((x.tolist(), None), ("x",)),
        ((x, torch.ones(2, 3)), ("mask",)),
        ((x, torch.ones(2, 4, dtype=torch.bool)), ("mask",)),
        ((x, torch.ones(2, 3, 1, dtype=torch.bool)), ("mask",)),
    ]
    return draw(st.sampled_from(options))


def norm_spec(name, params, make_kwargs, finite_padding):
    cls = getattr(N, name.split(".")[-1])

    def legal(draw):
        D = draw(st.integers(1, 6))
        kwargs = make_kwargs(draw, D)
        x, mask = padded_tokens(draw, D)
        training = draw(st.booleans())
        if (
            cls is N.BatchNorm
            and training
            and (x.shape[0] * x.shape[1] < 2 or (mask is not None and mask.sum() < 2))
        ):
            training = False  # one token has no variance: a separate illegal case

        def function(x, mask, **kwargs):
            layer = cls(**kwargs).to(draw_dtype).train(training)
            return layer(x, mask)

        draw_dtype = draw(st.sampled_from([x.dtype, torch.float32]))
        if not finite_padding and mask is None:
            x = torch.nan_to_num(x)
        return Call(function, {"x": x, "mask": mask, **kwargs}, norm_check(x, mask))

    def illegal_call(draw):
        (x, mask), names = bad_norm_inputs(draw, 4)
        return Call(lambda x, mask: cls(4)(x, mask), {"x": x, "mask": mask}), names

    SPECS[name] = Spec(legal, params=params, illegal=illegal_call)


EPS = Param("real", above=0)
norm_spec(
    "norms.LayerNorm",
    {"d_model": POSITIVE, "eps": EPS, "elementwise_affine": Param("bool")},
    lambda draw, D: {
        "d_model": D,
        "eps": draw(st.floats(1e-12, 1.0)),
        "elementwise_affine": draw(st.booleans()),
    },
    True,
)
norm_spec(
    "norms.RMSNorm",
    {"d_model": POSITIVE, "eps": EPS, "elementwise_affine": Param("bool")},
    lambda draw, D: {
        "d_model": D,
        "eps": draw(st.floats(1e-12, 1.0)),
        "elementwise_affine": draw(st.booleans()),
    },
    True,
)
norm_spec(
    "norms.BatchNorm",
    {
        "d_model": POSITIVE,
        "momentum": Param("real", minimum=0, maximum=1, optional=True),
        "eps": EPS,
        "affine": Param("bool"),
        "track_running_stats": Param("bool"),
    },
    lambda draw, D: {
        "d_model": D,
        "momentum": draw(st.one_of(st.none(), st.floats(0, 1))),
        "eps": draw(st.floats(1e-12, 1.0)),
        "affine": draw(st.booleans()),
        "track_running_stats": draw(st.booleans()),
    },
    True,
)


@spec("norms.BatchNorm.batch_statistics")
def _(draw):
    D = draw(st.integers(1, 5))
    x, mask = padded_tokens(draw, D)
    layer = N.BatchNorm(D)

    def check(result, kw):
        mean, var, n = result
        assert mean.shape == var.shape == (D,) and (var >= 0).all()
        assert n == (x.shape[0] * x.shape[1] if mask is None else int(mask.sum()))

    return Call(layer.batch_statistics, {"x": x, "mask": mask}, check)


@illegal("norms.BatchNorm.batch_statistics")
def _(draw):
    (x, mask), names = bad_norm_inputs(draw, 4)
    if draw(st.booleans()):
        x, mask, names = tensor(draw, 2, 3, 4), torch.zeros(2, 3, dtype=torch.bool), ("mask",)
    return Call(N.BatchNorm(4).batch_statistics, {"x": x, "mask": mask}), names


for _cls in ("LayerNorm", "RMSNorm", "BatchNorm"):
    _target = getattr(N, _cls)
    SPECS[f"norms.{_cls}.extra_repr"] = Spec(
        lambda draw, cls=_target: Call(
            cls(draw(st.integers(1, 9))).extra_repr, {}, holds(lambda r: "d_model=" in r)
        )
    )

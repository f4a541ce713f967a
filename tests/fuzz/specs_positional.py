"""Fuzz entries for tutorial_lib.positional: absolute encodings, score biases, rotations."""

import math

import numpy as np
import torch
from hypothesis import strategies as st

from tests.fuzz.harness import (
    FLOATS,
    Call,
    Param,
    Registry,
    Spec,
    as_any_integer,
    close_enough,
    holds,
    sizes,
    tensor,
)
from tutorial_lib import positional as P
from tutorial_lib.attention import MultiHeadAttention, causal_mask
from tutorial_lib.validate import broadcast_shape

REGISTRY = Registry(
    {
        "positional.absolute.AbsolutePositionalEncoding": "an interface; its variants are fuzzed",
        "positional.bias.ScoreBias": "an interface; its variants are fuzzed",
        "positional.rotation.Rotation": "an interface; its variants are fuzzed",
    }
)
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt
BASE = Param("real", above=0)
EVEN = Param("even", minimum=1)

spec, illegal = REGISTRY.spec, REGISTRY.illegal


def base(draw):
    return draw(st.one_of(st.floats(1e-3, 1e6), st.sampled_from([10000.0, np.float64(500.0), 2])))


# -- absolute ---------------------------------------------------------------------------------


@spec("positional.absolute.sinusoidal_frequencies", params={"d_model": EVEN, "base": BASE})
def _(draw):
    D = 2 * draw(st.integers(1, 16))
    return Call(
        P.sinusoidal_frequencies,
        {"d_model": as_any_integer(draw, D), "base": base(draw)},
        holds(lambda r: r.shape == (D // 2,) and (r > 0).all()),
    )


@spec(
    "positional.absolute.sinusoidal_encoding",
    params={"max_len": Param("int", minimum=0), "d_model": EVEN, "base": BASE},
)
def _(draw):
    T, D = draw(st.integers(0, 40)), 2 * draw(st.integers(1, 8))

    def check(pe, kw):
        assert pe.shape == (T, D) and pe.dtype == torch.float32 and (pe.abs() <= 1).all()

    return Call(P.sinusoidal_encoding, {"max_len": T, "d_model": D, "base": base(draw)}, check)


@spec(
    "positional.absolute.sinusoidal_shift_matrix",
    params={"k": Param("real"), "d_model": EVEN, "base": BASE},
)
def _(draw):
    D = 2 * draw(st.integers(1, 8))

    def check(m, kw):  # a rotation: orthogonal
        torch.testing.assert_close(m @ m.T, torch.eye(D, dtype=torch.float64))

    return Call(
        P.sinusoidal_shift_matrix,
        {"k": draw(st.floats(-1e3, 1e3)), "d_model": D, "base": base(draw)},
        check,
    )


def embeddings(draw, D):
    B, T = sizes(draw, 2, 1, 5)
    return tensor(draw, B, T, D, dtype=draw(st.sampled_from(FLOATS)))


def bad_embeddings(draw, D):
    x = tensor(draw, 2, 3, D)
    return draw(
        st.sampled_from([x[0], x[..., :-1] if D > 1 else x[..., :0], x.long(), x.tolist(), x[None]])
    )


@spec(
    "positional.absolute.SinusoidalPositionalEncoding",
    params={"d_model": EVEN, "base": BASE, "max_len": Param("int", minimum=0)},
)
def _(draw):
    D = 2 * draw(st.integers(1, 4))
    x = embeddings(draw, D)

    def function(d_model, base, max_len, x):
        return P.SinusoidalPositionalEncoding(d_model, base, max_len).to(x.dtype)(x)

    def check(out, kw):
        assert out.shape == x.shape and out.dtype == x.dtype
        expected = x.double() + P.sinusoidal_encoding(x.shape[1], D, kw["base"]).double()
        tolerance = close_enough(x.dtype)
        torch.testing.assert_close(out.double(), expected, rtol=tolerance, atol=tolerance)

    return Call(
        function,
        {"d_model": D, "base": base(draw), "max_len": draw(st.integers(0, 6)), "x": x},
        check,
    )


@illegal("positional.absolute.SinusoidalPositionalEncoding")
def _(draw):
    return Call(lambda x: P.SinusoidalPositionalEncoding(4)(x), {"x": bad_embeddings(draw, 4)}), (
        "x",
    )


@spec(
    "positional.absolute.LearnedPositionalEmbedding",
    params={
        "max_len": Param("int", minimum=1),
        "d_model": Param("int", minimum=1),
        "init_std": Param("real", minimum=0),
    },
)
def _(draw):
    D = draw(st.integers(1, 6))
    x = embeddings(draw, D)

    def function(max_len, d_model, init_std, x):
        return P.LearnedPositionalEmbedding(max_len, d_model, init_std).to(x.dtype)(x)

    kwargs = {
        "max_len": x.shape[1] + draw(st.integers(0, 3)),
        "d_model": D,
        "init_std": draw(st.floats(0, 1)),
        "x": x,
    }
    return Call(function, kwargs, holds(lambda r: r.shape == x.shape and r.dtype == x.dtype))


@illegal("positional.absolute.LearnedPositionalEmbedding")
def _(draw):
    if draw(st.booleans()):  # longer than the table
        return Call(
            lambda x: P.LearnedPositionalEmbedding(2, 4)(x), {"x": tensor(draw, 1, 3, 4)}
        ), ("max_len",)
    return Call(lambda x: P.LearnedPositionalEmbedding(8, 4)(x), {"x": bad_embeddings(draw, 4)}), (
        "x",
    )


def encoding_spec(name, make, limit):
    def legal(draw):
        module = make()
        T = draw(st.integers(0, limit))
        return Call(
            module.encoding, {"T": as_any_integer(draw, T)}, holds(lambda r: r.shape == (T, 4))
        )

    SPECS[name] = Spec(legal, params={"T": Param("int", minimum=0)})


encoding_spec(
    "positional.absolute.SinusoidalPositionalEncoding.encoding",
    lambda: P.SinusoidalPositionalEncoding(4, max_len=3),
    9,
)
encoding_spec(
    "positional.absolute.LearnedPositionalEmbedding.encoding",
    lambda: P.LearnedPositionalEmbedding(6, 4),
    6,
)
# The interface's method, reached through every variant.
encoding_spec(
    "positional.absolute.AbsolutePositionalEncoding.encoding",
    lambda: np.random.default_rng(0).choice(
        [P.SinusoidalPositionalEncoding(4), P.LearnedPositionalEmbedding(6, 4)]
    ),
    6,
)


# -- biases -----------------------------------------------------------------------------------


def qk_heads(draw, H, d_k, dtype=None):
    dtype = dtype or draw(st.sampled_from(FLOATS))
    lead = sizes(draw, draw(st.integers(0, 1)), 1, 3)
    T_q = draw(st.integers(1, 5))
    T_k = draw(st.integers(T_q, 6))
    return tensor(draw, *lead, H, T_q, d_k, dtype=dtype), tensor(
        draw, *lead, H, T_k, d_k, dtype=dtype
    )


def fits_the_scores(q, k):
    def check(bias, kw):
        scores = (*q.shape[:-1], k.shape[-2])
        assert broadcast_shape(bias.shape, scores) == scores, (
            f"bias {tuple(bias.shape)} vs scores {scores}"
        )
        assert bias.dtype == q.dtype

    return check


def bias_spec(name, make, params, heads=True):
    """make(draw, H, d_k) -> (constructor kwargs). The call builds the bias and applies it."""
    cls = getattr(P, name.rsplit(".", 1)[1])

    def legal(draw):
        H, d_k = draw(st.integers(1, 4)), 2 * draw(st.integers(1, 3))
        kwargs = make(draw, H, d_k)
        q, k = qk_heads(draw, H, d_k)
        scale = draw(st.floats(0.1, 2))

        def function(q, k, scale, **kwargs):
            return cls(**kwargs).to(q.dtype)(q, k, scale)

        return Call(function, {"q": q, "k": k, "scale": scale, **kwargs}, fits_the_scores(q, k))

    def illegal_call(draw):
        H, d_k = draw(st.integers(2, 4)), 4
        module = cls(**make(draw, H, d_k))
        q, k = qk_heads(draw, H, d_k, torch.float32)
        options = [
            ((k, q, 1.0), ("T_q",)) if k.shape[-2] > q.shape[-2] else ((q, k, "x"), ("scale",)),
            ((q.long(), k, 1.0), ("q",)),
            ((q, k[..., :-1], 1.0), ("d_k",)),
            ((q, k, math.nan), ("scale",)),
        ]
        if heads:
            options += [
                ((q[..., :1, :, :], k[..., :1, :, :], 1.0), ("H",)),
                ((q[0, 0] if q.dim() > 3 else q[0], k, 1.0), ("q", "H")),
            ]
        args, names = draw(st.sampled_from(options))
        return Call(
            lambda q, k, scale: module(q, k, scale),
            dict(zip(["q", "k", "scale"], args, strict=True)),
        ), names

    SPECS[name] = Spec(legal, params=params, illegal=illegal_call, examples=10)


bias_spec(
    "positional.bias.ShawRelativePosition",
    lambda draw, H, d_k: {
        "d_k": d_k,
        "d_v": draw(st.integers(1, 4)),
        "max_relative_position": draw(st.integers(0, 4)),
        "init_std": draw(st.floats(0, 1)),
    },
    {
        "d_k": Param("int", minimum=1),
        "d_v": Param("int", minimum=1),
        "max_relative_position": Param("int", minimum=0),
        "init_std": Param("real", minimum=0),
    },
    heads=False,
)
bias_spec(
    "positional.bias.TransformerXLRelativePosition",
    lambda draw, H, d_k: {
        "n_head": H,
        "d_k": d_k,
        "d_pos": draw(st.sampled_from([None, 2, 6])),
        "base": base(draw),
    },
    {
        "n_head": Param("int", minimum=1, aliases=("H",)),
        "d_k": Param("int", minimum=1),
        "d_pos": Param("even", minimum=1, optional=True),
        "base": BASE,
    },
)
bias_spec(
    "positional.bias.T5RelativeBias",
    lambda draw, H, d_k: {
        "n_head": H,
        "bidirectional": draw(st.booleans()),
        "num_buckets": draw(st.integers(4, 40)),
        "max_distance": draw(st.integers(11, 200)),
        "init_std": 0.02,
    },
    {
        "n_head": Param("int", minimum=1, aliases=("H",)),
        "bidirectional": Param("bool"),
        "num_buckets": Param("int", minimum=4),
        "max_distance": Param("int", minimum=21),
        "init_std": Param("real", minimum=0),
    },
)
bias_spec(
    "positional.bias.ALiBiBias",
    lambda draw, H, d_k: {"n_head": H, "causal": draw(st.booleans())},
    {"n_head": Param("int", minimum=1, aliases=("H",)), "causal": Param("bool")},
)


@spec("positional.bias.ShawRelativePosition.index")
def _(draw):
    K = draw(st.integers(0, 4))
    T_q = draw(st.integers(1, 5))
    T_k = draw(st.integers(T_q, 7))
    module = P.ShawRelativePosition(2, 2, K)

    def check(index, kw):
        assert index.shape == (T_q, T_k) and index.min() >= 0 and index.max() <= 2 * K

    return Call(module.index, {"T_q": T_q, "T_k": T_k}, check)


@illegal("positional.bias.ShawRelativePosition.index")
def _(draw):
    T_q, T_k = draw(st.sampled_from([(3, 2), (0, 2), (2.0, 3), (True, 2)]))
    return Call(P.ShawRelativePosition(2, 2, 1).index, {"T_q": T_q, "T_k": T_k}), ("T_q",)


def attention_weights(draw, dtype=None):
    T_q = draw(st.integers(1, 4))
    T_k = draw(st.integers(T_q, 5))
    lead = sizes(draw, draw(st.integers(0, 2)), 1, 3)
    scores = tensor(draw, *lead, T_q, T_k, dtype=dtype or draw(st.sampled_from(FLOATS)))
    return torch.softmax(scores, -1)


@spec("positional.bias.ShawRelativePosition.value_term")
def _(draw):
    weights = attention_weights(draw)
    d_v = draw(st.integers(1, 4))
    module = P.ShawRelativePosition(2, d_v, draw(st.integers(0, 3))).to(weights.dtype)
    return Call(
        module.value_term,
        {"weights": weights},
        holds(lambda r: r.shape == (*weights.shape[:-1], d_v)),
    )


@illegal("positional.bias.ShawRelativePosition.value_term")
def _(draw):
    bad = draw(
        st.sampled_from(
            [torch.ones(3), torch.ones(2, 3, 2), torch.ones(2, 2, dtype=torch.long), [[1.0]]]
        )
    )
    return Call(P.ShawRelativePosition(2, 2, 1).value_term, {"weights": bad}), ("weights", "T_q")


@spec("positional.bias.ScoreBias.value_term")
def _(draw):
    module = draw(
        st.sampled_from(
            [P.ALiBiBias(2), P.T5RelativeBias(2), P.TransformerXLRelativePosition(2, 2)]
        )
    )
    return Call(module.value_term, {"weights": attention_weights(draw)}, holds(lambda r: r is None))


@spec(
    "positional.bias.relative_position",
    params={"T_q": Param("int", minimum=1), "T_k": Param("int", minimum=1)},
)
def _(draw):
    T_q = draw(st.integers(1, 5))
    T_k = draw(st.integers(T_q, 7))

    def check(rel, kw):
        assert (
            rel.shape == (T_q, T_k) and rel[-1, -1] == 0 and (rel[:, 1:] - rel[:, :-1] == 1).all()
        )

    return Call(P.relative_position, {"T_q": T_q, "T_k": as_any_integer(draw, T_k)}, check)


@illegal("positional.bias.relative_position")
def _(draw):
    T_k = draw(st.integers(1, 4))
    return Call(P.relative_position, {"T_q": T_k + draw(st.integers(1, 3)), "T_k": T_k}), ("T_q",)


@spec("positional.bias.relative_shift", params={"T_k": Param("int", minimum=1)})
def _(draw):
    T_q = draw(st.integers(1, 4))
    T_k = draw(st.integers(T_q, 6))
    lead = sizes(draw, draw(st.integers(0, 2)), 1, 3)
    full = tensor(draw, *lead, T_q, T_q + T_k - 1, dtype=draw(st.sampled_from(FLOATS)))

    def check(out, kw):  # entry (i, j) is the column for distance (T_k - T_q + i) - j
        i, j = torch.arange(T_q)[:, None], torch.arange(T_k)[None]
        column = (T_k - 1 - ((T_k - T_q + i) - j)).expand(*lead, T_q, T_k)
        assert torch.equal(out, full.gather(-1, column))

    return Call(P.relative_shift, {"full": full, "T_k": T_k}, check)


@illegal("positional.bias.relative_shift")
def _(draw):
    full, T_k = draw(
        st.sampled_from(
            [
                (torch.ones(2, 3, 5), 4),
                (torch.ones(5), 3),
                (torch.ones(2, 3, 4, dtype=torch.long), 2),
            ]
        )
    )
    return Call(P.relative_shift, {"full": full, "T_k": T_k}), ("full", "T_q")


def xl_call(draw):
    H, d_k = draw(st.integers(1, 3)), 2 * draw(st.integers(1, 2))
    q, k = qk_heads(draw, H, d_k)
    return P.TransformerXLRelativePosition(H, d_k).to(q.dtype), q, k


@spec("positional.bias.TransformerXLRelativePosition.position_terms")
def _(draw):
    module, q, k = xl_call(draw)
    return Call(
        module.position_terms,
        {"q": q, "k": k, "scale": 0.5},
        holds(lambda r: r.shape == (*q.shape[:-1], k.shape[-2])),
    )


@spec("positional.bias.TransformerXLRelativePosition.four_terms")
def _(draw):
    module, q, k = xl_call(draw)

    def check(terms, kw):  # the four terms add up to the score the bias makes, plus q k^T
        if q.dtype in (torch.float32, torch.float64):
            total = sum(terms.values()) * 0.5
            torch.testing.assert_close(total, q @ k.transpose(-2, -1) * 0.5 + module(q, k, 0.5))

    return Call(module.four_terms, {"q": q, "k": k}, check)


for _name in ("position_terms", "four_terms"):

    def _illegal(draw, name=_name):
        module = P.TransformerXLRelativePosition(2, 4)
        q, k = qk_heads(draw, 2, 4, torch.float32)
        options = [
            ((k, q), ("T_q",)) if k.shape[-2] > q.shape[-2] else ((q[..., :1, :, :], k), ("H",)),
            ((q[..., :2], k[..., :2]), ("d_k",)),
            ((q.long(), k), ("q",)),
        ]
        (qq, kk), names = draw(st.sampled_from(options))
        kwargs = {"q": qq, "k": kk} | ({"scale": 1.0} if name == "position_terms" else {})
        return Call(getattr(module, name), kwargs), names

    SPECS[f"positional.bias.TransformerXLRelativePosition.{_name}"].illegal = _illegal


@spec("positional.bias.TransformerXLRelativePosition.projected")
def _(draw):
    H, d_k = draw(st.integers(1, 3)), 2
    distances = draw(
        st.sampled_from([torch.arange(-3, 4), torch.tensor([0.5, -2.0]), torch.arange(0)])
    )
    module = P.TransformerXLRelativePosition(H, d_k)
    return Call(
        module.projected,
        {"distances": distances},
        holds(lambda r: r.shape == (H, len(distances), d_k)),
    )


@illegal("positional.bias.TransformerXLRelativePosition.projected")
def _(draw):
    bad = draw(
        st.sampled_from(
            [torch.tensor([math.nan]), torch.ones(2, 2), [1, 2], torch.ones(2, dtype=torch.bool)]
        )
    )
    return Call(P.TransformerXLRelativePosition(2, 2).projected, {"distances": bad}), ("distances",)


@spec(
    "positional.bias.t5_relative_bucket",
    params={
        "bidirectional": Param("bool"),
        "num_buckets": Param("int", minimum=4),
        "max_distance": Param("int", minimum=21),
    },
)
def _(draw):
    n = draw(st.integers(4, 64))
    relative = draw(
        st.sampled_from(
            [torch.arange(-300, 300), list(range(-5, 5)), torch.arange(-3, 3, dtype=torch.int32)]
        )
    )

    def check(buckets, kw):
        assert buckets.dtype == torch.long and buckets.min() >= 0 and buckets.max() < n

    kwargs = {
        "relative_position": relative,
        "bidirectional": draw(st.booleans()),
        "num_buckets": n,
        "max_distance": draw(st.integers(n // 2 + 1, 500)),
    }
    return Call(P.t5_relative_bucket, kwargs, check)


@illegal("positional.bias.t5_relative_bucket")
def _(draw):
    bad = draw(st.sampled_from([torch.arange(3.0), torch.ones(2, dtype=torch.bool), "12", [0.5]]))
    return Call(P.t5_relative_bucket, {"relative_position": bad}), ("relative_position",)


@spec("positional.bias.T5RelativeBias.buckets")
def _(draw):
    module = P.T5RelativeBias(2, draw(st.booleans()), 8, 20)
    T_q = draw(st.integers(1, 5))
    T_k = draw(st.integers(T_q, 9))
    return Call(
        module.buckets,
        {"T_q": T_q, "T_k": T_k},
        holds(lambda r: r.shape == (T_q, T_k) and r.max() < 8),
    )


@illegal("positional.bias.T5RelativeBias.buckets")
def _(draw):
    T_q, T_k = draw(st.sampled_from([(3, 2), (0, 2), (2.5, 3)]))
    return Call(P.T5RelativeBias(2).buckets, {"T_q": T_q, "T_k": T_k}), ("T_q",)


@spec("positional.bias.alibi_slopes", params={"n_head": Param("int", minimum=1)})
def _(draw):
    H = draw(st.integers(1, 64))

    def check(slopes, kw):
        assert slopes.shape == (H,) and (slopes > 0).all() and (slopes < 1).all()
        assert len(set(slopes.tolist())) == H

    return Call(P.alibi_slopes, {"n_head": as_any_integer(draw, H)}, check)


# -- rotations --------------------------------------------------------------------------------


@spec(
    "positional.rotation.apply_rope",
    params={"base": BASE, "layout": Param("choice", options=("interleaved", "half"))},
)
def _(draw):
    lead = sizes(draw, draw(st.integers(0, 2)), 1, 3)
    T, d = draw(st.integers(1, 5)), 2 * draw(st.integers(1, 4))
    x = tensor(draw, *lead, T, d, dtype=draw(st.sampled_from(FLOATS)))
    rows = (*lead, T)
    shape = draw(st.sampled_from(["T", "full", "ones", "scalar", "list"]))
    if shape == "full":
        positions = tensor(draw, *rows, scale=5.0)
    elif shape == "ones":
        positions = tensor(draw, *[draw(st.sampled_from([1, n])) for n in rows[:-1]], T, scale=5.0)
        if (
            2 <= positions.dim() < len(rows)
            and positions.shape[0] == rows[0] == rows[-positions.dim()] > 1
        ):
            positions = positions[None]
    elif shape == "scalar":
        positions = torch.tensor(draw(st.integers(-100, 100)))
    else:
        positions = torch.arange(T) if shape == "T" else list(range(T))

    def check(out, kw):  # a rotation keeps every pair's length
        assert out.shape == x.shape and out.dtype == x.dtype
        tolerance = close_enough(x.dtype) * 10
        torch.testing.assert_close(
            out.double().norm(dim=-1), x.double().norm(dim=-1), rtol=tolerance, atol=tolerance
        )

    kwargs = {
        "x": x,
        "positions": positions,
        "base": base(draw),
        "layout": draw(st.sampled_from(["interleaved", "half"])),
    }
    return Call(P.apply_rope, kwargs, check)


@illegal("positional.rotation.apply_rope")
def _(draw):
    B, T = draw(st.integers(2, 3)), draw(st.integers(1, 4))
    x4 = tensor(draw, B, B, T, 4)
    options = [
        ((tensor(draw, T, 4), torch.arange(T).expand(2, T)), ("positions",)),  # would enlarge x
        ((x4, torch.arange(T).expand(B, T)), ("positions",)),  # (B, T) on (B, H, T, d), B = H
        ((x4, torch.arange(T + 1)), ("positions",)),
        ((x4, torch.full((T,), math.nan)), ("positions",)),
        ((x4, torch.ones(T, dtype=torch.bool)), ("positions",)),
        ((x4.long(), torch.arange(T)), ("x",)),
        ((tensor(draw, T, 3), torch.arange(T)), ("d",)),
        ((tensor(draw, 4), torch.arange(1)), ("x",)),
    ]
    (x, positions), names = draw(st.sampled_from(options))
    return Call(P.apply_rope, {"x": x, "positions": positions}), names


@spec("positional.rotation.rope_layout_permutation", params={"d": EVEN})
def _(draw):
    d = 2 * draw(st.integers(1, 32))
    return Call(
        P.rope_layout_permutation, {"d": d}, holds(lambda r: sorted(r.tolist()) == list(range(d)))
    )


def rotation_spec(name, make, params):
    cls = getattr(P, name.rsplit(".", 1)[1])

    def legal(draw):
        kwargs = make(draw)
        q, k = qk_heads(draw, draw(st.integers(1, 3)), 2 * draw(st.integers(1, 3)))

        def function(q, k, scale, **kwargs):
            return cls(**kwargs)(q, k, scale)

        def check(scores, kw):
            assert scores.shape == (*q.shape[:-1], k.shape[-2]) and scores.dtype == q.dtype

        return Call(function, {"q": q, "k": k, "scale": draw(st.floats(0.1, 2)), **kwargs}, check)

    def illegal_call(draw):
        module = cls(**make(draw))
        q, k = qk_heads(draw, 2, 4, torch.float32)
        options = [
            ((q[..., :3], k[..., :3], 1.0), ("d",)),
            ((q, k[..., :2], 1.0), ("d_k",)),
            ((q.long(), k, 1.0), ("q",)),
            ((q, k, math.inf), ("scale",)),
        ]
        if k.shape[-2] > q.shape[-2]:
            options.append(((k, q, 1.0), ("T_q",)))
        args, names = draw(st.sampled_from(options))
        return Call(
            lambda q, k, scale: module(q, k, scale),
            dict(zip(["q", "k", "scale"], args, strict=True)),
        ), names

    SPECS[name] = Spec(legal, params=params, illegal=illegal_call)


rotation_spec(
    "positional.rotation.RoPE",
    lambda draw: {"base": base(draw), "layout": draw(st.sampled_from(["interleaved", "half"]))},
    {"base": BASE, "layout": Param("choice", options=("interleaved", "half"))},
)
rotation_spec(
    "positional.rotation.ReRoPE",
    lambda draw: {
        "window": draw(st.integers(1, 6)),
        "leaky": draw(st.one_of(st.none(), st.floats(1, 64))),
        "base": base(draw),
    },
    {
        "window": Param("int", minimum=1),
        "leaky": Param("real", minimum=1, optional=True),
        "base": BASE,
    },
)


@spec(
    "positional.rotation.rerope_positions",
    params={"window": Param("int", minimum=1), "leaky": Param("real", minimum=1, optional=True)},
)
def _(draw):
    distance = draw(
        st.sampled_from([-P.relative_position(4, 6), torch.arange(-3, 9) * 0.5, list(range(5))])
    )
    window, leaky = draw(st.integers(1, 6)), draw(st.one_of(st.none(), st.floats(1, 64)))

    def check(result, kw):
        d = torch.as_tensor(distance, dtype=torch.float64)
        assert result.shape == d.shape
        assert (
            torch.equal(result[d < window], d[d < window]) and (result[d >= window] >= window).all()
        )

    return Call(P.rerope_positions, {"distance": distance, "window": window, "leaky": leaky}, check)


@illegal("positional.rotation.rerope_positions")
def _(draw):
    bad = draw(st.sampled_from([torch.tensor([math.nan]), "12", torch.ones(2, dtype=torch.bool)]))
    return Call(P.rerope_positions, {"distance": bad, "window": 2}), ("distance",)


# -- plugging in ------------------------------------------------------------------------------


def parts(draw, H, d_k):
    choice = draw(
        st.sampled_from(["none", "shaw", "xl", "t5", "alibi", "rope", "rerope", "alibi+rope"])
    )
    bias = {
        "shaw": lambda: P.ShawRelativePosition(d_k, d_k, 2),
        "xl": lambda: P.TransformerXLRelativePosition(H, d_k),
        "t5": lambda: P.T5RelativeBias(H),
        "alibi": lambda: P.ALiBiBias(H),
        "alibi+rope": lambda: P.ALiBiBias(H),
    }.get(choice, lambda: None)()
    rotation = {"rope": P.RoPE, "rerope": lambda: P.ReRoPE(2), "alibi+rope": P.RoPE}.get(
        choice, lambda: None
    )()
    return bias, rotation


@spec(
    "positional.PositionalAttention",
    params={
        "temperature": Param("real", above=0),
        "attn_dropout": Param("real", minimum=0, maximum=1),
    },
)
def _(draw):
    H, d_k = draw(st.integers(1, 3)), 2 * draw(st.integers(1, 2))
    bias, rotation = parts(draw, H, d_k)
    q, k = qk_heads(draw, H, d_k)
    v = tensor(draw, *k.shape, dtype=q.dtype)
    mask = causal_mask(q.shape[-2], k.shape[-2]) if draw(st.booleans()) else None

    def function(temperature, attn_dropout, q, k, v, mask):
        module = P.PositionalAttention(temperature, attn_dropout, bias, rotation).to(q.dtype)
        return module(q, k, v, mask)

    def check(result, kw):
        out, weights = result
        assert out.shape == v.shape[:-2] + (q.shape[-2], d_k) and out.dtype == q.dtype
        assert weights.shape == (*q.shape[:-1], k.shape[-2])

    kwargs = {
        "temperature": draw(st.floats(0.5, 8)),
        "attn_dropout": 0.0,
        "q": q,
        "k": k,
        "v": v,
        "mask": mask,
    }
    return Call(function, kwargs, check)


@illegal("positional.PositionalAttention")
def _(draw):
    bad = draw(
        st.sampled_from(
            [
                ({"bias": P.RoPE()}, ("bias",)),
                ({"rotation": P.ALiBiBias(2)}, ("rotation",)),
                ({"bias": "alibi"}, ("bias",)),
            ]
        )
    )
    return Call(lambda **kw: P.PositionalAttention(2.0, 0.0, **kw), bad[0]), bad[1]


@spec("positional.PositionalAttention.get_scores")
def _(draw):
    H, d_k = draw(st.integers(1, 3)), 2
    bias, rotation = parts(draw, H, d_k)
    q, k = qk_heads(draw, H, d_k)
    module = P.PositionalAttention(2.0, 0.0, bias, rotation).to(q.dtype)
    return Call(
        module.get_scores,
        {"q": q, "k": k},
        holds(lambda r: r.shape == (*q.shape[:-1], k.shape[-2])),
    )


@illegal("positional.PositionalAttention.get_scores")
def _(draw):
    q, k = qk_heads(draw, 2, 4, torch.float32)
    module = P.PositionalAttention(2.0, 0.0, P.ALiBiBias(2), P.RoPE())
    (qq, kk), names = draw(
        st.sampled_from(
            [
                ((q, k[..., :2]), ("d_k",)),
                ((q.long(), k), ("q",)),
                ((q[..., :1, :, :], k[..., :1, :, :]), ("H",)),
            ]
        )
    )
    return Call(module.get_scores, {"q": qq, "k": kk}), names


@spec("positional.with_positions")
def _(draw):
    H, d_k = draw(st.integers(1, 3)), 2
    bias, rotation = parts(draw, H, d_k)
    mha = MultiHeadAttention(H, 4, d_k, d_k, 0.0)

    def check(result, kw):
        assert result is mha and isinstance(result.attention, P.PositionalAttention)
        x = torch.randn(2, 3, 4)
        assert result(x, x, x, causal_mask(3))[0].shape == (2, 3, 4)

    return Call(P.with_positions, {"mha": mha, "bias": bias, "rotation": rotation}, check)


@illegal("positional.with_positions")
def _(draw):
    mha = MultiHeadAttention(2, 4, 2, 2, 0.0)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"mha": torch.nn.Linear(2, 2)}, ("mha",)),
                ({"mha": mha, "bias": P.ALiBiBias(3)}, ("n_head",)),
                ({"mha": mha, "bias": P.ShawRelativePosition(4, 2, 1)}, ("d_k",)),
                ({"mha": mha, "bias": P.TransformerXLRelativePosition(2, 4)}, ("d_k",)),
                ({"mha": mha, "rotation": P.ALiBiBias(2)}, ("rotation",)),
            ]
        )
    )
    return Call(P.with_positions, kwargs), names

"""Fuzz entries for tutorial_lib.attention, .softmax and .validate."""

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
    holds,
    ids,
    shape_is,
    sizes,
    tensor,
)
from tutorial_lib import attention as A
from tutorial_lib import softmax as S
from tutorial_lib import validate as V

REGISTRY = Registry(
    {
        "softmax.SCALINGS": "a constant: the three scalings by name (score_scale is fuzzed)",
        "softmax.MAX_JACOBIAN_NORM": "a constant (softmax_jacobian_norm is fuzzed against it)",
    }
)
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt

spec, illegal = REGISTRY.spec, REGISTRY.illegal


# -- masks ----------------------------------------------------------------------------------


def legal_mask(draw, shape):
    """A mask check_mask accepts for scores of this shape, or None; every layout."""
    *lead, T_q, T_k = shape
    layout = draw(st.sampled_from(["none", "full", "ones", "2d", "causal"]))
    rank = len(shape)
    ambiguous = rank >= 3 and shape[0] == T_q > 1
    if layout == "none":
        return None
    if layout == "causal" and T_q <= T_k and not ambiguous:
        return A.causal_mask(T_q, T_k)
    if layout == "2d" and not ambiguous:
        mask_shape = [draw(st.sampled_from([1, T_q])), T_k]
    else:  # the scores' rank, each axis equal or 1
        mask_shape = [draw(st.sampled_from([1, s])) for s in shape[:-1]] + [T_k]
    return tensor(draw, *mask_shape, scale=1.0) > draw(st.sampled_from([-0.5, 0.0, 3.0]))


def bad_mask(draw, shape):
    """A mask no scores of this shape accept, with the name the error must use."""
    *lead, T_q, T_k = shape
    good = torch.ones(*shape, dtype=torch.bool)
    options = [
        good.float(),
        good.long(),
        good.tolist(),
        torch.ones(*shape[:-1], T_k + 1, dtype=torch.bool),  # wrong T_k
        torch.ones(2, *shape, dtype=torch.bool),  # a rank more
        torch.ones(*[s + 1 for s in shape[:-1]], T_k, dtype=torch.bool),  # leading axes too big
    ]
    if len(shape) >= 3:
        options.append(torch.ones(T_k, dtype=torch.bool))  # (T_k,): neither rank
        if shape[0] == T_q > 1:  # (B, T_k), which could be read as (T_q, T_k)
            options.append(torch.ones(T_q, T_k, dtype=torch.bool))
    return draw(st.sampled_from(options))


def check_masked_weights(weights, mask):
    if mask is None:
        return
    blocked = ~mask.expand(weights.shape)
    assert (weights[blocked] == 0).all(), "weight on a masked key"
    rows = mask.expand(weights.shape).any(-1)
    sums = weights.double().sum(-1)
    tolerance = 1e-2 if weights.dtype in (torch.float16, torch.bfloat16) else 1e-5
    assert torch.allclose(sums[rows], torch.ones_like(sums[rows]), atol=tolerance)
    assert (sums[~rows] == 0).all(), "a fully masked row must be all zero"


def scores_shape(draw):
    rank = draw(st.integers(1, 4))
    return sizes(draw, rank, 1, 4)


@spec("attention.check_mask")
def _(draw):
    shape = [*sizes(draw, draw(st.integers(0, 2)), 1, 4), *sizes(draw, 2, 1, 4)]
    mask = legal_mask(draw, shape)
    if mask is None:
        mask = torch.ones(shape, dtype=torch.bool)
    return Call(A.check_mask, {"mask": mask, "scores_shape": tuple(shape)})


@illegal("attention.check_mask")
def _(draw):
    shape = [*sizes(draw, draw(st.integers(0, 2)), 1, 4), *sizes(draw, 2, 1, 4)]
    return Call(A.check_mask, {"mask": bad_mask(draw, shape), "scores_shape": tuple(shape)}), (
        "mask",
    )


@spec("attention.masked_softmax")
def _(draw):
    shape = scores_shape(draw)
    dtype = draw(st.sampled_from(FLOATS))
    scores = tensor(draw, *shape, dtype=dtype)
    mask = legal_mask(draw, shape) if len(shape) >= 2 else None

    def check(weights, kw):
        assert weights.shape == scores.shape and weights.dtype == dtype
        check_masked_weights(weights, mask)

    return Call(A.masked_softmax, {"scores": scores, "mask": mask}, check)


@illegal("attention.masked_softmax")
def _(draw):
    shape = sizes(draw, draw(st.integers(2, 4)), 1, 4)
    if draw(st.booleans()):
        bad = draw(st.sampled_from([torch.ones(shape, dtype=torch.long), torch.tensor(1.0), [1.0]]))
        return Call(A.masked_softmax, {"scores": bad, "mask": None}), ("scores",)
    return Call(
        A.masked_softmax, {"scores": tensor(draw, *shape), "mask": bad_mask(draw, shape)}
    ), ("mask",)


def qkv(draw, dtype=None):
    """q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) with broadcastable leading axes."""
    dtype = dtype or draw(st.sampled_from(FLOATS))
    lead = sizes(draw, draw(st.integers(0, 2)), 1, 3)
    T_q, T_k, d_k, d_v = sizes(draw, 4, 1, 5)
    k_lead = [draw(st.sampled_from([1, n])) for n in lead]
    q = tensor(draw, *lead, T_q, d_k, dtype=dtype)
    k = tensor(draw, *k_lead, T_k, d_k, dtype=dtype)
    v = tensor(draw, *k_lead, T_k, d_v, dtype=dtype)
    return q, k, v


def bad_qkv(draw):
    """q, k, v that do not fit together, and the names the error must use."""
    q, k, v = qkv(draw, torch.float32)
    options = [
        ((q[..., 0, 0], k, v), ("q",)),  # q with too few axes
        ((q, torch.cat([k, k], -1), v), ("d_k",)),  # q and k of different d_k
        ((q, k, torch.cat([v, v], -2)), ("T_k",)),  # one value per key
        ((q.long(), k, v), ("q",)),  # integers are not queries
        ((q, k.double(), v), ("q", "k")),  # one dtype
        ((q.tolist(), k, v), ("q",)),
        (
            (
                tensor(draw, 2, 3, *q.shape[-2:]),
                tensor(draw, 4, 3, *k.shape[-2:]),
                tensor(draw, 4, 3, *v.shape[-2:]),
            ),
            ("leading",),
        ),
    ]
    return draw(st.sampled_from(options))


@spec("attention.attention_scores", params={"scale": Param("real", optional=True)})
def _(draw):
    q, k, _ = qkv(draw)
    scale = draw(st.one_of(st.none(), st.floats(-4, 4), st.integers(-3, 3)))

    def check(scores, kw):
        assert scores.shape == (
            *torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]),
            q.shape[-2],
            k.shape[-2],
        )
        assert scores.dtype == q.dtype

    return Call(A.attention_scores, {"q": q, "k": k, "scale": scale}, check)


@illegal("attention.attention_scores")
def _(draw):
    (q, k, v), names = bad_qkv(draw)
    if names == ("T_k",):
        names, k = ("d_k",), torch.cat([k, k], -1)
    return Call(A.attention_scores, {"q": q, "k": k}), names


def sdpa_call(draw, function):
    q, k, v = qkv(draw)
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    shape = (*lead, q.shape[-2], k.shape[-2])
    mask = legal_mask(draw, shape)

    def check(result, kw):
        out, weights = result
        assert out.shape == (*shape[:-1], v.shape[-1]) and out.dtype == q.dtype
        assert weights.shape == shape
        check_masked_weights(weights, mask)

    return Call(function, {"q": q, "k": k, "v": v, "mask": mask}, check)


@spec("attention.scaled_dot_product_attention", params={"scale": Param("real", optional=True)})
def _(draw):
    return sdpa_call(draw, A.scaled_dot_product_attention)


def sdpa_illegal(function):
    def draw_illegal(draw):
        if draw(st.booleans()):
            (q, k, v), names = bad_qkv(draw)
            return Call(function, {"q": q, "k": k, "v": v}), names
        q, k, v = qkv(draw, torch.float32)
        shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
        return Call(function, {"q": q, "k": k, "v": v, "mask": bad_mask(draw, list(shape))}), (
            "mask",
        )

    return draw_illegal


illegal("attention.scaled_dot_product_attention")(sdpa_illegal(A.scaled_dot_product_attention))


@spec(
    "attention.ScaledDotProductAttention",
    params={
        "temperature": Param("real", above=0),
        "attn_dropout": Param("real", minimum=0, maximum=1),
    },
)
def _(draw):
    call = sdpa_call(draw, None)
    call.kwargs |= {
        "temperature": draw(st.floats(0.5, 20)),
        "attn_dropout": draw(st.sampled_from([0.0, 0.3, 1.0])),
    }
    check = call.check

    def function(temperature, attn_dropout, q, k, v, mask):
        module = A.ScaledDotProductAttention(temperature, attn_dropout)
        out, weights = module(q, k, v, mask)
        assert torch.equal(module.attn, weights)
        return out, module.eval()(q, k, v, mask)[1]

    call.function, call.check = function, (lambda r, kw: check(r, kw))
    return call


@illegal("attention.ScaledDotProductAttention")
def _(draw):
    call, names = sdpa_illegal(None)(draw)
    call.function = lambda **kw: A.ScaledDotProductAttention(2.0)(**kw)
    return call, names


@spec("attention.ScaledDotProductAttention.get_scores")
def _(draw):
    q, k, _ = qkv(draw)
    module = A.ScaledDotProductAttention(draw(st.floats(0.5, 8)))
    return Call(module.get_scores, {"q": q, "k": k})


@illegal("attention.ScaledDotProductAttention.get_scores")
def _(draw):
    (q, k, v), names = bad_qkv(draw)
    if names == ("T_k",):
        names, k = ("d_k",), torch.cat([k, k], -1)
    return Call(A.ScaledDotProductAttention(2.0).get_scores, {"q": q, "k": k}), names


# -- MultiHeadAttention ----------------------------------------------------------------------


MHA_PARAMS = {
    "n_head": Param("int", minimum=1, aliases=("H",)),
    "d_model": Param("int", minimum=1, aliases=("D",)),
    "d_k": Param("int", minimum=1),
    "d_v": Param("int", minimum=1),
    "dropout": Param("real", minimum=0, maximum=1),
}


def mha_sizes(draw):
    H, D, d_k, d_v = sizes(draw, 4, 1, 4)
    B, T_q, T_k = sizes(draw, 3, 1, 4)
    return H, D, d_k, d_v, B, T_q, T_k


def mha_mask(draw, B, T_q, T_k):
    layout = draw(st.sampled_from(["none", "causal", "padding", "full", "shared", "keys"]))
    if layout == "causal" and T_q <= T_k and not B == T_q > 1:
        return A.causal_mask(T_q, T_k)
    shape = {
        "padding": (B, 1, T_k),
        "full": (B, T_q, T_k),
        "shared": (1, T_q, T_k),
        "keys": (1, T_k),
    }
    if layout not in shape:
        return None
    return tensor(draw, *shape[layout], scale=1.0) > 0


@spec("attention.MultiHeadAttention", params=MHA_PARAMS, examples=10)
def _(draw):
    H, D, d_k, d_v, B, T_q, T_k = mha_sizes(draw)
    dtype = draw(st.sampled_from(FLOATS))
    q, kv = tensor(draw, B, T_q, D, dtype=dtype), tensor(draw, B, T_k, D, dtype=dtype)
    mask = mha_mask(draw, B, T_q, T_k)
    padding = draw(st.one_of(st.none(), st.just(tensor(draw, B, T_k, scale=1.0) > -0.5)))

    def function(n_head, d_model, d_k, d_v, dropout, q, k, v, mask, key_padding_mask):
        mha = A.MultiHeadAttention(n_head, d_model, d_k, d_v, dropout).to(q.dtype).eval()
        return mha(q, k, v, mask, key_padding_mask)

    def check(result, kw):
        out, attn = result
        assert out.shape == (B, T_q, D) and out.dtype == dtype and attn.shape == (B, H, T_q, T_k)
        allowed = torch.ones(B, 1, T_q, T_k, dtype=torch.bool)
        if mask is not None:
            allowed = allowed & (mask if mask.dim() == 3 else mask[None])[:, None]
        if padding is not None:
            allowed = allowed & padding[:, None, None]
        assert (attn.masked_select(~allowed.expand_as(attn)) == 0).all()

    kwargs = dict(
        n_head=as_any_integer(draw, H),
        d_model=D,
        d_k=d_k,
        d_v=d_v,
        dropout=0.0,
        q=q,
        k=kv,
        v=kv,
        mask=mask,
        key_padding_mask=padding,
    )
    return Call(function, kwargs, check)


@illegal("attention.MultiHeadAttention")
def _(draw):
    H, D, d_k, d_v, B, T_q, T_k = mha_sizes(draw)
    mha = A.MultiHeadAttention(H, D, d_k, d_v, 0.0)
    q, kv = tensor(draw, B, T_q, D), tensor(draw, B, T_k, D)
    ones = torch.ones
    options = [
        ((q[0], kv, kv, None, None), ("q",)),
        ((tensor(draw, B, T_q, D + 1), kv, kv, None, None), ("q", "D")),
        ((q, tensor(draw, B + 1, T_k, D), tensor(draw, B + 1, T_k, D), None, None), ("B",)),
        ((q, kv, tensor(draw, B, T_k + 1, D), None, None), ("T_k",)),
        ((q.double(), kv.double(), kv.double(), None, None), ("q",)),
        ((q.long(), kv, kv, None, None), ("q",)),
        ((q, kv, kv, ones(B, 1, T_k + 1, dtype=torch.bool), None), ("mask",)),
        ((q, kv, kv, ones(B, 1, 1, T_k, dtype=torch.bool), None), ("mask",)),
        ((q, kv, kv, ones(T_k, dtype=torch.bool), None), ("mask",)),
        ((q, kv, kv, ones(B, T_q, T_k), None), ("mask",)),
        ((q, kv, kv, None, ones(B, T_k + 1, dtype=torch.bool)), ("key_padding_mask",)),
        ((q, kv, kv, None, ones(B, 1, T_k, dtype=torch.bool)), ("key_padding_mask",)),
    ]
    if B == T_q > 1:  # the ambiguous (B, T_k) mask
        options.append(((q, kv, kv, ones(B, T_k, dtype=torch.bool), None), ("mask",)))
    elif B != T_q:
        options.append(
            ((q, kv, kv, ones(B, T_k, dtype=torch.bool), None), ("mask", "key_padding_mask"))
        )
    args, names = draw(st.sampled_from(options))
    return Call(
        lambda **kw: mha(**kw),
        dict(zip(["q", "k", "v", "mask", "key_padding_mask"], args, strict=True)),
    ), names


@spec("attention.MultiHeadAttention.project_kv")
def _(draw):
    H, D, d_k, d_v, B, T_q, T_k = mha_sizes(draw)
    mha = A.MultiHeadAttention(H, D, d_k, d_v, 0.0)
    kv = tensor(draw, B, T_k, D)

    def check(result, kw):
        assert result[0].shape == (B, H, T_k, d_k) and result[1].shape == (B, H, T_k, d_v)

    return Call(mha.project_kv, {"k": kv, "v": kv}, check)


@illegal("attention.MultiHeadAttention.project_kv")
def _(draw):
    H, D, d_k, d_v, B, T_q, T_k = mha_sizes(draw)
    mha = A.MultiHeadAttention(H, D, d_k, d_v, 0.0)
    kv = tensor(draw, B, T_k, D)
    options = [
        ((kv[0], kv), ("k",)),
        ((kv, tensor(draw, B, T_k, D + 1)), ("v", "D")),
        ((kv, tensor(draw, B, T_k + 1, D)), ("k", "v")),
        ((kv.double(), kv), ("k",)),
    ]
    (k, v), names = draw(st.sampled_from(options))
    return Call(mha.project_kv, {"k": k, "v": v}), names


@spec("attention.MultiHeadAttention.attend")
def _(draw):
    H, D, d_k, d_v, B, T_q, T_k = mha_sizes(draw)
    mha = A.MultiHeadAttention(H, D, d_k, d_v, 0.0).eval()
    q, kv = tensor(draw, B, T_q, D), tensor(draw, B, T_k, D)
    k, v = mha.project_kv(kv, kv)
    mask = mha_mask(draw, B, T_q, T_k)

    def check(result, kw):
        with torch.no_grad():
            expected = mha(q, kv, kv, mask)
        torch.testing.assert_close(result, expected)

    return Call(mha.attend, {"q": q, "k": k, "v": v, "mask": mask}, check)


@illegal("attention.MultiHeadAttention.attend")
def _(draw):
    H, D, d_k, d_v, B, T_q, T_k = mha_sizes(draw)
    mha = A.MultiHeadAttention(H, D, d_k, d_v, 0.0)
    q, kv = tensor(draw, B, T_q, D), tensor(draw, B, T_k, D)
    k, v = mha.project_kv(kv, kv)
    options = [
        ((q, kv, kv, None), ("k",)),
        ((q, k, v[..., :-1, :], None), ("T_k", "v")),
        ((q, k, v, torch.ones(B, 1, T_k + 1, dtype=torch.bool)), ("mask",)),
        ((q[0], k, v, None), ("q",)),
    ]
    args, names = draw(st.sampled_from(options))
    if names == ("T_k", "v") and T_k == 1:
        args, names = (q, kv, kv, None), ("k",)
    return Call(mha.attend, dict(zip(["q", "k", "v", "mask"], args, strict=True))), names


# -- mask helpers ----------------------------------------------------------------------------


@spec(
    "attention.causal_mask",
    params={"T_q": Param("int", minimum=0), "T_k": Param("int", minimum=0, optional=True)},
)
def _(draw):
    T_q = draw(st.integers(0, 6))
    T_k = draw(st.one_of(st.none(), st.integers(T_q, 8)))

    def check(mask, kw):
        n = T_q if T_k is None else T_k
        i, j = torch.arange(T_q)[:, None] + n - T_q, torch.arange(n)[None]
        assert mask.dtype == torch.bool and torch.equal(mask, j <= i)

    return Call(A.causal_mask, {"T_q": as_any_integer(draw, T_q), "T_k": T_k}, check)


@illegal("attention.causal_mask")
def _(draw):
    T_q = draw(st.integers(1, 6))
    return Call(A.causal_mask, {"T_q": T_q, "T_k": draw(st.integers(0, T_q - 1))}), ("T_q", "T_k")


@spec("attention.padding_mask", params={"T": Param("int", minimum=0)})
def _(draw):
    T = draw(st.integers(0, 6))
    lengths = draw(st.lists(st.integers(0, T), min_size=1, max_size=4))
    kind = draw(st.sampled_from([list, torch.tensor, np.array]))

    def check(mask, kw):
        assert torch.equal(mask, (torch.arange(T) < torch.tensor(lengths)[:, None])[:, None])

    return Call(A.padding_mask, {"lengths": kind(lengths), "T": T}, check)


@illegal("attention.padding_mask")
def _(draw):
    T = draw(st.integers(1, 5))
    bad = draw(st.sampled_from([[T + 1], [-1], [[1, 2]], [1.5], "12", [True], torch.tensor([1.0])]))
    return Call(A.padding_mask, {"lengths": bad, "T": T}), ("length", "lengths")


# -- softmax ---------------------------------------------------------------------------------


@spec(
    "softmax.score_scale",
    params={"d_k": Param("int", minimum=1), "scaling": Param("choice", options=tuple(S.SCALINGS))},
)
def _(draw):
    d_k, scaling = draw(st.integers(1, 1024)), draw(st.sampled_from(list(S.SCALINGS)))

    def check(result, kw):
        assert isinstance(result, float) and 0 < result <= 1

    return Call(S.score_scale, {"d_k": as_any_integer(draw, d_k), "scaling": scaling}, check)


@spec(
    "softmax.random_dot_products",
    params={
        "d_k": Param("int", minimum=1),
        "T": Param("int", minimum=1),
        "n_query": Param("int", minimum=1),
        "seed": Param("int"),
    },
)
def _(draw):
    d_k, T, n_query = sizes(draw, 3, 1, 16)
    seed = draw(st.integers(-5, 5))
    kwargs = {"d_k": d_k, "T": T, "n_query": n_query, "seed": seed}
    return Call(S.random_dot_products, kwargs, shape_is(n_query, T, dtype=torch.float32))


def weights_rows(draw):
    shape = sizes(draw, draw(st.integers(1, 3)), 1, 5)
    dtype = draw(st.sampled_from(FLOATS))
    scores = tensor(
        draw, *shape, dtype=torch.float64, scale=draw(st.sampled_from([0.1, 1.0, 100.0]))
    )
    return torch.softmax(scores, -1).to(dtype)  # underflow gives exact zeros, too


def bad_rows(draw, name):
    bad = draw(
        st.sampled_from(
            [torch.ones(2, 3, dtype=torch.long), torch.tensor(0.5), torch.zeros(2, 0), [0.5, 0.5]]
        )
    )
    return bad, (name,)


for _name, _check in {
    "softmax_entropy": lambda r, w: (
        (r >= -1e-2).all() and (r <= math.log(w.shape[-1]) + 1e-2).all()
    ),
    "softmax_jacobian": lambda r, w: (
        r.shape == (*w.shape, w.shape[-1])
        and torch.allclose(r.double().sum(-1), torch.zeros(1, dtype=torch.float64), atol=1e-2)
    ),
    "softmax_jacobian_norm": lambda r, w: (r <= S.MAX_JACOBIAN_NORM + 1e-2).all(),
}.items():
    _target = getattr(S, _name)

    def _legal(draw, function=_target, check=_check):
        w = weights_rows(draw)

        def verify(result, kw):
            assert result.dtype == w.dtype and check(result, w)

        return Call(function, {"weights": w}, verify)

    def _illegal(draw, function=_target):
        bad, names = bad_rows(draw, "weights")
        return Call(function, {"weights": bad}), names

    SPECS[f"softmax.{_name}"] = Spec(_legal, illegal=_illegal)


@spec("softmax.sharpness")
def _(draw):
    shape = sizes(draw, draw(st.integers(1, 3)), 1, 5)
    scores = tensor(
        draw,
        *shape,
        dtype=draw(st.sampled_from(FLOATS)),
        scale=draw(st.sampled_from([0.1, 1.0, 30.0])),
    )

    def check(result, kw):
        assert set(result) == {"entropy", "entropy_fraction", "max_weight", "jacobian_norm"}
        for value in result.values():
            assert value.shape == scores.shape[:-1]
        assert (result["entropy_fraction"] <= 1.01).all()

    return Call(S.sharpness, {"scores": scores}, check)


@illegal("softmax.sharpness")
def _(draw):
    bad, names = bad_rows(draw, "scores")
    return Call(S.sharpness, {"scores": bad}), names


# -- validate --------------------------------------------------------------------------------


@spec("validate.format_shape")
def _(draw):
    shape = tuple(sizes(draw, draw(st.integers(0, 3)), 0, 4))
    value = draw(st.sampled_from([torch.zeros(shape), shape, list(shape), torch.Size(shape)]))

    def check(result, kw):
        assert result == "(" + ", ".join(map(str, shape)) + ")"

    return Call(V.format_shape, {"t": value}, check)


@illegal("validate.format_shape")
def _(draw):
    return Call(V.format_shape, {"t": draw(st.sampled_from([3, None, "2, 3", 2.5]))}), (
        "format_shape",
    )


@spec("validate.check_shape")
def _(draw):
    shape = sizes(draw, draw(st.integers(0, 3)), 0, 4)
    return Call(
        V.check_shape, {"t": torch.zeros(shape), "expected": tuple(np.int64(s) for s in shape)}
    )


@illegal("validate.check_shape")
def _(draw):
    shape = sizes(draw, draw(st.integers(1, 3)), 1, 4)
    bad = draw(
        st.sampled_from(
            [
                (torch.zeros(shape), tuple(s + 1 for s in shape)),
                (shape, tuple(shape)),
                (torch.zeros(shape), tuple(shape[:-1])),
            ]
        )
    )
    return Call(V.check_shape, {"t": bad[0], "expected": bad[1]}), ("expected",)


def checker(name, function, legal_value, bad_value, **options):
    """An entry for a check_* function: the error must name the ``name`` it was given."""

    def legal(draw):
        return Call(function, {"name": "arg_x", "value": draw(legal_value), **options})

    def illegal_call(draw):
        return Call(function, {"name": "arg_x", "value": draw(bad_value), **options}), ("arg_x",)

    SPECS[f"validate.{name}"] = Spec(legal, illegal=illegal_call)


checker(
    "check_int",
    V.check_int,
    st.integers(1, 10**6).map(lambda n: np.int64(n)),
    st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.none()),
)
checker(
    "check_real",
    V.check_real,
    st.floats(0, 1, exclude_min=True),
    st.one_of(st.floats(max_value=0), st.sampled_from([math.nan, math.inf, True, "1"])),
    above=0,
)
checker("check_bool", V.check_bool, st.booleans(), st.sampled_from([0, 1, "True", None]))
checker(
    "check_choice",
    V.check_choice,
    st.sampled_from(["a", "b"]),
    st.sampled_from(["c", 1, None, ["a"]]),
    options=("a", "b"),
)


@spec("validate.check_tensor")
def _(draw):
    kind = draw(st.sampled_from(["float", "integer", "bool", "real", None]))
    value = {
        "float": torch.zeros(2),
        "integer": torch.zeros(2, dtype=torch.long),
        "bool": torch.zeros(2, dtype=torch.bool),
        "real": torch.zeros(2, dtype=torch.int8),
        None: torch.zeros(2, dtype=torch.complex64),
    }[kind]
    return Call(V.check_tensor, {"name": "arg_x", "value": value, "kind": kind})


@illegal("validate.check_tensor")
def _(draw):
    value, kind = draw(
        st.sampled_from(
            [
                ([1.0], "float"),
                (torch.zeros(2), "integer"),
                (torch.zeros(2), "bool"),
                (torch.zeros(2, dtype=torch.bool), "real"),
                (3, None),
            ]
        )
    )
    return Call(V.check_tensor, {"name": "arg_x", "value": value, "kind": kind}), ("arg_x",)


@spec("validate.check_tokens")
def _(draw):
    B, T, D = sizes(draw, 3, 0, 4)
    return Call(
        V.check_tokens,
        {
            "x": tensor(draw, B, T, D, dtype=draw(st.sampled_from(FLOATS))),
            "d_model": D,
            "where": "L",
        },
    )


@illegal("validate.check_tokens")
def _(draw):
    x = draw(
        st.sampled_from(
            [
                torch.zeros(2, 3),
                torch.zeros(2, 3, 5),
                torch.zeros(2, 3, 4, dtype=torch.long),
                [[0.0]],
            ]
        )
    )
    return Call(V.check_tokens, {"x": x, "d_model": 4, "where": "L", "name": "arg_x"}), ("arg_x",)


@spec("validate.check_padding_mask")
def _(draw):
    B, T = sizes(draw, 2, 1, 4)
    mask = draw(st.sampled_from([None, torch.ones(B, T, dtype=torch.bool)]))
    return Call(V.check_padding_mask, {"mask": mask, "x": torch.zeros(B, T, 3), "where": "L"})


@illegal("validate.check_padding_mask")
def _(draw):
    B, T = sizes(draw, 2, 1, 4)
    mask = draw(
        st.sampled_from(
            [
                torch.ones(B, T),
                torch.ones(B, T + 1, dtype=torch.bool),
                torch.ones(B, 1, T, dtype=torch.bool),
            ]
        )
    )
    return Call(
        V.check_padding_mask,
        {"mask": mask, "x": torch.zeros(B, T, 3), "where": "L", "name": "arg_x"},
    ), ("arg_x",)


@spec("validate.check_token_ids")
def _(draw):
    B, T, vocab = sizes(draw, 3, 1, 5)
    return Call(
        V.check_token_ids, {"name": "arg_x", "tokens": ids(draw, B, T, vocab=vocab), "vocab": vocab}
    )


@illegal("validate.check_token_ids")
def _(draw):
    bad = draw(
        st.sampled_from(
            [
                torch.full((2, 3), 5),
                torch.full((2, 3), -1),
                torch.zeros(3, dtype=torch.long),
                torch.zeros(2, 3),
                [[1, 2]],
            ]
        )
    )
    return Call(V.check_token_ids, {"name": "arg_x", "tokens": bad, "vocab": 5}), ("arg_x",)


@spec("validate.broadcast_shape")
def _(draw):
    shapes = [
        tuple(sizes(draw, draw(st.integers(0, 3)), 1, 3)) for _ in range(draw(st.integers(1, 3)))
    ]

    def check(result, kw):
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = None
        assert result == expected

    return Call(lambda shapes: V.broadcast_shape(*shapes), {"shapes": shapes}, check)


@spec("validate.check_same_batch")
def _(draw):
    B = draw(st.integers(1, 4))
    return Call(
        V.check_same_batch,
        {"first": "src", "a": torch.zeros(B, 2), "second": "tgt", "b": torch.zeros(B, 3)},
    )


@illegal("validate.check_same_batch")
def _(draw):
    B = draw(st.integers(1, 4))
    return Call(
        V.check_same_batch,
        {"first": "src", "a": torch.zeros(B, 2), "second": "tgt", "b": torch.zeros(B + 1, 3)},
    ), ("src",)


@spec("validate.check_same_dtype")
def _(draw):
    dtype = draw(st.sampled_from(FLOATS))
    return Call(
        V.check_same_dtype,
        {
            "name": "q",
            "t": torch.zeros(2, dtype=dtype),
            "weight": torch.zeros(2, dtype=dtype),
            "where": "L",
        },
    )


@illegal("validate.check_same_dtype")
def _(draw):
    a, b = draw(st.permutations(FLOATS))[:2]
    return Call(
        V.check_same_dtype,
        {
            "name": "q",
            "t": torch.zeros(2, dtype=a),
            "weight": torch.zeros(2, dtype=b),
            "where": "L",
        },
    ), ("q",)


@spec("validate.to_tensor")
def _(draw):
    value = draw(
        st.sampled_from([[1, 2], (0.5,), np.arange(3), torch.ones(2, dtype=torch.long), 7])
    )
    return Call(
        V.to_tensor, {"name": "arg_x", "value": value, "kind": "real"}, holds(torch.is_tensor)
    )


@illegal("validate.to_tensor")
def _(draw):
    value, kind = draw(
        st.sampled_from(
            [("12", None), ([[1], [2, 3]], None), ([True], "integer"), ([0.5], "integer")]
        )
    )
    return Call(V.to_tensor, {"name": "arg_x", "value": value, "kind": kind}), ("arg_x",)

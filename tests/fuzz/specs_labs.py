"""Fuzz entries for tutorial_lib.labs: the experiments' models, tasks and runners (tiny sizes)."""

import dataclasses

import numpy as np
import torch
from hypothesis import strategies as st

from tests.fuzz.harness import (
    Call,
    Param,
    Registry,
    as_any_integer,
    holds,
    ids,
    shape_is,
    sizes,
    tensor,
)
from tutorial_lib.labs import embedding_scale as LE
from tutorial_lib.labs import extrapolation as LX
from tutorial_lib.labs import norms as LN
from tutorial_lib.labs import reverse as LR

REGISTRY = Registry(
    {
        "labs.extrapolation.VARIANTS": "a constant (PositionModel is fuzzed with it)",
        "labs.extrapolation.EXTRAPOLATION_TASKS": "a constant (train_and_evaluate uses it)",
        "labs.norms.NORM_KINDS": "a constant (make_norm and Block are fuzzed with it)",
        "labs.norms.PLACEMENTS": "a constant (Block is fuzzed with it)",
        "labs.reverse.N_SYMBOLS": "a constant of chapter Q5's task",
        "labs.reverse.LENGTH": "a constant of chapter Q5's task",
    }
)
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt
POSITIVE = Param("int", minimum=1)

spec, illegal = REGISTRY.spec, REGISTRY.illegal


# -- embedding scale --------------------------------------------------------------------------

REVERSAL_PARAMS = {
    "vocab": POSITIVE,
    "d_model": Param("int", minimum=1, aliases=("D",)),
    "max_len": POSITIVE,
    "positions": Param("choice", options=("sinusoidal", "learned")),
    "embed_std": Param("real", minimum=0),
    "embed_factor": Param("real", minimum=0),
    "n_head": Param("int", minimum=1, aliases=("H",)),
}


def reversal_kwargs(draw):
    H = draw(st.integers(1, 3))
    return {
        "vocab": draw(st.integers(1, 6)),
        "d_model": 2 * H * draw(st.integers(1, 2)),
        "max_len": draw(st.integers(2, 6)),
        "positions": draw(st.sampled_from(["sinusoidal", "learned"])),
        "embed_std": draw(st.floats(0, 2)),
        "embed_factor": draw(st.floats(0, 4)),
        "n_head": as_any_integer(draw, H),
    }


@spec("labs.embedding_scale.ReversalModel", params=REVERSAL_PARAMS, examples=10)
def _(draw):
    kwargs = reversal_kwargs(draw)
    tokens = ids(
        draw,
        draw(st.integers(1, 3)),
        draw(st.integers(1, kwargs["max_len"])),
        vocab=kwargs["vocab"],
    )

    def function(tokens, **kwargs):
        return LE.ReversalModel(**kwargs)(tokens)

    return Call(function, {"tokens": tokens, **kwargs}, shape_is(*tokens.shape, kwargs["vocab"]))


@illegal("labs.embedding_scale.ReversalModel")
def _(draw):
    model = LE.ReversalModel(5, 8, 4, "learned")
    bad, names = draw(
        st.sampled_from(
            [
                (torch.full((2, 3), 5), ("tokens",)),
                (torch.ones(3, dtype=torch.long), ("tokens",)),
                (torch.ones(2, 3), ("tokens",)),
                (torch.ones(2, 5, dtype=torch.long), ("max_len",)),
            ]
        )
    )
    return Call(model, {"tokens": bad}), names


@spec("labs.embedding_scale.ReversalModel.inputs")
def _(draw):
    model = LE.ReversalModel(5, 4, 6)
    tokens = ids(draw, 2, draw(st.integers(1, 6)), vocab=5)
    return Call(
        model.inputs,
        {"tokens": tokens},
        holds(lambda r: r[0].shape == (*tokens.shape, 4) and r[1].shape == (tokens.shape[1], 4)),
    )


@illegal("labs.embedding_scale.ReversalModel.inputs")
def _(draw):
    return Call(LE.ReversalModel(5, 4, 6).inputs, {"tokens": torch.full((1, 2), 7)}), ("tokens",)


@spec(
    "labs.embedding_scale.train_reversal",
    params={"T": POSITIVE, "vocab": POSITIVE, "steps": POSITIVE, "seed": Param("int")},
    examples=5,
)
def _(draw):
    model = LE.ReversalModel(5, 4, 6)
    kwargs = {
        "model": model,
        "T": draw(st.integers(1, 6)),
        "vocab": draw(st.integers(1, 5)),
        "steps": draw(st.integers(1, 3)),
        "seed": draw(st.integers(-3, 3)),
    }
    return Call(
        LE.train_reversal,
        kwargs,
        holds(lambda r: set(r) == {"loss", "accuracy"} and 0 <= r["accuracy"] <= 1),
    )


@illegal("labs.embedding_scale.train_reversal")
def _(draw):
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"model": LE.ReversalModel(5, 4, 6), "T": 3, "vocab": 9}, ("vocab",)),
                ({"model": torch.nn.Linear(2, 2), "T": 3, "vocab": 5}, ("model",)),
                ({"model": LE.ReversalModel(5, 4, 3, "learned"), "T": 5, "vocab": 5}, ("max_len",)),
            ]
        )
    )
    return Call(LE.train_reversal, kwargs | {"steps": 1}), names


# -- extrapolation ----------------------------------------------------------------------------


def tiny_cfg(draw, **changes):
    H = draw(st.integers(1, 2))
    fields = dict(
        train_len=draw(st.integers(2, 5)),
        eval_lens=(draw(st.integers(2, 6)),),
        d_model=2 * H * draw(st.integers(1, 2)),
        n_head=H,
        n_layer=1,
        steps=draw(st.integers(0, 2)),
        batch=2,
        lag=1,
        shaw_clip=draw(st.integers(0, 3)),
        rerope_window=draw(st.integers(1, 4)),
        t5_buckets=8,
        t5_max_distance=10,
        eval_batch=2,
        seeds=(0,),
        variants=(draw(st.sampled_from(LX.VARIANTS)),),
        tasks=(draw(st.sampled_from(["lag", "hold"])),),
    )
    return LX.ExtrapolationConfig(**(fields | changes))


CONFIG_PARAMS = {
    name: Param("int", minimum=m)
    for name, m in (
        ("train_len", 2),
        ("d_model", 1),
        ("n_head", 1),
        ("n_layer", 1),
        ("steps", 0),
        ("batch", 1),
        ("lag", 1),
        ("shaw_clip", 0),
        ("rerope_window", 1),
        ("t5_buckets", 2),
        ("eval_batch", 1),
    )
}


@spec("labs.extrapolation.ExtrapolationConfig", params=CONFIG_PARAMS)
def _(draw):
    cfg = dataclasses.asdict(tiny_cfg(draw))
    cfg = {k: as_any_integer(draw, v) if type(v) is int else v for k, v in cfg.items()}
    return Call(LX.ExtrapolationConfig, cfg, holds(lambda c: type(c.d_model) is int))


@illegal("labs.extrapolation.ExtrapolationConfig")
def _(draw):
    changes, names = draw(
        st.sampled_from(
            [
                ({"d_model": 6, "n_head": 4}, ("d_model",)),
                ({"lag": 5, "train_len": 5}, ("lag",)),
                ({"eval_lens": ()}, ("eval_lens",)),
                ({"eval_lens": (0,)}, ("eval_lens",)),
                ({"seeds": (1.5,)}, ("seeds",)),
                ({"variants": ("nope",)}, ("variants",)),
                ({"tasks": ("copy",)}, ("tasks",)),
                ({"tasks": "lag"}, ("tasks",)),
                ({"t5_max_distance": 4}, ("t5_max_distance",)),
                ({"d_model": 6, "n_head": 2, "variants": ("rope",)}, ("d_k",)),
            ]
        )
    )
    return Call(LX.ExtrapolationConfig, changes), names


@spec(
    "labs.extrapolation.PositionModel",
    params={"variant": Param("choice", options=tuple(LX.VARIANTS)), "vocab": POSITIVE},
    examples=12,
)
def _(draw):
    cfg = tiny_cfg(draw)
    vocab = draw(st.integers(1, 6))
    tokens = ids(
        draw, draw(st.integers(1, 4)), draw(st.integers(1, max(cfg.eval_lens))), vocab=vocab
    )

    def function(variant, vocab, tokens):
        return LX.PositionModel(variant, vocab, cfg)(tokens)

    return Call(
        function,
        {"variant": draw(st.sampled_from(LX.VARIANTS)), "vocab": vocab, "tokens": tokens},
        shape_is(*tokens.shape, vocab),
    )


@illegal("labs.extrapolation.PositionModel")
def _(draw):
    cfg = tiny_cfg(draw)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"cfg": {"d_model": 4}, "tokens": torch.ones(1, 2, dtype=torch.long)}, ("cfg",)),
                ({"cfg": cfg, "tokens": torch.full((1, 2), 5)}, ("tokens",)),
                ({"cfg": cfg, "tokens": torch.ones(2)}, ("tokens",)),
            ]
        )
    )
    return Call(lambda cfg, tokens: LX.PositionModel("alibi", 5, cfg)(tokens), kwargs), names


@spec(
    "labs.extrapolation.lag_copy_batch",
    params={"n": POSITIVE, "T": Param("int", minimum=2), "lag": POSITIVE, "vocab": POSITIVE},
)
def _(draw):
    T = draw(st.integers(2, 8))
    kwargs = {
        "n": draw(st.integers(1, 4)),
        "T": T,
        "generator": draw(st.sampled_from([None, torch.Generator().manual_seed(1)])),
        "lag": draw(st.integers(1, T - 1)),
        "vocab": draw(st.integers(1, 10)),
    }

    def check(result, kw):
        tokens, target = result
        lag = kw["lag"]
        assert (target[:, :lag] == LX.IGNORE).all() and torch.equal(
            target[:, lag:], tokens[:, :-lag]
        )

    return Call(LX.lag_copy_batch, kwargs, check)


@illegal("labs.extrapolation.lag_copy_batch")
def _(draw):
    kwargs, names = draw(
        st.sampled_from(
            [({"T": 3, "lag": 3}, ("lag",)), ({"T": 3, "generator": "g"}, ("generator",))]
        )
    )
    return Call(LX.lag_copy_batch, {"n": 2, "generator": None} | kwargs), names


@spec(
    "labs.extrapolation.hold_last_value_batch",
    params={
        "n": POSITIVE,
        "T": POSITIVE,
        "values": POSITIVE,
        "fillers": POSITIVE,
        "p": Param("real", minimum=0, maximum=1),
    },
)
def _(draw):
    kwargs = {
        "n": draw(st.integers(1, 4)),
        "T": draw(st.integers(1, 8)),
        "generator": torch.Generator().manual_seed(draw(st.integers(0, 9))),
        "values": draw(st.integers(1, 8)),
        "fillers": draw(st.integers(1, 4)),
        "p": draw(st.floats(0, 1)),
    }

    def check(result, kw):
        tokens, target = result
        assert (target < kw["values"]).all() and torch.equal(target[:, 0], tokens[:, 0])

    return Call(LX.hold_last_value_batch, kwargs, check)


@spec(
    "labs.extrapolation.train_and_evaluate",
    params={
        "variant": Param("choice", options=tuple(LX.VARIANTS)),
        "task": Param("choice", options=("lag", "hold")),
        "seed": Param("int"),
    },
    examples=6,
)
def _(draw):
    cfg = tiny_cfg(draw)
    kwargs = {
        "variant": draw(st.sampled_from(LX.VARIANTS)),
        "task": draw(st.sampled_from(["lag", "hold"])),
        "cfg": cfg,
        "seed": draw(st.integers(-2, 2)),
    }

    def check(row, kw):
        assert set(row["accuracy"]) == set(cfg.eval_lens) and all(
            0 <= a <= 1 for a in row["accuracy"].values()
        )

    return Call(LX.train_and_evaluate, kwargs, check)


@illegal("labs.extrapolation.train_and_evaluate")
def _(draw):
    return Call(LX.train_and_evaluate, {"variant": "rope", "task": "lag", "cfg": {"steps": 1}}), (
        "cfg",
    )


@spec("labs.extrapolation.position_part_by_distance", params={"first": Param("int", minimum=0)})
def _(draw):
    cfg = tiny_cfg(draw, variants=("alibi",))
    variant = draw(st.sampled_from(["shaw", "xl", "t5", "alibi"]))
    model = LX.PositionModel(variant, 5, cfg)
    T = draw(st.integers(1, 5))
    tokens = ids(draw, 2, T, vocab=5)

    def check(profile, kw):  # query max(first, d) reaches distance d, for every d < T
        assert profile.shape == (cfg.n_head, T) and torch.isfinite(profile).all()

    return Call(
        LX.position_part_by_distance,
        {"model": model, "tokens": tokens, "first": draw(st.integers(0, T - 1))},
        check,
    )


@illegal("labs.extrapolation.position_part_by_distance")
def _(draw):
    cfg = tiny_cfg(draw)
    kwargs, names = draw(
        st.sampled_from(
            [
                (
                    {
                        "model": LX.PositionModel("alibi", 5, cfg),
                        "tokens": torch.ones(2, 3, dtype=torch.long),
                        "first": 3,
                    },
                    ("first",),
                ),
                (
                    {
                        "model": LX.PositionModel("rope", 5, cfg),
                        "tokens": torch.ones(2, 3, dtype=torch.long),
                    },
                    ("variant",),
                ),
                (
                    {"model": torch.nn.Linear(2, 2), "tokens": torch.ones(2, 3, dtype=torch.long)},
                    ("model",),
                ),
                (
                    {
                        "model": LX.PositionModel("alibi", 5, cfg),
                        "tokens": torch.ones(3, dtype=torch.long),
                    },
                    ("tokens",),
                ),
            ]
        )
    )
    return Call(LX.position_part_by_distance, kwargs), names


@spec("labs.extrapolation.extrapolation_experiment", examples=3)
def _(draw):
    cfg = tiny_cfg(draw, steps=1)
    return Call(LX.extrapolation_experiment, {"cfg": cfg}, holds(lambda rows: len(rows) == 1))


@illegal("labs.extrapolation.extrapolation_experiment")
def _(draw):
    return Call(LX.extrapolation_experiment, {"cfg": "small"}), ("cfg",)


@spec(
    "labs.extrapolation.summarise", params={"key": Param("choice", options=("accuracy", "focus"))}
)
def _(draw):
    rows = [
        {"task": "lag", "variant": v, "accuracy": {4: 0.5, 8: None}, "focus": {4: 0.1, 8: 0.2}}
        for v in ("rope", "alibi")
    ]
    return Call(
        LX.summarise,
        {"rows": rows, "key": draw(st.sampled_from(["accuracy", "focus"]))},
        holds(lambda t: len(t) >= 2),
    )


# -- norms lab --------------------------------------------------------------------------------


@spec(
    "labs.norms.make_norm",
    params={"kind": Param("choice", options=LN.NORM_KINDS), "d_model": POSITIVE},
)
def _(draw):
    return Call(
        LN.make_norm,
        {"kind": draw(st.sampled_from(LN.NORM_KINDS)), "d_model": draw(st.integers(1, 8))},
        holds(lambda layer: isinstance(layer, torch.nn.Module)),
    )


def padded(draw, D):
    B, T = sizes(draw, 2, 1, 4)
    lengths = torch.tensor([draw(st.integers(1, T)) for _ in range(B)])
    return tensor(draw, B, T, D), draw(st.sampled_from([None, torch.arange(T) < lengths[:, None]]))


@spec(
    "labs.norms.SelfAttention",
    params={
        "d_model": Param("int", minimum=1, aliases=("D",)),
        "n_head": Param("int", minimum=1, aliases=("H",)),
    },
)
def _(draw):
    H = draw(st.integers(1, 3))
    D = H * draw(st.integers(1, 3))
    x, mask = padded(draw, D)
    return Call(
        lambda d_model, n_head, x, mask: LN.SelfAttention(d_model, n_head)(x, mask),
        {"d_model": D, "n_head": H, "x": x, "mask": mask},
        shape_is(*x.shape),
    )


@illegal("labs.norms.SelfAttention")
def _(draw):
    x = tensor(draw, 2, 3, 4)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"d_model": 6, "n_head": 4, "x": x}, ("d_model",)),
                ({"d_model": 4, "n_head": 2, "x": x[0]}, ("x",)),
                (
                    {
                        "d_model": 4,
                        "n_head": 2,
                        "x": x,
                        "mask": torch.ones(2, 1, 3, dtype=torch.bool),
                    },
                    ("mask",),
                ),
            ]
        )
    )
    return Call(
        lambda d_model, n_head, x, mask=None: LN.SelfAttention(d_model, n_head)(x, mask), kwargs
    ), names


BLOCK_PARAMS = {
    "d_model": Param("int", minimum=1, aliases=("D",)),
    "n_head": Param("int", minimum=1, aliases=("H",)),
    "d_ff": POSITIVE,
    "norm": Param("choice", options=LN.NORM_KINDS),
    "placement": Param("choice", options=LN.PLACEMENTS),
}


@spec("labs.norms.Block", params=BLOCK_PARAMS)
def _(draw):
    H = draw(st.integers(1, 2))
    D = H * draw(st.integers(1, 3))
    x, mask = padded(draw, D)
    norm = draw(st.sampled_from(LN.NORM_KINDS))
    training = norm not in ("batch", "batch_masked") or (
        x.shape[0] * x.shape[1] > 1 and (mask is None or mask.sum() > 1)
    )

    def function(d_model, n_head, d_ff, norm, placement, x, mask):
        return LN.Block(d_model, n_head, d_ff, norm, placement).train(training)(x, mask)

    kwargs = {
        "d_model": D,
        "n_head": H,
        "d_ff": draw(st.integers(1, 8)),
        "norm": norm,
        "placement": draw(st.sampled_from(LN.PLACEMENTS)),
        "x": x,
        "mask": mask,
    }
    return Call(function, kwargs, shape_is(*x.shape))


@illegal("labs.norms.Block")
def _(draw):
    bad, names = draw(
        st.sampled_from([(torch.zeros(2, 3), ("x",)), (torch.zeros(2, 3, 5), ("x", "D"))])
    )
    return Call(lambda x: LN.Block(4, 2, 8)(x), {"x": bad}), names


TINY_PARAMS = {
    "vocab": Param("int", minimum=1),
    "n_classes": POSITIVE,
    "d_model": Param("even", minimum=1, aliases=("D",)),
    "n_head": Param("int", minimum=1, aliases=("H",)),
    "d_ff": POSITIVE,
    "n_layers": Param("int", minimum=0),
    "max_len": POSITIVE,
    "positions": Param("bool"),
}


@spec("labs.norms.TinyEncoder", params=TINY_PARAMS, examples=10)
def _(draw):
    H = draw(st.integers(1, 2))
    D = 2 * H * draw(st.integers(1, 2))
    vocab, T = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    tokens = ids(draw, draw(st.integers(2, 3)), T, vocab=vocab)
    mask = tokens != 0 if draw(st.booleans()) else None
    if mask is not None:
        mask[:, 0] = True
    norm = draw(st.sampled_from(LN.NORM_KINDS))

    def function(tokens, mask, **kwargs):
        return LN.TinyEncoder(**kwargs).eval()(tokens, mask)

    kwargs = {
        "vocab": vocab,
        "n_classes": draw(st.integers(1, 4)),
        "d_model": D,
        "n_head": H,
        "d_ff": draw(st.integers(1, 8)),
        "n_layers": draw(st.integers(0, 2)),
        "norm": norm,
        "placement": draw(st.sampled_from(LN.PLACEMENTS)),
        "max_len": T + draw(st.integers(0, 3)),
        "positions": draw(st.booleans()),
    }
    return Call(
        function,
        {"tokens": tokens, "mask": mask, **kwargs},
        shape_is(*tokens.shape, kwargs["n_classes"]),
    )


@illegal("labs.norms.TinyEncoder")
def _(draw):
    model = LN.TinyEncoder(5, 3, max_len=4)
    tokens, names = draw(
        st.sampled_from(
            [
                (torch.full((2, 3), 5), ("tokens",)),
                (torch.ones(2, 6, dtype=torch.long), ("max_len",)),
                (torch.ones(2, 3), ("tokens",)),
            ]
        )
    )
    return Call(model, {"tokens": tokens}), names


@spec("labs.norms.ffn_gradient_norms")
def _(draw):
    model = LN.TinyEncoder(5, 2, d_model=4, n_head=1, d_ff=4, n_layers=draw(st.integers(1, 3)))
    model(ids(draw, 2, 3, vocab=5)).sum().backward()
    return Call(
        LN.ffn_gradient_norms,
        {"model": model},
        holds(lambda r: len(r) == len(model.layers) and min(r) >= 0),
    )


@illegal("labs.norms.ffn_gradient_norms")
def _(draw):
    model, names = draw(
        st.sampled_from(
            [(LN.TinyEncoder(5, 2), ("backward",)), (torch.nn.Linear(2, 2), ("model",))]
        )
    )
    return Call(LN.ffn_gradient_norms, {"model": model}), names


# -- reverse lab ------------------------------------------------------------------------------


@spec("labs.reverse.chapter_config")
def _(draw):
    changes = draw(
        st.sampled_from([{}, {"d_model": 16}, {"n_head": np.int64(2)}, {"causal": False}])
    )
    return Call(
        lambda changes: LR.chapter_config(**changes),
        {"changes": changes},
        holds(lambda c: c.src_vocab == 13),
    )


@illegal("labs.reverse.chapter_config")
def _(draw):
    changes, names = draw(
        st.sampled_from(
            [({"nope": 1}, ("nope",)), ({"n_head": 0}, ("n_head",)), ({"d_model": 30}, ("D", "H"))]
        )
    )
    return Call(lambda changes: LR.chapter_config(**changes), {"changes": changes}), names


@spec("labs.reverse.train_reverse", params={"seed": Param("int")}, examples=3)
def _(draw):
    from tutorial_lib.data import make_batch

    test_set = make_batch("reverse", 4, 16, seed=1)
    return Call(
        lambda seed: LR.train_reverse(seed, max_steps=1, batch_size=4, test_set=test_set),
        {"seed": draw(st.integers(-2, 2))},
        holds(lambda r: r[1].steps == 1),
    )

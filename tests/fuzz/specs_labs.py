"""Fuzz entries for tutorial_lib.labs: the experiments' models, tasks and runners (tiny sizes)."""

import dataclasses
import math

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
from tutorial_lib.data import TASKS as DATA_TASKS
from tutorial_lib.data import make_batch
from tutorial_lib.labs import embedding_scale as LE
from tutorial_lib.labs import extrapolation as LX
from tutorial_lib.labs import norms as LN
from tutorial_lib.labs import reverse as LR
from tutorial_lib.model import TransformerConfig

REGISTRY = Registry(
    {
        "labs.extrapolation.VARIANTS": "a constant (PositionModel is fuzzed with it)",
        "labs.extrapolation.EXTRAPOLATION_TASKS": "a constant (train_and_evaluate uses it)",
        "labs.extrapolation.VOCAB": "a constant: the token ids both tasks share",
        "labs.norms.NORM_KINDS": "a constant (make_norm and Block are fuzzed with it)",
        "labs.norms.PLACEMENTS": "a constant (Block is fuzzed with it)",
        "labs.reverse.N_SYMBOLS": "a constant of chapter Q5's task",
        "labs.reverse.LENGTH": "a constant of chapter Q5's task",
        "labs.reverse.EnsembleRun": "a plain record returned by train_ensemble (fuzzed)",
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
    "tie_output": Param("bool"),
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
        "tie_output": draw(st.booleans()),
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


@spec("labs.embedding_scale.ReversalModel.length_ratio")
def _(draw):
    kwargs = reversal_kwargs(draw) | {"embed_factor": draw(st.floats(0.1, 4))}
    model = LE.ReversalModel(**kwargs)
    tokens = ids(draw, 2, draw(st.integers(1, kwargs["max_len"])), vocab=kwargs["vocab"])
    return Call(model.length_ratio, {"tokens": tokens}, holds(lambda r: 0 <= r < math.inf))


@illegal("labs.embedding_scale.ReversalModel.length_ratio")
def _(draw):
    bad = draw(st.sampled_from([torch.full((1, 2), 7), torch.ones(3, dtype=torch.long), [[1, 2]]]))
    return Call(LE.ReversalModel(5, 4, 6).length_ratio, {"tokens": bad}), ("tokens",)


@spec(
    "labs.embedding_scale.reversal_batch",
    params={"n": POSITIVE, "T": POSITIVE, "vocab": POSITIVE},
)
def _(draw):
    kwargs = {
        "n": as_any_integer(draw, draw(st.integers(1, 4))),
        "T": draw(st.integers(1, 6)),
        "vocab": draw(st.integers(1, 10)),
        "generator": draw(st.sampled_from([None, torch.Generator().manual_seed(2)])),
    }

    def check(tokens, kw):
        assert tokens.shape == (int(kw["n"]), kw["T"]) and not tokens.is_floating_point()
        assert bool(((tokens >= 0) & (tokens < kw["vocab"])).all())

    return Call(LE.reversal_batch, kwargs, check)


@illegal("labs.embedding_scale.reversal_batch")
def _(draw):
    return Call(LE.reversal_batch, {"n": 2, "T": 3, "vocab": 5, "generator": "g"}), ("generator",)


def reversal_setups(draw, d_model):
    """One or two set-ups: ReversalModel keyword arguments with heads that divide d_model."""
    heads = [h for h in (1, 2, 4) if d_model % h == 0]
    return {
        f"s{i}": {
            "positions": draw(st.sampled_from(["sinusoidal", "learned"])),
            "embed_std": draw(st.floats(0.1, 1)),
            "n_head": draw(st.sampled_from(heads)),
        }
        for i in range(draw(st.integers(1, 2)))
    }


@spec(
    "labs.embedding_scale.reversal_experiment",
    params={
        "vocab": POSITIVE,
        "d_model": Param("int", minimum=1, aliases=("D",)),
        "T": POSITIVE,
        "steps": POSITIVE,
        "batch": Param("int", minimum=1, aliases=("B",)),
        "lr": Param("real", above=0),
    },
    examples=5,
)
def _(draw):
    d_model = 2 * draw(st.integers(1, 2))
    kwargs = {
        "setups": reversal_setups(draw, d_model),
        "run_seeds": draw(st.sampled_from([(0,), [1, 2], range(2)])),
        "vocab": draw(st.integers(1, 4)),
        "d_model": d_model,
        "T": draw(st.integers(1, 3)),
        "steps": draw(st.integers(1, 2)),
        "batch": draw(st.integers(1, 3)),
        "lr": draw(st.floats(1e-4, 1e-2)),
    }

    def check(rows, kw):
        assert [(r["setup"], r["seed"]) for r in rows] == [
            (name, seed) for name in kw["setups"] for seed in kw["run_seeds"]
        ]
        for row in rows:
            assert 0 <= row["accuracy"] <= 1 and math.isfinite(row["loss"])
            n_head = kw["setups"][row["setup"]]["n_head"]
            assert row["model"].attention.n_head == n_head

    return Call(LE.reversal_experiment, kwargs, check)


@illegal("labs.embedding_scale.reversal_experiment")
def _(draw):
    changes, names = draw(
        st.sampled_from(
            [
                ({"setups": {}}, ("setups",)),
                ({"setups": {"a": {"vocab": 3}}}, ("setups",)),
                ({"setups": {"a": "learned"}}, ("setups",)),
                ({"setups": {"a": {"positions": "rope"}}}, ("positions",)),
                ({"setups": {"a": {"n_head": 3}}}, ("d_model", "n_head")),
                ({"setups": {"a": {"n_head": [1]}}}, ("n_head",)),
                ({"run_seeds": ()}, ("run_seeds",)),
                ({"run_seeds": (1.5,)}, ("run_seeds",)),
                ({"run_seeds": 0}, ("run_seeds",)),
            ]
        )
    )
    base = {"setups": {"a": {"n_head": 1}}, "run_seeds": (0,), "d_model": 4, "T": 2, "steps": 1}
    return Call(LE.reversal_experiment, base | changes), names


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


@spec("labs.extrapolation.train_ensemble", examples=5)
def _(draw):
    cfg = tiny_cfg(draw, seeds=(0, 1), tasks=("lag", "hold"))
    tasks = draw(st.sampled_from([None, ("hold",), ["lag", "hold"]]))
    run_seeds = draw(st.sampled_from([None, (3,), [np.int64(1)], range(1, 3)]))
    kwargs = {"variant": cfg.variants[0], "cfg": cfg, "tasks": tasks, "run_seeds": run_seeds}

    def check(rows, kw):
        n_tasks = 2 if tasks is None else len(tasks)
        n_seeds = 2 if run_seeds is None else len(run_seeds)
        assert len(rows) == n_tasks * n_seeds
        for row in rows:
            assert set(row["accuracy"]) == set(cfg.eval_lens)
            assert all(0 <= a <= 1 for a in row["accuracy"].values())

    return Call(LX.train_ensemble, kwargs, check)


@illegal("labs.extrapolation.train_ensemble")
def _(draw):
    cfg = tiny_cfg(draw)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"cfg": {"steps": 1}}, ("cfg",)),
                ({"variant": "nope"}, ("variant",)),
                ({"tasks": "lag"}, ("tasks",)),
                ({"tasks": ()}, ("tasks",)),
                ({"tasks": ("copy",)}, ("tasks",)),
                ({"run_seeds": ()}, ("run_seeds",)),
                ({"run_seeds": (1.5,)}, ("run_seeds",)),
            ]
        )
    )
    return Call(LX.train_ensemble, {"variant": cfg.variants[0], "cfg": cfg} | kwargs), names


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
    "causal": Param("bool"),
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
        "causal": draw(st.booleans()),
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


def tiny_encoder(draw, **changes):
    H = draw(st.integers(1, 2))
    kwargs = {
        "vocab": 5,
        "n_classes": draw(st.integers(1, 3)),
        "d_model": 2 * H,
        "n_head": H,
        "d_ff": 4,
        "n_layers": draw(st.integers(1, 3)),
        "norm": draw(st.sampled_from(LN.NORM_KINDS)),
        "placement": draw(st.sampled_from(LN.PLACEMENTS)),
        "max_len": 6,
        "causal": draw(st.booleans()),
    }
    return LN.TinyEncoder(**(kwargs | changes))


@spec("labs.norms.first_layers", params={"n_layers": POSITIVE})
def _(draw):
    model = tiny_encoder(draw).eval()
    n = draw(st.integers(1, len(model.layers)))
    tokens = ids(draw, 2, 3, vocab=5)

    def check(shallow, kw):  # the same weights, fewer layers; the model itself is untouched
        assert len(shallow.layers) == n and shallow.layers[0] is model.layers[0]
        assert shallow(tokens).shape == model(tokens).shape

    return Call(LN.first_layers, {"model": model, "n_layers": as_any_integer(draw, n)}, check)


@illegal("labs.norms.first_layers")
def _(draw):
    model = tiny_encoder(draw)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"model": model, "n_layers": len(model.layers) + 1}, ("n_layers",)),
                ({"model": torch.nn.Linear(2, 2), "n_layers": 1}, ("model",)),
            ]
        )
    )
    return Call(LN.first_layers, kwargs), names


@spec("labs.norms.position_influence", params={"b": Param("int", minimum=0)})
def _(draw):
    model = tiny_encoder(draw).eval()
    B, T = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    tokens = ids(draw, B, T, vocab=5)

    def check(influence, kw):
        assert influence.shape == (T, T) and bool((influence >= 0).all())
        if model.layers[0].attention.causal:  # no output depends on a later input
            assert bool((influence.triu(1) == 0).all())

    return Call(
        LN.position_influence,
        {"model": model, "tokens": tokens, "b": as_any_integer(draw, draw(st.integers(0, B - 1)))},
        check,
    )


@illegal("labs.norms.position_influence")
def _(draw):
    model = tiny_encoder(draw).eval()
    tokens = torch.ones(2, 3, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"model": model, "tokens": tokens, "b": 2}, ("b",)),
                ({"model": model, "tokens": tokens + 5}, ("tokens",)),
                ({"model": model, "tokens": tokens[0]}, ("tokens",)),
                ({"model": model, "tokens": tokens.tolist()}, ("tokens",)),
                ({"model": torch.nn.Linear(2, 2), "tokens": tokens}, ("model",)),
            ]
        )
    )
    return Call(LN.position_influence, kwargs), names


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


@spec(
    "labs.reverse.smoothed_loss_floor",
    params={
        "epsilon": Param("real", minimum=0, maximum=1),
        "V": Param("int", minimum=2),
    },
)
def _(draw):
    epsilon = draw(st.floats(0, 1, exclude_max=True))
    V = draw(st.integers(2, 1000))

    def check(result, kw):
        floor, top = result
        assert 0 <= floor <= math.log(V) + 1e-9 and 1 / V - 1e-12 <= top <= 1

    return Call(LR.smoothed_loss_floor, {"epsilon": epsilon, "V": as_any_integer(draw, V)}, check)


@illegal("labs.reverse.smoothed_loss_floor")
def _(draw):
    return Call(LR.smoothed_loss_floor, {"epsilon": 1.0, "V": 13}), ("epsilon",)


def reverse_configs(draw, **changes):
    sizes = dict(
        src_vocab=13, tgt_vocab=13, d_model=4, n_head=1, d_ff=4, n_enc_layers=1,
        n_dec_layers=1, dropout=0.0, max_len=5,
    )  # fmt: skip
    return [
        TransformerConfig(
            **(sizes | changes),
            token_rms=draw(st.sampled_from([0.25, 1.0])),
            causal=draw(st.booleans()),
        )
        for _ in range(draw(st.integers(1, 2)))
    ]


REVERSE_ENSEMBLE_PARAMS = {
    "steps": Param("int", minimum=0),
    "task": Param("choice", options=DATA_TASKS),
    "length": POSITIVE,
    "batch_size": Param("int", minimum=1, aliases=("B",)),
    "lr": Param("real", above=0),
    "warmup": Param("int", minimum=0),
    "unrelated_targets": Param("bool"),
    "target": Param("real", minimum=0, maximum=1, optional=True),
}


@spec("labs.reverse.train_ensemble", params=REVERSE_ENSEMBLE_PARAMS, examples=5)
def _(draw):
    configs = reverse_configs(draw)
    E, length, steps = len(configs), draw(st.integers(1, 3)), draw(st.integers(0, 2))
    task = draw(st.sampled_from(DATA_TASKS))
    kwargs = {
        "configs": configs,
        "key": draw(st.sampled_from(["fuzz", 3])),
        "steps": steps,
        "task": task,
        "length": length,
        "batch_size": draw(st.integers(1, 3)),
        "lr": draw(st.floats(1e-4, 1e-2)),
        "warmup": draw(st.integers(0, 2)),
        "label_smoothing": draw(st.sampled_from([0.0, 0.1, [0.2] * E])),
        "unrelated_targets": draw(st.booleans()),
        "target": draw(st.sampled_from([None, 1.0, 0.5])),
        "snapshot_steps": draw(st.sampled_from([(), (1,)])),
        "test_set": make_batch(task, 4, length, seed=1),
    }

    def check(run, kw):
        assert len(run.models) == E and all(0 <= a <= 1 for a in run.accuracy)
        assert all(len(losses) <= steps for losses in run.losses)

    return Call(LR.train_ensemble, kwargs, check)


@illegal("labs.reverse.train_ensemble")
def _(draw):
    configs = reverse_configs(draw)
    test_set = make_batch("reverse", 4, 2, seed=1)
    changes, names = draw(
        st.sampled_from(
            [
                ({"configs": []}, ("configs",)),
                ({"configs": [{"d_model": 4}]}, ("configs",)),
                ({"configs": reverse_configs(draw, src_vocab=5, tgt_vocab=5)}, ("configs",)),
                ({"configs": configs + reverse_configs(draw, d_ff=8)}, ("token_rms",)),
                ({"length": 5}, ("length", "max_len")),
                ({"label_smoothing": 1.0}, ("label_smoothing",)),
                ({"label_smoothing": [0.1] * 3}, ("label_smoothing",)),
                ({"snapshot_steps": 1}, ("snapshot_steps",)),
                ({"start": [torch.nn.Linear(2, 2)] * len(configs)}, ("start",)),
                ({"start": []}, ("start",)),
                ({"test_set": (test_set[0] + 13, test_set[1])}, ("test_set",)),
                ({"test_set": (test_set[0], test_set[1][:2])}, ("test_set",)),
                ({"test_set": test_set[0]}, ("test_set",)),
                ({"progress": 3}, ("progress",)),
            ]
        )
    )
    base = {"configs": configs, "key": "fuzz", "steps": 1, "length": 2, "test_set": test_set}
    return Call(LR.train_ensemble, base | changes), names

"""Fuzz entries for the labs' batched ensembles: tutorial_lib.labs.heads (chapter Q1),
.norms_ensemble (Q4) and .seed_ensemble (Q3a, Q3b). A legal call of an ensemble also checks
that each member computes what the single model it stands for computes."""

import torch
from hypothesis import strategies as st
from torch import nn

from tests.fuzz.harness import (
    Call,
    Param,
    Registry,
    as_any_integer,
    holds,
    ids,
)
from tutorial_lib.labs import heads as LH
from tutorial_lib.labs import norms_ensemble as NE
from tutorial_lib.labs.norms import TinyEncoder
from tutorial_lib.labs.seed_ensemble import Ensemble

REGISTRY = Registry(
    {
        "labs.heads.VOCAB": "a constant of chapter Q1's task (the digits)",
        "labs.heads.LENGTH": "a constant of chapter Q1's task (the sequence length)",
        "labs.heads.WIDTH": "a constant: the tiny model's D",
        "labs.heads.HIDDEN": "a constant: the tiny model's MLP width",
        "labs.heads.FIRST_SCORED": "a constant: the first scored position",
        "labs.heads.HeadsResult": "a plain record returned by train_heads (fuzzed, as are its "
        "methods share and copies)",
    }
)
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt
POSITIVE = Param("int", minimum=1)
spec, illegal = REGISTRY.spec, REGISTRY.illegal

T, T_Q = LH.LENGTH, LH.LENGTH - LH.FIRST_SCORED


# -- heads (chapter Q1) -------------------------------------------------------------------------


@spec(
    "labs.heads.difference_batch",
    params={"n": POSITIVE, "copies": Param("int", minimum=1, optional=True)},
)
def _(draw):
    copies = draw(st.one_of(st.none(), st.integers(1, 3)))
    kwargs = {
        "n": as_any_integer(draw, draw(st.integers(1, 4))),
        "generator": draw(st.sampled_from([None, torch.Generator().manual_seed(3)])),
        "copies": copies,
    }

    def check(result, kw):
        tokens, target = result
        lead = () if copies is None else (copies,)
        assert tokens.shape == target.shape == (*lead, int(kw["n"]), T)
        s = LH.FIRST_SCORED
        diff = (tokens[..., s - 1 : -1] - tokens[..., s - 2 : -2]) % LH.VOCAB
        assert torch.equal(target[..., s:], diff)

    return Call(LH.difference_batch, kwargs, check)


@illegal("labs.heads.difference_batch")
def _(draw):
    return Call(LH.difference_batch, {"n": 2, "generator": "g"}), ("generator",)


DIVISORS = [h for h in range(1, LH.WIDTH + 1) if LH.WIDTH % h == 0]


@spec("labs.heads.TinyAttentionModel", params={"n_head": Param("int", minimum=1, aliases=("H",))})
def _(draw):
    H = draw(st.sampled_from(DIVISORS))
    tokens = ids(draw, draw(st.integers(1, 3)), T, vocab=LH.VOCAB)

    def check(result, kw):
        logits, attn = result
        B = tokens.shape[0]
        assert logits.shape == (B, T, LH.VOCAB) and attn.shape == (B, H, T, T)

    return Call(
        lambda n_head, tokens: LH.TinyAttentionModel(n_head)(tokens),
        {"n_head": as_any_integer(draw, H), "tokens": tokens},
        check,
    )


@illegal("labs.heads.TinyAttentionModel")
def _(draw):
    good = torch.ones(2, T, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"n_head": 3, "tokens": good}, ("n_head",)),
                ({"n_head": 2, "tokens": good + LH.VOCAB}, ("tokens",)),
                ({"n_head": 2, "tokens": -good}, ("tokens",)),
                ({"n_head": 2, "tokens": good.float()}, ("tokens",)),
                ({"n_head": 2, "tokens": good[:, :-1]}, ("tokens", "T")),
                ({"n_head": 2, "tokens": good[0]}, ("tokens",)),
            ]
        )
    )
    return Call(lambda n_head, tokens: LH.TinyAttentionModel(n_head)(tokens), kwargs), names


def heads_models(draw):
    """Copies with head counts that nest (each divides the largest), seeded."""
    largest = draw(st.sampled_from([1, 2, 4]))
    n_heads = [draw(st.sampled_from([h for h in (1, 2, 4) if largest % h == 0])) for _ in "ab"]
    torch.manual_seed(draw(st.integers(0, 99)))
    return [LH.TinyAttentionModel(h) for h in [largest, *n_heads[: draw(st.integers(0, 2))]]]


@spec("labs.heads.HeadsEnsemble", examples=8)
def _(draw):
    models = heads_models(draw)
    R, B = len(models), draw(st.integers(1, 3))
    tokens = ids(draw, R, B, T, vocab=LH.VOCAB)

    def check(result, kw):  # copy r computes what its single model computes
        logits, attn = result
        G = max(m.n_head for m in models)
        assert logits.shape == (R, B, T_Q, LH.VOCAB) and attn.shape == (R, G, B, T_Q, T)
        for r, model in enumerate(models):
            alone, _ = model(tokens[r])
            torch.testing.assert_close(logits[r], alone[:, LH.FIRST_SCORED :], atol=1e-4, rtol=1e-4)

    return Call(
        lambda models, tokens: LH.HeadsEnsemble(models)(tokens),
        {"models": models, "tokens": tokens},
        check,
    )


@illegal("labs.heads.HeadsEnsemble")
def _(draw):
    models = [LH.TinyAttentionModel(2), LH.TinyAttentionModel(1)]
    good = torch.ones(2, 3, T, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"models": [], "tokens": good}, ("model",)),
                ({"models": [nn.Linear(2, 2)], "tokens": good}, ("models",)),
                ({"models": models, "tokens": good[:1]}, ("tokens", "R")),
                ({"models": models, "tokens": good[..., :-1]}, ("tokens", "T")),
                ({"models": models, "tokens": good.float()}, ("tokens",)),
                ({"models": models, "tokens": good + LH.VOCAB}, ("tokens",)),
                ({"models": models, "tokens": -good}, ("tokens",)),
                ({"models": models, "tokens": good.tolist()}, ("tokens",)),
            ]
        )
    )
    return Call(lambda models, tokens: LH.HeadsEnsemble(models)(tokens), kwargs), names


@spec("labs.heads.HeadsEnsemble.copy_state", params={"r": Param("int", minimum=0)})
def _(draw):
    models = heads_models(draw)
    ensemble = LH.HeadsEnsemble(models)
    r = draw(st.integers(0, len(models) - 1))

    def check(state, kw):  # loads into the single model and gives back its weights
        model = LH.TinyAttentionModel(ensemble.n_heads[r])
        model.load_state_dict(state)
        for name, value in models[r].state_dict().items():
            assert torch.equal(model.state_dict()[name], value), name

    return Call(ensemble.copy_state, {"r": as_any_integer(draw, r)}, check)


@illegal("labs.heads.HeadsEnsemble.copy_state")
def _(draw):
    ensemble = LH.HeadsEnsemble([LH.TinyAttentionModel(1), LH.TinyAttentionModel(2)])
    return Call(ensemble.copy_state, {"r": 2}), ("r",)


@spec("labs.heads.HeadsEnsemble.head_weights")
def _(draw):
    models = heads_models(draw)
    ensemble = LH.HeadsEnsemble(models)
    B = draw(st.integers(1, 3))
    with torch.no_grad():
        _, attn = ensemble(ids(draw, len(models), B, T, vocab=LH.VOCAB))

    def check(weights, kw):  # per copy (H_r, B, T_q, T), each query's weights sum to 1
        assert [w.shape for w in weights] == [(m.n_head, B, T_Q, T) for m in models]
        for w in weights:
            torch.testing.assert_close(w.sum(-1), torch.ones_like(w[..., 0]))

    return Call(ensemble.head_weights, {"attn": attn}, check)


@illegal("labs.heads.HeadsEnsemble.head_weights")
def _(draw):
    ensemble = LH.HeadsEnsemble([LH.TinyAttentionModel(2), LH.TinyAttentionModel(1)])
    with torch.no_grad():
        _, attn = ensemble(torch.ones(2, 3, T, dtype=torch.long))
    bad = draw(
        st.sampled_from([attn[:1], attn[:, :1], attn[..., :-1], attn[0], attn.long(), [1.0]])
    )
    return Call(ensemble.head_weights, {"attn": bad}), ("attn",)


HEADS_PARAMS = {
    "steps": Param("int", minimum=0),
    "batch_size": Param("int", minimum=1, aliases=("B",)),
    "lr": Param("real", above=0),
    "n_test": POSITIVE,
}


def pass_through(batches, label, total):
    yield from batches


@spec("labs.heads.train_heads", params=HEADS_PARAMS, examples=6)
def _(draw):
    n_heads = draw(st.sampled_from([[1], (2, 1), [4, 4]]))
    kwargs = {
        "n_heads": n_heads,
        "key": draw(st.sampled_from(["fuzz", 7])),
        "steps": draw(st.integers(0, 2)),
        "batch_size": as_any_integer(draw, draw(st.integers(1, 4))),
        "lr": draw(st.floats(1e-4, 1e-2)),
        "n_test": draw(st.integers(1, 5)),
        "report": draw(st.sampled_from([None, pass_through])),
    }

    def check(result, kw):
        R = len(n_heads)
        assert result.n_heads == list(n_heads) and len(result.losses) == kw["steps"]
        assert result.accuracy.shape == (R,) and bool(
            ((result.accuracy >= 0) & (result.accuracy <= 1)).all()
        )
        assert [w.shape for w in result.one_back] == [(h, kw["n_test"], T_Q) for h in n_heads]

    return Call(LH.train_heads, kwargs, check)


@illegal("labs.heads.train_heads")
def _(draw):
    changes, names = draw(
        st.sampled_from(
            [
                ({"n_heads": []}, ("n_heads",)),
                ({"n_heads": "12"}, ("n_heads",)),
                ({"n_heads": [3]}, ("n_head",)),
                ({"n_heads": [2.0]}, ("n_heads",)),
                ({"report": 3}, ("report",)),
            ]
        )
    )
    return Call(LH.train_heads, {"n_heads": [1], "steps": 1, "n_test": 2} | changes), names


def heads_result(draw):
    n_heads = draw(st.sampled_from([[1], [2, 1], [4, 2, 4]]))
    return LH.train_heads(n_heads, steps=draw(st.integers(0, 1)), batch_size=2, n_test=3)


@spec("labs.heads.HeadsResult.share", params={"r": Param("int", minimum=0)})
def _(draw):
    result = heads_result(draw)
    r = draw(st.integers(0, len(result.n_heads) - 1))

    def check(share, kw):
        assert share.shape == (result.n_heads[r], 3, T_Q)
        assert bool(((share >= 0) & (share <= 1)).all())

    return Call(result.share, {"r": as_any_integer(draw, r)}, check)


@illegal("labs.heads.HeadsResult.share")
def _(draw):
    result = heads_result(draw)
    return Call(result.share, {"r": len(result.n_heads)}), ("r",)


@spec("labs.heads.HeadsResult.copies", params={"n_head": Param("int", minimum=1, aliases=("H",))})
def _(draw):
    result = heads_result(draw)
    n_head = draw(st.sampled_from([1, 2, 4, 8]))
    expected = [r for r, h in enumerate(result.n_heads) if h == n_head]
    return Call(
        result.copies, {"n_head": as_any_integer(draw, n_head)}, holds(lambda r: r == expected)
    )


# -- norms ensemble (chapter Q4) ---------------------------------------------------------------

ENSEMBLE_NORMS = ("layer", "batch", "batch_masked")  # RMSNorm has no stacked version


def encoder_members(draw, **changes):
    """E (1..3) TinyEncoders of one size: vocab 6, n_classes C, each its own norm and placement."""
    sizes = {
        "vocab": 6,
        "n_classes": draw(st.integers(1, 3)),
        "d_model": 4,
        "n_head": draw(st.sampled_from([1, 2])),
        "d_ff": 4,
        "n_layers": draw(st.integers(1, 2)),
        "max_len": 5,
        "positions": draw(st.booleans()),
        "causal": draw(st.booleans()),
    } | changes
    members = []
    for _ in range(draw(st.integers(1, 3))):
        torch.manual_seed(draw(st.integers(0, 99)))
        norm = draw(st.sampled_from(ENSEMBLE_NORMS))
        placement = draw(st.sampled_from(["post", "pre"]))
        members.append(TinyEncoder(**sizes, norm=norm, placement=placement))
    return members


def encoder_batch(draw, E):
    """tokens (E, B, T) or (B, T) with B * T >= 2 real tokens (BatchNorm needs two), and a
    padding mask (B, T) or None."""
    B, T = draw(st.integers(1, 3)), draw(st.integers(2, 4))
    shape = draw(st.sampled_from([(E, B, T), (B, T)]))
    tokens = ids(draw, *shape, vocab=6, low=1)
    mask = None
    if draw(st.booleans()):
        lengths = torch.tensor([draw(st.integers(2, T)) for _ in range(B)])
        mask = torch.arange(T) < lengths[:, None]  # (B, T): every row keeps two real tokens
        tokens = tokens * mask
    return tokens, mask


@spec("labs.norms_ensemble.EncoderEnsemble", examples=8)
def _(draw):
    members = encoder_members(draw)
    E = len(members)
    tokens, mask = encoder_batch(draw, E)
    training = draw(st.booleans())

    def function(members, tokens, mask):
        return NE.EncoderEnsemble(members).train(training)(tokens, mask)

    def check(logits, kw):  # member e computes what members[e] computes
        B, T = tokens.shape[-2:]
        assert logits.shape == (E, B, T, members[0].head.out_features)
        for e, model in enumerate(members):
            alone = model.train(training)(tokens if tokens.dim() == 2 else tokens[e], mask)
            torch.testing.assert_close(logits[e], alone, atol=1e-4, rtol=1e-4)

    return Call(function, {"members": members, "tokens": tokens, "mask": mask}, check)


@illegal("labs.norms_ensemble.EncoderEnsemble")
def _(draw):
    members = encoder_members(draw)
    E = len(members)
    good = torch.ones(E, 2, 3, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"members": [], "tokens": good}, ("members",)),
                ({"members": members[0], "tokens": good}, ("members",)),
                ({"members": [nn.Linear(2, 2)], "tokens": good}, ("members",)),
                (
                    {"members": [TinyEncoder(6, 2, d_model=4, norm="rms")], "tokens": good},
                    ("norm",),
                ),
                (
                    {"members": [*members, TinyEncoder(6, 2, d_model=8)], "tokens": good},
                    ("members",),
                ),
                ({"members": members, "tokens": good.float()}, ("tokens",)),
                ({"members": members, "tokens": good + 5}, ("tokens",)),
                ({"members": members, "tokens": -good}, ("tokens",)),
                ({"members": members, "tokens": good.tolist()}, ("tokens",)),
                (
                    {"members": members, "tokens": torch.ones(E + 1, 2, 3, dtype=torch.long)},
                    ("tokens",),
                ),
                ({"members": members, "tokens": good[0, 0]}, ("tokens",)),
                (
                    {
                        "members": members,
                        "tokens": good,
                        "mask": torch.ones(2, 4, dtype=torch.bool),
                    },
                    ("mask",),
                ),
            ]
        )
    )
    return Call(
        lambda members, tokens, mask=None: NE.EncoderEnsemble(members)(tokens, mask), kwargs
    ), names


@spec("labs.norms_ensemble.EncoderEnsemble.ffn_gradient_norms")
def _(draw):
    members = encoder_members(draw)
    ensemble = NE.EncoderEnsemble(members)
    tokens, mask = encoder_batch(draw, len(members))
    ensemble(tokens, mask).square().sum().backward()
    shape = (len(members), len(members[0].layers))
    return Call(
        ensemble.ffn_gradient_norms,
        {},
        holds(lambda r: r.shape == shape and bool((r >= 0).all())),
    )


@illegal("labs.norms_ensemble.EncoderEnsemble.ffn_gradient_norms")
def _(draw):
    return Call(NE.EncoderEnsemble(encoder_members(draw)).ffn_gradient_norms, {}), ("backward",)


@spec("labs.norms_ensemble.EncoderEnsemble.member", params={"e": Param("int", minimum=0)})
def _(draw):
    members = encoder_members(draw)
    ensemble = NE.EncoderEnsemble(members).eval()
    tokens, mask = encoder_batch(draw, len(members))
    e = draw(st.integers(0, len(members) - 1))

    def check(model, kw):  # a TinyEncoder that computes what member e computes
        assert isinstance(model, TinyEncoder) and not model.training
        ours = model(tokens if tokens.dim() == 2 else tokens[e], mask)
        torch.testing.assert_close(ours, ensemble(tokens, mask)[e], atol=1e-4, rtol=1e-4)

    return Call(ensemble.member, {"e": as_any_integer(draw, e)}, check)


@illegal("labs.norms_ensemble.EncoderEnsemble.member")
def _(draw):
    members = encoder_members(draw)
    return Call(NE.EncoderEnsemble(members).member, {"e": len(members)}), ("e",)


def run_axis_params(draw, E, dtype=torch.float32):
    """Two parameters with a leading run axis E, each with a gradient."""
    params = [torch.zeros(E, 3, dtype=dtype), torch.zeros(E, 2, 2, dtype=dtype)]
    for p in params:
        p.requires_grad_(True)
        p.grad = torch.randn(
            p.shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 99))), dtype=dtype
        )
    return params


def first_step_is_bounded(lr, params):
    """A check: Adam's first step moved every number (from 0) by at most its run's rate."""

    def check(result, kw):
        for p in params:
            moved = p.detach().abs().flatten(1).max(dim=1).values  # (E,)
            assert bool((moved <= lr.to(moved.dtype) * (1 + 1e-5)).all()), (moved, lr)

    return check


ADAM_PARAMS = {"eps": Param("real", above=0)}


@spec("labs.norms_ensemble.RunsAdam", params=ADAM_PARAMS)
def _(draw):
    E = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    lr = torch.rand(E, generator=torch.Generator().manual_seed(draw(st.integers(0, 99)))) + 0.01

    params = run_axis_params(draw, E, dtype)

    def function(params, betas, eps):
        NE.RunsAdam(params, betas, eps).step(lr)

    kwargs = {
        "params": draw(st.sampled_from([list, tuple, iter]))(params),
        "betas": (draw(st.floats(0, 0.99)), draw(st.floats(0, 0.999))),
        "eps": draw(st.floats(1e-10, 1e-3)),
    }
    return Call(function, kwargs, first_step_is_bounded(lr, params))


@illegal("labs.norms_ensemble.RunsAdam")
def _(draw):
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"params": []}, ("params",)),
                ({"params": torch.zeros(2, 3)}, ("params",)),
                ({"params": [torch.zeros(2, 3), torch.zeros(3, 3)]}, ("params",)),
                ({"params": [torch.zeros(())]}, ("params",)),
                ({"params": [torch.zeros(2, 3, dtype=torch.long)]}, ("params",)),
                ({"params": [[1.0, 2.0]]}, ("params",)),
                ({"params": [torch.zeros(2, 3)], "betas": (1.0, 0.9)}, ("betas",)),
                ({"params": [torch.zeros(2, 3)], "betas": 0.9}, ("betas",)),
                ({"params": [torch.zeros(2, 3)], "betas": (0.9, "x")}, ("betas",)),
            ]
        )
    )
    return Call(NE.RunsAdam, kwargs), names


@spec("labs.norms_ensemble.RunsAdam.step")
def _(draw):
    E = draw(st.integers(1, 3))
    params = run_axis_params(draw, E)
    optimiser = NE.RunsAdam(params)
    lr = torch.rand(E, generator=torch.Generator().manual_seed(draw(st.integers(0, 99)))) + 0.01
    lr = lr.to(draw(st.sampled_from([torch.float32, torch.float64])))

    def check(result, kw):
        first_step_is_bounded(lr, params)(result, kw)
        assert optimiser.steps == 1

    return Call(optimiser.step, {"lr": lr}, check)


@illegal("labs.norms_ensemble.RunsAdam.step")
def _(draw):
    optimiser = NE.RunsAdam(run_axis_params(draw, 2))
    bad = draw(
        st.sampled_from(
            [
                0.1,
                torch.ones(3),
                torch.ones(2, 1),
                torch.tensor(0.1),
                torch.tensor([0.1, float("nan")]),
                torch.tensor([0.1, -0.1]),
                torch.tensor([True, True]),
            ]
        )
    )
    return Call(optimiser.step, {"lr": bad}), ("lr",)


def member_losses(ensemble, batch):
    tokens, mask = batch
    return ensemble(tokens, mask).square().mean(dim=(1, 2, 3))  # (E,)


@spec("labs.norms_ensemble.train_runs", params={"lr": Param("real", above=0)}, examples=8)
def _(draw):
    members = encoder_members(draw)
    E = len(members)
    batches = [encoder_batch(draw, E) for _ in range(draw(st.integers(0, 2)))]
    kwargs = {
        "ensemble": NE.EncoderEnsemble(members),
        "batches": draw(st.sampled_from([list, tuple, iter]))(batches),
        "loss_fn": member_losses,
        "lr": draw(st.floats(1e-4, 1e-2)),
        "warmup": draw(st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=E, max_size=E))),
    }

    def check(losses, kw):
        assert losses.shape == (len(batches), E) and not kw["ensemble"].training

    return Call(NE.train_runs, kwargs, check)


@illegal("labs.norms_ensemble.train_runs")
def _(draw):
    members = encoder_members(draw)
    E = len(members)
    ensemble = NE.EncoderEnsemble(members)
    batch = encoder_batch(draw, E)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"ensemble": members[0]}, ("ensemble",)),
                ({"batches": 3}, ("batches",)),
                ({"loss_fn": 3}, ("loss_fn",)),
                ({"loss_fn": lambda m, b: 1.0}, ("loss_fn",)),
                ({"loss_fn": lambda m, b: member_losses(m, b).sum()}, ("loss_fn",)),
                ({"warmup": [1] * (E + 1)}, ("warmup",)),
                ({"warmup": [float("nan")] * E}, ("warmup",)),
                ({"warmup": [1.5] * E}, ("warmup",)),
                ({"warmup": [-1] * E}, ("warmup",)),
                ({"warmup": "ab"}, ("warmup",)),
            ]
        )
    )
    base = {"ensemble": ensemble, "batches": [batch], "loss_fn": member_losses, "lr": 1e-3}
    return Call(NE.train_runs, base | kwargs), names


@spec("labs.norms_ensemble.init_gradients", examples=8)
def _(draw):
    members = encoder_members(draw)
    E, C = len(members), members[0].head.out_features
    tokens, _ = encoder_batch(draw, E)
    target = ids(draw, E, *tokens.shape[-2:], vocab=C)

    def check(result, kw):
        grads, rms = result
        assert grads.shape == (E, len(members[0].layers)) and bool((grads >= 0).all())
        assert rms.shape == (E,) and bool((rms >= 0).all())

    return Call(
        NE.init_gradients,
        {"ensemble": NE.EncoderEnsemble(members), "tokens": tokens, "target": target},
        check,
    )


@illegal("labs.norms_ensemble.init_gradients")
def _(draw):
    members = encoder_members(draw)
    E, C = len(members), members[0].head.out_features
    tokens = torch.ones(E, 2, 3, dtype=torch.long)
    target = torch.zeros(E, 2, 3, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"target": target + C}, ("target",)),
                ({"target": target - 1}, ("target",)),
                ({"target": target.float()}, ("target",)),
                ({"target": target[0]}, ("target",)),
                ({"target": target.tolist()}, ("target",)),
                ({"ensemble": members[0]}, ("ensemble",)),
                ({"tokens": tokens + 6}, ("tokens",)),
            ]
        )
    )
    base = {"ensemble": NE.EncoderEnsemble(members), "tokens": tokens, "target": target}
    return Call(NE.init_gradients, base | kwargs), names


# -- seed ensemble (chapters Q3a, Q3b) ---------------------------------------------------------


class Scaled(nn.Module):
    """A Linear times a per-member constant (a buffer): what the ensemble stacks."""

    def __init__(self, d_in: int, d_out: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(d_in, d_out)
        self.register_buffer("scale", torch.tensor(scale))

    def forward(self, x):
        return self.linear(x) * self.scale


def scaled_members(draw):
    d_in, d_out = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    members = []
    for _ in range(draw(st.integers(1, 3))):
        torch.manual_seed(draw(st.integers(0, 99)))
        members.append(Scaled(d_in, d_out, draw(st.floats(0.5, 2))))
    return members, d_in


def member_inputs(draw, members, d_in):
    g = torch.Generator().manual_seed(draw(st.integers(0, 99)))
    return torch.randn(len(members), draw(st.integers(1, 3)), d_in, generator=g)  # (E, B, d_in)


def each_member_alone(members, x):
    """A check: output e is members[e] run on x[e]."""

    def check(out, kw):
        for e, model in enumerate(members):
            torch.testing.assert_close(out[e], model(x[e]), atol=1e-5, rtol=1e-5)

    return check


@spec("labs.seed_ensemble.Ensemble")
def _(draw):
    members, d_in = scaled_members(draw)
    x = member_inputs(draw, members, d_in)
    models = draw(st.sampled_from([list, tuple]))(members)
    return Call(
        lambda models, x: Ensemble(models)(x),
        {"models": models, "x": x},
        each_member_alone(members, x),
    )


@illegal("labs.seed_ensemble.Ensemble")
def _(draw):
    members, d_in = scaled_members(draw)
    x = member_inputs(draw, members, d_in)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"models": [], "x": x}, ("models",)),
                ({"models": members[0], "x": x}, ("models",)),
                ({"models": [3], "x": x}, ("models",)),
                ({"models": [*members, nn.Linear(2, 7)], "x": x}, ("models",)),
                ({"models": [*members, Scaled(d_in, 1, 1.0).double()], "x": x}, ("models",)),
                ({"models": members, "x": x[:0]}, ("E",)),
                ({"models": members, "x": x.sum()}, ("E",)),
                ({"models": members, "x": x.tolist()}, ("inputs",)),
            ]
        )
    )
    return Call(lambda models, x: Ensemble(models)(x), kwargs), names


@spec(
    "labs.seed_ensemble.Ensemble.map",
    params={"chunk_size": Param("int", minimum=1, optional=True)},
)
def _(draw):
    members, d_in = scaled_members(draw)
    ensemble = Ensemble(members)
    x = member_inputs(draw, members, d_in)

    def fn(model, x):  # a tuple: the output and its sum
        out = model(x)
        return out, out.sum()

    def check(result, kw):
        out, total = result
        each_member_alone(members, x)(out, kw)
        torch.testing.assert_close(total, out.flatten(1).sum(1))

    return Call(
        lambda fn, x, chunk_size: ensemble.map(fn, x, chunk_size=chunk_size),
        {"fn": fn, "x": x, "chunk_size": draw(st.one_of(st.none(), st.integers(1, 3)))},
        check,
    )


@illegal("labs.seed_ensemble.Ensemble.map")
def _(draw):
    members, d_in = scaled_members(draw)
    ensemble = Ensemble(members)
    x = member_inputs(draw, members, d_in)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"fn": 3, "x": x}, ("fn",)),
                ({"fn": lambda m, x: m(x), "x": x[:0]}, ("E",)),
                ({"fn": lambda m, x: m(x), "x": "x"}, ("inputs",)),
            ]
        )
    )
    return Call(lambda fn, x: ensemble.map(fn, x), kwargs), names


@spec("labs.seed_ensemble.Ensemble.unstack")
def _(draw):
    members, d_in = scaled_members(draw)
    ensemble = Ensemble(members)
    with torch.no_grad():
        for p in ensemble.parameters():
            p.add_(1.0)  # as if trained: the stacked weights differ from the members'
    fresh = [Scaled(d_in, members[0].linear.out_features, 1.0) for _ in members]

    def check(models, kw):
        assert models is kw["models"] and all(not m.training for m in models)
        for e, model in enumerate(models):
            for name, stacked in zip(ensemble.param_names, ensemble.stacked, strict=True):
                assert torch.equal(model.get_parameter(name), stacked[e]), name

    return Call(ensemble.unstack, {"models": draw(st.sampled_from([list, tuple]))(fresh)}, check)


@illegal("labs.seed_ensemble.Ensemble.unstack")
def _(draw):
    members, d_in = scaled_members(draw)
    ensemble = Ensemble(members)
    bad = draw(
        st.sampled_from(
            [
                members[:-1],
                members + members,
                members[0],
                [3] * len(members),
                [nn.Linear(d_in + 1, 9) for _ in members],
                iter(members),
            ]
        )
    )
    return Call(ensemble.unstack, {"models": bad}), ("models",)

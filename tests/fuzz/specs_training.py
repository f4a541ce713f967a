"""Fuzz entries for tutorial_lib.data, .decoding, .training, .seeds and .notebook."""

import numpy as np
import torch
from hypothesis import strategies as st

from tests.fuzz.harness import (
    Call,
    Param,
    Registry,
    Spec,
    as_any_integer,
    holds,
    ids,
    sizes,
)
from tests.fuzz.specs_model import model
from tutorial_lib import data as DATA
from tutorial_lib import decoding as DEC
from tutorial_lib import notebook, seeds
from tutorial_lib import training as TR

REGISTRY = Registry(
    {
        "decoding.Decoded": "a plain record returned by greedy_decode_cached (fuzzed)",
        "decoding.Beam": "a plain record returned by beam_search (fuzzed)",
        "training.TrainResult": "a plain record returned by train (fuzzed)",
        "data.PAD": "a constant token id",
        "data.BOS": "a constant token id",
        "data.EOS": "a constant token id",
        "data.N_SPECIAL": "a constant: the number of special tokens",
        "data.TASKS": "a constant: the task names (make_batch is fuzzed with them)",
        "seeds.ENV": "a constant: the environment variable's name",
    }
)
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt
POSITIVE = Param("int", minimum=1)
spec, illegal = REGISTRY.spec, REGISTRY.illegal


# -- data -------------------------------------------------------------------------------------


@spec("data.vocab_size", params={"n_symbols": POSITIVE})
def _(draw):
    n = draw(st.integers(1, 100))
    return Call(
        DATA.vocab_size,
        {"n_symbols": as_any_integer(draw, n)},
        holds(lambda r: r == n + DATA.N_SPECIAL),
    )


BATCH_PARAMS = {
    "task": Param("choice", options=DATA.TASKS),
    "batch_size": Param("int", minimum=1, aliases=("B",)),
    "length": Param("int", minimum=1, aliases=("T",)),
    "n_symbols": POSITIVE,
    "min_length": Param("int", minimum=1, optional=True),
}


def batch_kwargs(draw):
    T = draw(st.integers(1, 8))
    return {
        "task": draw(st.sampled_from(DATA.TASKS)),
        "batch_size": draw(st.integers(1, 5)),
        "length": T,
        "n_symbols": draw(st.integers(1, 12)),
        "min_length": draw(st.one_of(st.none(), st.integers(1, T))),
    }


def right_answers(result, kw):
    src, tgt = result
    assert src.shape == tgt.shape == (kw["batch_size"], kw["length"])
    for s, t in zip(src.tolist(), tgt.tolist(), strict=True):
        real = [x for x in s if x != DATA.PAD]
        assert s[len(real) :] == [DATA.PAD] * (len(s) - len(real))
        expected = {"copy": real, "reverse": real[::-1], "sort": sorted(real)}[kw["task"]]
        assert t == expected + [DATA.PAD] * (len(s) - len(real))


@spec("data.make_batch", params=BATCH_PARAMS)
def _(draw):
    kwargs = batch_kwargs(draw) | {"seed": draw(st.one_of(st.integers(-5, 5), st.just("name")))}
    return Call(DATA.make_batch, kwargs, right_answers)


@illegal("data.make_batch")
def _(draw):
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"min_length": 9}, ("min_length",)),
                ({"generator": "g"}, ("generator",)),
                ({"seed": 2.5}, ("seed",)),
            ]
        )
    )
    return Call(DATA.make_batch, {"task": "copy", "batch_size": 2, "length": 4} | kwargs), names


@spec("data.batches", params={k: v for k, v in BATCH_PARAMS.items() if k != "min_length"})
def _(draw):
    kwargs = batch_kwargs(draw)
    kwargs.pop("min_length")
    return Call(lambda **kw: next(DATA.batches(**kw)), kwargs, right_answers)


@spec("data.teacher_forcing")
def _(draw):
    B, T = sizes(draw, 2, 1, 5)
    rows = []
    for _ in range(B):
        n = draw(st.integers(0, T))
        rows.append([draw(st.integers(3, 12)) for _ in range(n)] + [DATA.PAD] * (T - n))
    tgt = draw(st.sampled_from([torch.tensor(rows), rows]))

    def check(result, kw):
        dec_in, dec_target = result
        t = torch.tensor(rows)
        assert dec_in.shape == dec_target.shape == (B, T + 1)
        assert (dec_in[:, 0] == DATA.BOS).all() and torch.equal(dec_in[:, 1:], dec_target[:, :-1])
        real = t != DATA.PAD
        assert torch.equal(dec_target[:, :-1][real], t[real])
        assert ((dec_target == DATA.EOS).sum(1) == 1).all()

    return Call(DATA.teacher_forcing, {"tgt": tgt}, check)


@illegal("data.teacher_forcing")
def _(draw):
    bad = draw(
        st.sampled_from(
            [
                [[3, 0, 4]],
                torch.tensor([[5, 0, 0, 6]]),
                torch.tensor([3, 4]),
                torch.tensor([[3.0]]),
                torch.tensor([[-1, 3]]),
                "3 4",
            ]
        )
    )
    return Call(DATA.teacher_forcing, {"tgt": bad}), ("tgt",)


@spec("data.to_text")
def _(draw):
    tokens = draw(st.lists(st.integers(0, 20), max_size=8))
    kind = draw(st.sampled_from([list, torch.tensor, tuple]))
    return Call(
        DATA.to_text,
        {
            "tokens": kind(tokens)
            if tokens or kind is not torch.tensor
            else torch.zeros(0, dtype=torch.long)
        },
        holds(lambda r: len(r.split()) == len(tokens)),
    )


@illegal("data.to_text")
def _(draw):
    bad = draw(
        st.sampled_from([torch.zeros(2, 3, dtype=torch.long), torch.tensor([1.5]), [-1], ["a"]])
    )
    return Call(DATA.to_text, {"tokens": bad}), ("tokens",)


@spec("data.from_text", params={"n_symbols": POSITIVE})
def _(draw):
    n = draw(st.integers(1, 20))
    symbols = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6))
    one_digit = all(s < 10 for s in symbols) and len(symbols) > 1 and draw(st.booleans())
    text = (
        "".join(map(str, symbols))
        if one_digit
        else draw(st.sampled_from([" ", "  ", "\t"])).join(map(str, symbols))
    )
    if len(symbols) == 1 and symbols[0] >= 10:
        text = f"{symbols[0]} "
        symbols = [int(c) for c in str(symbols[0])]
    return Call(
        DATA.from_text,
        {"text": text, "n_symbols": n},
        holds(lambda r: r.tolist() == [[s + DATA.N_SPECIAL for s in symbols]]),
    )


@illegal("data.from_text")
def _(draw):
    bad = draw(st.sampled_from(["+3 4", "1_0 2", "٣ 1", "-1 2", "", "x", "3 99", 31, None]))
    return Call(DATA.from_text, {"text": bad, "n_symbols": 11}), ("text",)


# -- decoding and training ---------------------------------------------------------------------


def decoding_model(draw, **changes):
    return model(draw, n_enc_layers=1, n_dec_layers=1, **changes)


def bad_decoding_calls(m, src):
    """Spoilt calls every decoder refuses, greedy or beam: (kwargs, the names to blame)."""
    return [
        ({"model": m, "src": src, "max_len": m.config.max_len + 1}, ("max_len",)),
        ({"model": torch.nn.Linear(2, 2), "src": src, "max_len": 2}, ("model",)),
        ({"model": m, "src": src.float(), "max_len": 2}, ("src",)),
        ({"model": m, "src": src + m.config.src_vocab, "max_len": 2}, ("src",)),
    ]


for _name in ("greedy_decode", "greedy_decode_cached"):
    _target = getattr(DEC, _name)

    def _legal(draw, function=_target):
        m = decoding_model(draw, causal=True)
        src = ids(draw, draw(st.integers(1, 3)), draw(st.integers(1, 4)), vocab=m.config.src_vocab)
        steps = draw(st.integers(1, m.config.max_len))

        def check(result, kw):
            tokens = result[0] if isinstance(result, tuple) else result.tokens
            assert tokens.shape[0] == src.shape[0] and tokens.shape[1] <= steps

        return Call(function, {"model": m, "src": src, "max_len": steps}, check)

    def _illegal(draw, function=_target):
        m = decoding_model(draw, causal=True)
        src = torch.ones(2, 3, dtype=torch.long)
        kwargs, names = draw(
            st.sampled_from(
                [
                    *bad_decoding_calls(m, src),
                ]
            )
        )
        return Call(function, kwargs), names

    SPECS[f"decoding.{_name}"] = Spec(
        _legal, params={"max_len": POSITIVE}, illegal=_illegal, examples=8
    )


for _name in ("teacher_forced_accuracy", "sequence_accuracy"):
    _target = getattr(DEC, _name)

    def _legal(draw, function=_target):
        m = decoding_model(draw, src_vocab=13, tgt_vocab=13)
        T = draw(st.integers(1, 4))
        src, tgt = DATA.make_batch(
            "reverse", draw(st.integers(1, 3)), T, min_length=1, seed=draw(st.integers(0, 9))
        )
        if T + 1 > m.config.max_len:
            src, tgt = src[:, : m.config.max_len - 1], tgt[:, : m.config.max_len - 1]
        return Call(function, {"model": m, "src": src, "tgt": tgt}, holds(lambda r: 0 <= r <= 1))

    def _illegal(draw, function=_target):
        m = decoding_model(draw, src_vocab=13, tgt_vocab=13)
        src, tgt = DATA.make_batch("copy", 2, 3)
        kwargs, names = draw(
            st.sampled_from(
                [
                    ({"src": src, "tgt": tgt[:1]}, ("src", "tgt")),
                    ({"src": src.float(), "tgt": tgt}, ("src",)),
                ]
            )
        )
        return Call(function, {"model": m} | kwargs), names

    SPECS[f"decoding.{_name}"] = Spec(_legal, illegal=_illegal, examples=6)


@spec(
    "decoding.length_penalty",
    params={"length": POSITIVE, "alpha": Param("real", minimum=0)},
)
def _(draw):
    alpha = draw(st.floats(0, 2))
    if draw(st.booleans()):
        n = draw(st.integers(1, 50))
        return Call(
            DEC.length_penalty,
            {"length": as_any_integer(draw, n), "alpha": alpha},
            holds(lambda r: r >= 1 and abs(r - ((5 + n) / 6) ** alpha) < 1e-9),
        )
    lengths = torch.tensor(draw(st.lists(st.integers(1, 20), min_size=1, max_size=4)))
    lengths = lengths.to(draw(st.sampled_from([torch.long, torch.float64])))
    return Call(
        DEC.length_penalty,
        {"length": lengths, "alpha": alpha},
        holds(lambda r: r.shape == lengths.shape and bool((r >= 1).all())),
    )


@illegal("decoding.length_penalty")
def _(draw):
    bad = draw(
        st.sampled_from(
            [
                torch.tensor([0, 3]),
                torch.tensor([2.0, float("nan")]),
                torch.tensor([True]),
                torch.tensor([-1.0]),
            ]
        )
    )
    return Call(DEC.length_penalty, {"length": bad, "alpha": 0.6}), ("length",)


def right_beams(result, kw):
    B, max_len = kw["src"].shape[0], kw["max_len"]
    assert result.tokens.shape == (B, max_len) and result.scores.shape == (B,)
    assert bool(((result.lengths >= 1) & (result.lengths <= max_len)).all())
    after = torch.arange(max_len) >= result.lengths[:, None]  # (B, max_len): past the output
    assert bool((result.tokens[after] == DATA.PAD).all())
    assert bool((result.log_probs <= 0).all())


@spec(
    "decoding.beam_search",
    params={
        "max_len": POSITIVE,
        "beam_size": POSITIVE,
        "alpha": Param("real", minimum=0),
    },
    examples=8,
)
def _(draw):
    m = decoding_model(draw, causal=True)
    src = ids(draw, draw(st.integers(1, 3)), draw(st.integers(1, 4)), vocab=m.config.src_vocab)
    kwargs = {
        "model": m,
        "src": src,
        "max_len": as_any_integer(draw, draw(st.integers(1, min(4, m.config.max_len)))),
        "beam_size": as_any_integer(draw, draw(st.integers(1, 4))),
        "alpha": draw(st.sampled_from([0, 0.6, np.float64(1.0)])),
    }
    return Call(DEC.beam_search, kwargs, right_beams)


@illegal("decoding.beam_search")
def _(draw):
    m = decoding_model(draw, causal=True)
    src = torch.ones(2, 3, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                *bad_decoding_calls(m, src),
                ({"model": m, "src": src[0], "max_len": 2}, ("src",)),
                (
                    {"model": decoding_model(draw, causal=False), "src": src, "max_len": 2},
                    ("causal",),
                ),
            ]
        )
    )
    return Call(DEC.beam_search, kwargs), names


@spec("training.one_thread")
def _(draw):
    def function():
        before = torch.get_num_threads()
        with TR.one_thread():
            inside = torch.get_num_threads()
        return inside, torch.get_num_threads() == before

    return Call(function, {}, holds(lambda r: r == (1, True)))


def linear_fit(draw):
    model = torch.nn.Linear(3, 1).to(draw(st.sampled_from([torch.float32, torch.float64])))
    g = torch.Generator().manual_seed(draw(st.integers(0, 99)))
    batches = iter(lambda: torch.randn(4, 3, generator=g, dtype=model.weight.dtype), None)
    return model, batches, lambda model, x: model(x).pow(2).mean()


FIT_PARAMS = {
    "steps": Param("int", minimum=0),
    "lr": Param("real", above=0),
    "eps": Param("real", above=0),
    "warmup": Param("int", minimum=0),
}


@spec("training.fit", params=FIT_PARAMS)
def _(draw):
    model, batches, loss_fn = linear_fit(draw)
    steps = draw(st.integers(0, 5))
    kwargs = {
        "model": model,
        "batches": batches,
        "loss_fn": loss_fn,
        "steps": steps,
        "lr": draw(st.floats(1e-4, 0.1)),
        "eps": 1e-8,
        "warmup": draw(st.integers(0, 3)),
        "betas": (draw(st.floats(0, 0.99)), 0.999),
    }
    return Call(TR.fit, kwargs, holds(lambda losses: len(losses) == steps))


@illegal("training.fit")
def _(draw):
    model, batches, loss_fn = linear_fit(draw)
    base = {"model": model, "batches": batches, "loss_fn": loss_fn, "steps": 2, "lr": 0.01}
    changes, names = draw(
        st.sampled_from(
            [
                ({"batches": [torch.zeros(4, 3)]}, ("batches",)),
                ({"batches": iter([torch.zeros(4, 3)])}, ("batches",)),
                ({"betas": (1.0, 0.9)}, ("betas",)),
                ({"betas": 0.9}, ("betas",)),
                ({"loss_fn": lambda model, x: model(x)}, ("loss_fn",)),
                ({"model": "model"}, ("model",)),
            ]
        )
    )
    return Call(TR.fit, base | changes), names


@spec("training.teacher_forcing_loss")
def _(draw):
    m = decoding_model(draw, src_vocab=13, tgt_vocab=13)
    src, tgt = DATA.make_batch(
        "copy",
        draw(st.integers(1, 3)),
        draw(st.integers(1, 4)),
        min_length=1,
        seed=draw(st.integers(0, 9)),
    )
    return Call(
        TR.teacher_forcing_loss,
        {"model": m, "src": src, "tgt": tgt},
        holds(lambda r: r[0].dim() == 0 and r[0] >= 0),
    )


@illegal("training.teacher_forcing_loss")
def _(draw):
    m = decoding_model(draw, src_vocab=13, tgt_vocab=13)
    src, tgt = DATA.make_batch("copy", 2, 3)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"src": src, "tgt": tgt[:1]}, ("src", "tgt")),
                ({"src": src, "tgt": tgt.float()}, ("tgt",)),
            ]
        )
    )
    return Call(TR.teacher_forcing_loss, {"model": m} | kwargs), names


TRAIN_PARAMS = {
    "task": Param("choice", options=DATA.TASKS),
    "max_steps": Param("int", minimum=0),
    "warmup": Param("int", minimum=0),
    "lr": Param("real", above=0),
    "target_accuracy": Param("real", minimum=0, maximum=1, optional=True),
    "eval_every": Param("int", minimum=1, optional=True),
    "seed": Param("int"),
}


@spec("training.train", params=TRAIN_PARAMS, examples=6)
def _(draw):
    m = decoding_model(draw, src_vocab=13, tgt_vocab=13, max_len=8)
    test_set = DATA.make_batch("copy", 4, 3, seed=1)
    kwargs = {
        "model": m,
        "task": draw(st.sampled_from(DATA.TASKS)),
        "length": 3,
        "batch_size": 4,
        "test_set": test_set,
        "max_steps": draw(st.integers(0, 3)),
        "warmup": draw(st.integers(0, 3)),
        "lr": draw(st.floats(1e-4, 1e-2)),
        "target_accuracy": draw(st.one_of(st.none(), st.floats(0, 1))),
        "eval_every": draw(st.one_of(st.none(), st.integers(1, 3))),
        "seed": draw(st.integers(-3, 3)),
    }
    return Call(
        TR.train,
        kwargs,
        holds(lambda r: r.steps <= kwargs["max_steps"] and len(r.losses) == r.steps),
    )


@illegal("training.train")
def _(draw):
    m = decoding_model(draw, src_vocab=13, tgt_vocab=13)
    kwargs, names = draw(
        st.sampled_from(
            [({"model": m, "n_symbols": 20}, ("n_symbols",)), ({"model": "m"}, ("model",))]
        )
    )
    return Call(TR.train, kwargs | {"max_steps": 1}), names


# -- seeds and notebook -----------------------------------------------------------------------

KEY = st.lists(
    st.one_of(st.text(max_size=5), st.integers(-10, 10), st.integers(0, 9).map(np.int64)),
    max_size=3,
)
BAD_KEY = st.lists(st.sampled_from([1.5, True, None, b"x", (1,)]), min_size=1, max_size=2)


for _name, _check in (
    ("derive", lambda r: 0 <= r < 2**63),
    ("generator", lambda r: isinstance(r, torch.Generator)),
    ("manual_seed", lambda r: 0 <= r < 2**63),
):
    _target = getattr(seeds, _name)
    SPECS[f"seeds.{_name}"] = Spec(
        lambda draw, f=_target, check=_check: Call(
            lambda key: f(*key), {"key": draw(KEY)}, holds(check)
        ),
        illegal=lambda draw, f=_target: (
            Call(lambda key: f(*key), {"key": draw(BAD_KEY)}),
            ("seed",),
        ),
    )


@spec("seeds.book_seed")
def _(draw):
    return Call(seeds.book_seed, {}, holds(lambda r: isinstance(r, int)))


@spec("notebook.glue")
def _(draw):
    return Call(
        notebook.glue,
        {
            "name": draw(st.text("abc_", min_size=1, max_size=5)),
            "value": draw(st.integers()),
            "display": False,
        },
    )


@illegal("notebook.glue")
def _(draw):
    return Call(
        notebook.glue, {"name": draw(st.sampled_from(["", None, 3])), "value": 1, "display": False}
    ), ("name",)


@spec("notebook.progress")
def _(draw):
    items = draw(st.lists(st.integers(), max_size=5))
    kind = draw(st.sampled_from([list, tuple, iter]))
    return Call(
        lambda items, label: list(notebook.progress(items, label)),
        {"items": kind(items), "label": "x"},
        holds(lambda r: r == items),
    )

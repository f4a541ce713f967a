"""Fuzz entries for tutorial_lib.model."""

import torch
from hypothesis import strategies as st

from tests.fuzz.harness import (
    FLOATS,
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
from tutorial_lib import model as M

REGISTRY = Registry(
    {"model.LayerCache": "a plain record of tensors, filled by DecoderLayer.start_cache (fuzzed)"}
)
SPECS = REGISTRY.specs
EXEMPT = REGISTRY.exempt
POSITIVE = Param("int", minimum=1)
spec, illegal = REGISTRY.spec, REGISTRY.illegal


# -- model ------------------------------------------------------------------------------------


def config(draw, **changes):
    V = draw(st.integers(4, 9))
    H = draw(st.integers(1, 3))
    D = H * 2 * draw(st.integers(1, 2))  # even: the sinusoidal table comes in pairs
    fields = dict(
        src_vocab=V,
        tgt_vocab=V,
        d_model=D,
        n_head=H,
        d_ff=draw(st.integers(1, 8)),
        n_enc_layers=draw(st.integers(0, 2)),
        n_dec_layers=draw(st.integers(1, 2)),
        dropout=0.0,
        max_len=draw(st.integers(6, 12)),
        token_rms=draw(st.floats(0.1, 2)),
        share_embeddings=draw(st.booleans()),
        tie_output=draw(st.booleans()),
        scale_embedding=draw(st.booleans()),
        causal=draw(st.booleans()),
        ffn_bias=draw(st.booleans()),
    )
    return M.TransformerConfig(**(fields | changes))


CONFIG_PARAMS = {
    "src_vocab": Param("int", minimum=1, aliases=("V_src",)),
    "d_model": Param("int", minimum=1, aliases=("D",)),
    "n_head": Param("int", minimum=1, aliases=("H",)),
    "d_ff": POSITIVE,
    "n_enc_layers": Param("int", minimum=0),
    "n_dec_layers": POSITIVE,
    "dropout": Param("real", minimum=0, maximum=1),
    "max_len": POSITIVE,
    "token_rms": Param("real", above=0),
    "pad_id": Param("int", minimum=0),
    "share_embeddings": Param("bool"),
    "tie_output": Param("bool"),
    "scale_embedding": Param("bool"),
    "causal": Param("bool"),
    "ffn_bias": Param("bool"),
    "d_k": Param("int", minimum=1, optional=True),
}


@spec("model.TransformerConfig", params=CONFIG_PARAMS)
def _(draw):
    V, H = draw(st.integers(4, 9)), draw(st.integers(1, 3))
    kwargs = dict(
        src_vocab=V,
        tgt_vocab=V,
        d_model=2 * H * draw(st.integers(1, 3)),
        n_head=H,
        d_ff=draw(st.integers(1, 8)),
        n_enc_layers=draw(st.integers(0, 2)),
        n_dec_layers=1,
        dropout=draw(st.floats(0, 1)),
        max_len=8,
        token_rms=1.0,
        pad_id=draw(st.integers(0, 3)),
        share_embeddings=True,
        tie_output=True,
        scale_embedding=True,
        causal=True,
        ffn_bias=True,
        d_k=draw(st.one_of(st.none(), st.integers(1, 4))),
    )
    kwargs = {name: as_any_integer(draw, v) if type(v) is int else v for name, v in kwargs.items()}

    def check(config, kw):
        for name in ("src_vocab", "d_model", "n_head", "max_len", "pad_id"):
            assert type(getattr(config, name)) is int
        assert len(config.head_dims) == 2

    return Call(M.TransformerConfig, kwargs, check)


@illegal("model.TransformerConfig")
def _(draw):
    kwargs, names = draw(
        st.sampled_from(
            [
                (dict(d_model=30, n_head=4), ("D", "H")),
                (dict(d_model=9, n_head=3), ("d_model",)),
                (dict(src_vocab=10, tgt_vocab=11), ("share_embeddings",)),
                (dict(src_vocab=5, tgt_vocab=5, pad_id=5), ("pad_id",)),
            ]
        )
    )
    return Call(M.TransformerConfig, kwargs), names


@spec("model.FeedForward", params={"d_model": POSITIVE, "d_ff": POSITIVE, "bias": Param("bool")})
def _(draw):
    D = draw(st.integers(1, 6))
    x = tensor(draw, *sizes(draw, 2, 1, 4), D, dtype=draw(st.sampled_from(FLOATS)))

    def function(d_model, d_ff, bias, x):
        return M.FeedForward(d_model, d_ff, bias).to(x.dtype)(x)

    return Call(
        function,
        {"d_model": D, "d_ff": draw(st.integers(1, 8)), "bias": draw(st.booleans()), "x": x},
        shape_is(*x.shape, dtype=x.dtype),
    )


@illegal("model.FeedForward")
def _(draw):
    x = tensor(draw, 2, 3, 4)
    bad, names = draw(
        st.sampled_from(
            [(x[0], ("x",)), (x.double(), ("x",)), (x[..., :3], ("x", "D")), (x.long(), ("x",))]
        )
    )
    return Call(lambda x: M.FeedForward(4, 8)(x), {"x": bad}), names


def memory_and_masks(draw, cfg, B):
    T_src, T_tgt = sizes(draw, 2, 1, 5)
    src = ids(draw, B, T_src, vocab=cfg.src_vocab)
    tgt = ids(draw, B, T_tgt, vocab=cfg.tgt_vocab)
    return src, tgt, M.source_mask(src, cfg.pad_id), M.target_mask(tgt, cfg.pad_id)


@spec("model.EncoderLayer", examples=8)
def _(draw):
    cfg = config(draw)
    B = draw(st.integers(1, 3))
    src, _, src_mask, _ = memory_and_masks(draw, cfg, B)
    x = tensor(draw, B, src.shape[1], cfg.d_model)

    def check(result, kw):
        assert result[0].shape == x.shape and result[1].shape == (
            B,
            cfg.n_head,
            x.shape[1],
            x.shape[1],
        )

    return Call(
        lambda config, x, mask: M.EncoderLayer(config)(x, mask),
        {"config": cfg, "x": x, "mask": src_mask},
        check,
    )


@illegal("model.EncoderLayer")
def _(draw):
    cfg = config(draw)
    x = tensor(draw, 2, 3, cfg.d_model)
    args, names = draw(
        st.sampled_from(
            [
                (({"d_model": 4}, x, None), ("config",)),
                ((cfg, x[0], None), ("x",)),
                ((cfg, x, torch.ones(2, 1, 4, dtype=torch.bool)), ("mask",)),
            ]
        )
    )
    return Call(
        lambda config, x, mask: M.EncoderLayer(config)(x, mask),
        dict(zip(["config", "x", "mask"], args, strict=True)),
    ), names


@spec("model.DecoderLayer", examples=8)
def _(draw):
    cfg = config(draw)
    B = draw(st.integers(1, 3))
    src, tgt, src_mask, tgt_mask = memory_and_masks(draw, cfg, B)
    y, memory = tensor(draw, *tgt.shape, cfg.d_model), tensor(draw, *src.shape, cfg.d_model)

    def function(config, y, memory, self_mask, cross_mask):
        return M.DecoderLayer(config)(y, memory, self_mask, cross_mask)

    check = shape_is(*y.shape, pick=lambda r: r[0])
    return Call(
        function,
        {"config": cfg, "y": y, "memory": memory, "self_mask": tgt_mask, "cross_mask": src_mask},
        check,
    )


@illegal("model.DecoderLayer")
def _(draw):
    cfg = config(draw)
    y, memory = tensor(draw, 2, 3, cfg.d_model), tensor(draw, 2, 4, cfg.d_model)
    args, names = draw(
        st.sampled_from(
            [
                ((y, memory[:1]), ("y", "memory")),
                ((y, memory[..., :0]), ("memory",)),
                ((y[0], memory), ("y",)),
            ]
        )
    )
    return Call(
        lambda y, memory: M.DecoderLayer(cfg)(y, memory),
        dict(zip(["y", "memory"], args, strict=True)),
    ), names


@spec("model.DecoderLayer.start_cache")
def _(draw):
    cfg = config(draw)
    layer = M.DecoderLayer(cfg)
    memory = tensor(draw, 2, draw(st.integers(1, 4)), cfg.d_model)
    return Call(
        layer.start_cache,
        {"memory": memory},
        holds(lambda c: c.cross_k.shape[:2] == (2, cfg.n_head)),
    )


@illegal("model.DecoderLayer.start_cache")
def _(draw):
    cfg = config(draw)
    bad = draw(st.sampled_from([torch.zeros(2, 3), torch.zeros(2, 3, cfg.d_model + 1), [[0.0]]]))
    return Call(M.DecoderLayer(cfg).start_cache, {"memory": bad}), ("memory",)


@spec("model.DecoderLayer.step")
def _(draw):
    cfg = config(draw)
    layer = M.DecoderLayer(cfg).eval()
    B = draw(st.integers(1, 3))
    cache = layer.start_cache(tensor(draw, B, 3, cfg.d_model))
    for _ in range(draw(st.integers(0, 2))):  # some steps already taken
        layer.step(tensor(draw, B, 1, cfg.d_model), cache)
    is_real = draw(
        st.sampled_from(
            [None, torch.ones(B, 1, dtype=torch.bool), torch.zeros(B, 1, dtype=torch.bool)]
        )
    )
    kwargs = {
        "y_new": tensor(draw, B, 1, cfg.d_model),
        "cache": cache,
        "cross_mask": None,
        "is_real": is_real,
    }
    return Call(layer.step, kwargs, shape_is(B, 1, cfg.d_model, pick=lambda r: r[0]))


@illegal("model.DecoderLayer.step")
def _(draw):
    cfg = config(draw)
    layer = M.DecoderLayer(cfg)
    cache = layer.start_cache(tensor(draw, 2, 3, cfg.d_model))
    y = tensor(draw, 2, 1, cfg.d_model)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"y_new": tensor(draw, 2, 2, cfg.d_model), "cache": cache}, ("y_new",)),
                ({"y_new": tensor(draw, 3, 1, cfg.d_model), "cache": cache}, ("y_new",)),
                ({"y_new": y, "cache": "cache"}, ("cache",)),
                (
                    {"y_new": y, "cache": cache, "is_real": torch.ones(2, 2, dtype=torch.bool)},
                    ("is_real",),
                ),
                ({"y_new": y, "cache": cache, "is_real": torch.ones(2, 1)}, ("is_real",)),
            ]
        )
    )
    return Call(layer.step, kwargs), names


def table(cfg):
    return torch.nn.Embedding(cfg.src_vocab, cfg.d_model)


@spec("model.Encoder", examples=8)
def _(draw):
    cfg = config(draw)
    src = ids(draw, 2, draw(st.integers(1, cfg.max_len)), vocab=cfg.src_vocab)

    def function(config, table, src):
        return M.Encoder(config, table)(src, M.source_mask(src, config.pad_id))

    return Call(
        function,
        {"config": cfg, "table": table(cfg), "src": src},
        shape_is(*src.shape, cfg.d_model, pick=lambda r: r[0]),
    )


@illegal("model.Encoder")
def _(draw):
    cfg = config(draw)
    kwargs, names = draw(
        st.sampled_from(
            [
                (
                    {
                        "table": torch.nn.Embedding(4, cfg.d_model + 1),
                        "src": torch.ones(1, 2, dtype=torch.long),
                    },
                    ("table",),
                ),
                (
                    {"table": torch.nn.Linear(2, 2), "src": torch.ones(1, 2, dtype=torch.long)},
                    ("table",),
                ),
                ({"table": table(cfg), "src": torch.full((1, 2), cfg.src_vocab)}, ("src",)),
                ({"table": table(cfg), "src": torch.ones(1, 2)}, ("src",)),
                (
                    {"table": table(cfg), "src": torch.ones(1, cfg.max_len + 1, dtype=torch.long)},
                    ("max_len",),
                ),
            ]
        )
    )
    return Call(lambda table, src: M.Encoder(cfg, table)(src), kwargs), names


@spec("model.Decoder", examples=8)
def _(draw):
    cfg = config(draw)
    src, tgt, src_mask, tgt_mask = memory_and_masks(draw, cfg, 2)
    memory = tensor(draw, *src.shape, cfg.d_model)

    def function(config, table, tgt, memory, self_mask, cross_mask):
        return M.Decoder(config, table)(tgt, memory, self_mask, cross_mask)

    kwargs = {
        "config": cfg,
        "table": table(cfg),
        "tgt": tgt,
        "memory": memory,
        "self_mask": tgt_mask,
        "cross_mask": src_mask,
    }
    return Call(function, kwargs, shape_is(*tgt.shape, cfg.src_vocab, pick=lambda r: r[0]))


@illegal("model.Decoder")
def _(draw):
    cfg = config(draw)
    decoder = M.Decoder(cfg, table(cfg))
    memory = tensor(draw, 2, 3, cfg.d_model)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"tgt": torch.full((2, 2), -1), "memory": memory}, ("tgt",)),
                (
                    {"tgt": torch.ones(2, 2, dtype=torch.long), "memory": memory[:1]},
                    ("y", "memory"),
                ),
                ({"tgt": torch.ones(2), "memory": memory}, ("tgt",)),
            ]
        )
    )
    return Call(lambda tgt, memory: decoder(tgt, memory, None, None), kwargs), names


@spec("model.Decoder.logits")
def _(draw):
    cfg = config(draw)
    decoder = M.Decoder(cfg, table(cfg))
    y = tensor(draw, 2, draw(st.integers(1, 4)), cfg.d_model)
    return Call(decoder.logits, {"y": y}, shape_is(*y.shape[:2], cfg.src_vocab))


@illegal("model.Decoder.logits")
def _(draw):
    cfg = config(draw)
    bad = draw(
        st.sampled_from(
            [
                torch.zeros(2, 3, cfg.d_model + 1),
                torch.zeros(2, 3, cfg.d_model, dtype=torch.float64),
                torch.zeros(3),
            ]
        )
    )
    return Call(M.Decoder(cfg, table(cfg)).logits, {"y": bad}), ("y",)


@spec("model.Decoder.start_cache")
def _(draw):
    cfg = config(draw)
    decoder = M.Decoder(cfg, table(cfg))
    memory = tensor(draw, 2, 3, cfg.d_model)
    return Call(
        decoder.start_cache,
        {"memory": memory},
        holds(lambda caches: len(caches) == cfg.n_dec_layers),
    )


@illegal("model.Decoder.start_cache")
def _(draw):
    cfg = config(draw)
    return Call(M.Decoder(cfg, table(cfg)).start_cache, {"memory": torch.zeros(2, 3)}), ("memory",)


@spec("model.Decoder.step")
def _(draw):
    cfg = config(draw)
    decoder = M.Decoder(cfg, table(cfg)).eval()
    caches = decoder.start_cache(tensor(draw, 2, 3, cfg.d_model))
    token = ids(draw, 2, 1, vocab=cfg.src_vocab)
    kwargs = {
        "token": token,
        "position": draw(st.integers(0, cfg.max_len - 1)),
        "caches": caches,
        "cross_mask": None,
    }
    return Call(decoder.step, kwargs, shape_is(2, 1, cfg.src_vocab, pick=lambda r: r[0]))


@illegal("model.Decoder.step")
def _(draw):
    cfg = config(draw)
    decoder = M.Decoder(cfg, table(cfg))
    caches = decoder.start_cache(tensor(draw, 2, 3, cfg.d_model))
    token = torch.ones(2, 1, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                (
                    {"token": torch.ones(2, 2, dtype=torch.long), "position": 0, "caches": caches},
                    ("token",),
                ),
                ({"token": token, "position": -1, "caches": caches}, ("position",)),
                ({"token": token, "position": cfg.max_len, "caches": caches}, ("max_len",)),
                ({"token": token, "position": 0, "caches": caches[:0]}, ("caches",)),
                ({"token": token, "position": 0, "caches": None}, ("caches",)),
                (
                    {"token": torch.full((2, 1), cfg.src_vocab), "position": 0, "caches": caches},
                    ("token",),
                ),
            ]
        )
    )
    return Call(lambda **kw: decoder.step(cross_mask=None, **kw), kwargs), names


def model(draw, **changes):
    cfg = config(draw, **changes)
    torch.manual_seed(draw(st.integers(0, 100)))
    return M.Transformer(cfg).to(draw(st.sampled_from(FLOATS))).eval()


@spec("model.Transformer", examples=8)
def _(draw):
    m = model(draw)
    B = draw(st.integers(1, 3))
    src, tgt, _, _ = memory_and_masks(draw, m.config, B)
    return Call(
        lambda src, tgt_in: m(src, tgt_in),
        {"src": src, "tgt_in": tgt},
        shape_is(*tgt.shape, m.config.tgt_vocab),
    )


@illegal("model.Transformer")
def _(draw):
    m = model(draw)
    V = m.config.src_vocab
    good = torch.ones(2, 3, dtype=torch.long)
    kwargs, names = draw(
        st.sampled_from(
            [
                ({"src": good, "tgt_in": torch.ones(3, 3, dtype=torch.long)}, ("src", "tgt_in")),
                ({"src": torch.full((2, 3), V), "tgt_in": good}, ("src",)),
                ({"src": good, "tgt_in": torch.full((2, 3), -1)}, ("tgt_in",)),
                ({"src": good.float(), "tgt_in": good}, ("src",)),
                ({"src": good.tolist(), "tgt_in": good}, ("src",)),
                ({"src": good[0], "tgt_in": good}, ("src",)),
                (
                    {"src": good, "tgt_in": torch.ones(2, m.config.max_len + 1, dtype=torch.long)},
                    ("max_len",),
                ),
            ]
        )
    )
    return Call(lambda src, tgt_in: m(src, tgt_in), kwargs), names


@spec("model.Transformer.encode")
def _(draw):
    m = model(draw)
    src = ids(draw, 2, draw(st.integers(1, 4)), vocab=m.config.src_vocab)
    return Call(m.encode, {"src": src}, shape_is(*src.shape, m.config.d_model, pick=lambda r: r[0]))


@illegal("model.Transformer.encode")
def _(draw):
    m = model(draw)
    bad = draw(
        st.sampled_from([torch.full((2, 3), m.config.src_vocab), torch.ones(3), torch.ones(2, 3)])
    )
    return Call(m.encode, {"src": bad}), ("src",)


@spec("model.Transformer.decode")
def _(draw):
    m = model(draw)
    src, tgt, _, _ = memory_and_masks(draw, m.config, 2)
    memory, src_mask = m.encode(src)
    kwargs = {"tgt_in": tgt, "memory": memory, "src_mask": src_mask}
    return Call(m.decode, kwargs, shape_is(*tgt.shape, m.config.tgt_vocab))


@illegal("model.Transformer.decode")
def _(draw):
    m = model(draw)
    src, tgt, _, _ = memory_and_masks(draw, m.config, 2)
    memory, src_mask = m.encode(src)
    kwargs, names = draw(
        st.sampled_from(
            [
                (
                    {"tgt_in": tgt, "memory": memory[:1], "src_mask": src_mask[:1]},
                    ("tgt_in", "memory"),
                ),
                ({"tgt_in": tgt, "memory": memory, "src_mask": src_mask.float()}, ("src_mask",)),
                ({"tgt_in": tgt, "memory": memory, "src_mask": src_mask[:, 0]}, ("src_mask",)),
                ({"tgt_in": tgt, "memory": memory[..., :0], "src_mask": src_mask}, ("memory",)),
            ]
        )
    )
    return Call(m.decode, kwargs), names


@spec("model.source_mask", params={"pad_id": Param("int", minimum=0)})
def _(draw):
    src = ids(draw, *sizes(draw, 2, 1, 4), vocab=5)
    pad = draw(st.integers(0, 4))
    return Call(
        M.source_mask,
        {"src": src, "pad_id": pad},
        holds(lambda r: torch.equal(r, (src != pad)[:, None])),
    )


@spec("model.target_mask", params={"pad_id": Param("int", minimum=0)})
def _(draw):
    tgt = ids(draw, draw(st.integers(1, 3)), draw(st.integers(0, 4)), vocab=5)
    pad = draw(st.integers(0, 4))
    return Call(
        M.target_mask,
        {"tgt": tgt, "pad_id": pad},
        shape_is(tgt.shape[0], tgt.shape[1], tgt.shape[1]),
    )


for _name, _arg in (("source_mask", "src"), ("target_mask", "tgt")):
    _target = getattr(M, _name)
    SPECS[f"model.{_name}"].illegal = lambda draw, f=_target, arg=_arg: (
        Call(
            f,
            {
                arg: draw(
                    st.sampled_from([torch.ones(3, dtype=torch.long), torch.ones(2, 3), [[1, 2]]])
                ),
                "pad_id": 0,
            },
        ),
        (arg,),
    )


@spec("model.count_parameters")
def _(draw):
    m = model(draw)

    def check(counts, kw):
        assert sum(counts.values()) == sum(p.numel() for p in m.parameters())

    return Call(M.count_parameters, {"model": m}, check)


@illegal("model.count_parameters")
def _(draw):
    bad, names = draw(
        st.sampled_from([("model", ("model",)), (torch.nn.Linear(2, 2), ("component",))])
    )
    return Call(M.count_parameters, {"model": bad}), names

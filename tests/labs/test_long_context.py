"""Chapter Q7's lab (tutorial_lib.labs.long_context and .long_context_reading)."""

import math

import pytest
import torch

from tutorial_lib.attention import causal_mask
from tutorial_lib.labs.extrapolation import IGNORE
from tutorial_lib.labs.long_context import (
    CHAPTER_METHODS,
    FILLERS,
    TASKS,
    LongContextConfig,
    Reader,
    _batch,
    finetune_readers,
    needle_batch,
    rotation_for,
    train_readers,
)
from tutorial_lib.labs.long_context_reading import (
    _answer_key,
    _read,
    attention_by_distance,
    long_context_experiment,
    pair_leads,
    read_at_lengths,
)
from tutorial_lib.positional import ReRoPE, RoPE, ScaledRoPE

TINY = dict(
    train_len=16, queries=4, short_len=8, batch=2, short_batch=2, steps=3, finetune_steps=2,
    rerope_window=4, eval_batch=2, seeds=(0, 1), scales=(1, 2),
)  # fmt: skip


def model(seed=0, **changes):
    torch.manual_seed(seed)
    return Reader(LongContextConfig(**(TINY | changes))).double()


def test_reading_the_last_positions_is_exactly_the_full_causal_layer():
    reader = model()
    tokens = torch.randint(0, 16, (3, 16), generator=torch.Generator().manual_seed(1))
    logits, weights = reader(tokens)
    # The whole T x T layer, then its last Q rows: what a one-layer model gives those positions.
    x = reader.embed(tokens)
    out, full = reader.attention(reader.norm_in(x), mask=causal_mask(16)[None])
    expected = reader.readout(reader.norm_out(x + out))[:, -4:]
    torch.testing.assert_close(logits[0], expected)
    torch.testing.assert_close(weights[0], full[:, :, -4:])


def test_many_rotations_in_one_pass_equal_one_at_a_time_and_leave_the_model_as_it_was():
    reader = model()
    tokens = torch.randint(0, 16, (2, 20), generator=torch.Generator().manual_seed(2))
    rotations = [RoPE(), ScaledRoPE("yarn", 16, 2.0), ReRoPE(4)]
    together, _ = reader(tokens, rotations)
    for r, rotation in enumerate(rotations):
        reader.attention.attention.rotation = rotation
        torch.testing.assert_close(together[r], reader(tokens)[0][0])
    reader.attention.attention.rotation = RoPE()
    reader(tokens, rotations)
    assert isinstance(reader.attention.attention.rotation, RoPE)


@pytest.mark.parametrize("task", TASKS)
def test_the_reading_statistics_follow_their_definitions(task):
    """One head and one query at a time: the head with most weight on the answer's key (focus),
    its weight on keys L or more back (far) and its entropy, means over the scored queries."""
    cfg, reader = LongContextConfig(**TINY), model(seed=3)
    L, T, Q = cfg.train_len, 3 * cfg.train_len, cfg.queries
    tokens, target = _batch(task, 5, T, torch.Generator().manual_seed(4), cfg)
    at = _answer_key(task, tokens, target, cfg)  # (n, Q)
    rotations = [RoPE(), ScaledRoPE("yarn", 16, 3.0)]
    with torch.no_grad():
        stats = _read(reader, tokens, target, at, rotations, L)  # (R, 5)
        logits, weights = reader(tokens, rotations)  # (R, n, Q, V), (R, n, H, Q, T)
    scored = [(i, q) for i in range(5) for q in range(Q) if target[i, q] != IGNORE]
    for r in range(len(rotations)):
        w = weights[r]  # (n, H, Q, T)
        heads = range(w.shape[1])
        focus = [sum(w[i, h, q, at[i, q]] for i, q in scored) / len(scored) for h in heads]
        h = max(heads, key=lambda h: focus[h])
        far = sum(w[i, h, q, : T - Q + q - L + 1].sum() for i, q in scored) / len(scored)
        entropy = sum(-sum(p * math.log(p) for p in w[i, h, q].tolist() if p > 0)
                      for i, q in scored) / len(scored)  # fmt: skip
        right = sum(int(logits[r, i, q].argmax() == target[i, q]) for i, q in scored)
        expected = torch.tensor([right, len(scored), focus[h], far, entropy], dtype=stats.dtype)
        torch.testing.assert_close(stats[r], expected)


def test_the_needle_sits_before_the_read_positions_and_is_the_answer_after_it():
    tokens, target = needle_batch(50, 40, torch.Generator().manual_seed(3), last=8)
    needles = tokens >= FILLERS
    assert (needles.sum(1) == 1).all()
    where = needles.int().argmax(1)
    assert (where < 32).all()
    for row in range(50):
        assert (target[row, : where[row] + 1] == IGNORE).all()
        assert (target[row, where[row] + 1 :] == tokens[row, where[row]]).all()


def test_the_answer_key_is_the_key_that_holds_the_answer():
    cfg = LongContextConfig(**TINY)
    g = torch.Generator().manual_seed(4)
    for task, make in (("lag", None), ("needle", None)):
        from tutorial_lib.labs.long_context import _batch

        tokens, target = _batch(task, 5, 32, g, cfg)
        at = _answer_key(task, tokens, target, cfg)
        scored = target != IGNORE
        assert torch.equal(tokens.gather(1, at)[scored], target[scored]), (task, make)


def test_a_tiny_experiment_reads_every_method_at_every_length_with_and_without_tuning():
    cfg = LongContextConfig(**TINY)
    result = long_context_experiment(cfg)
    assert set(result["finetuned"]) == set(CHAPTER_METHODS)
    assert {"by-parts", "yarn", "logn"} <= set(result["trained"])
    for phase in ("trained", "finetuned"):
        for rows in result[phase].values():
            assert len(rows) == 4  # two tasks x two seeds
            for row in rows:
                assert set(row["accuracy"]) == {16, 32}
                assert all(0 <= v <= 1 for v in row["accuracy"].values())
                assert all(0 <= v <= 1 + 1e-6 for v in row["focus"].values())
                assert all(0 <= v <= math.log(32) + 1e-6 for v in row["entropy"].values())
    assert set(result["static"]) == {"interpolation", "ntk", "yarn"}
    assert set(result["static"]["ntk"][0]["accuracy"]) == {16}


def test_the_fine_tune_works_on_copies_set_for_its_scale():
    cfg = LongContextConfig(**TINY)
    models = train_readers(cfg)
    before = [m.readout.weight.clone() for m in models]
    tuned = finetune_readers(models, "yarn", cfg)
    assert all(torch.equal(m.readout.weight, b) for m, b in zip(models, before, strict=True))
    assert not torch.equal(tuned[0].readout.weight, before[0])
    rotation = tuned[0].attention.attention.rotation
    assert isinstance(rotation, ScaledRoPE) and rotation.scale == 2.0
    assert isinstance(models[0].attention.attention.rotation, RoPE)


def test_reading_a_method_set_for_another_scale():
    cfg = LongContextConfig(**TINY)
    models = train_readers(cfg)
    fixed = read_at_lengths(models, ("ntk",), cfg, scale_of=lambda T: 1.0)
    plain = read_at_lengths(models, ("rope",), cfg)
    assert fixed["ntk"][0]["accuracy"] == plain["rope"][0]["accuracy"]  # s = 1 is RoPE


def test_attention_by_distance_and_pair_leads_add_up():
    reader = model(seed=5)
    tokens = torch.randint(0, 10, (3, 24), generator=torch.Generator().manual_seed(6))
    profile = attention_by_distance(reader, tokens, RoPE())  # (H, T)
    assert profile.shape == (2, 24) and (profile >= 0).all() and (profile <= 1 + 1e-9).all()
    # Pair leads sum to the whole score lead of the answer's key over the others.
    at = torch.full((3, 4), 5)
    leads = pair_leads(reader, tokens, at, RoPE())  # (H, d_k/2)
    assert leads.shape == (2, 8)
    h = reader.norm_in(reader.embed(tokens))
    k, _ = reader.attention.project_kv(h)
    q = reader.attention.w_q(h[:, -4:]).view(3, 4, 2, 16).transpose(1, 2)
    scores = RoPE()(q, k, 1 / 4)  # (n, H, Q, T)
    readable = causal_mask(4, 24)
    lead = scores[..., 5] - (scores * readable).sum(-1).sub(scores[..., 5]) / (readable.sum(-1) - 1)
    torch.testing.assert_close(leads.sum(-1), lead.mean(dim=(0, 2)))


def test_rotation_for_reads_the_registry_and_refuses_what_does_not_rotate():
    cfg = LongContextConfig(**TINY)
    assert rotation_for("interpolation", cfg, 4).scale == 4.0
    assert rotation_for("leaky-rerope", cfg, 2).leaky == pytest.approx((32 - 1 - 4) / (16 - 1 - 4))
    with pytest.raises(ValueError, match="does not rotate q and k"):
        rotation_for("alibi", cfg, 2)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(d_model=30, n_head=2), r"d_k = d_model / n_head must be a whole even number"),
        (dict(queries=16), r"queries < train_len"),
        (dict(rerope_window=15), r"rerope_window must be below L - 1"),
        (dict(methods=("rope", "nope")), r"variant must be one of"),
        (dict(tasks="lag"), r"tasks must be a non-empty tuple"),
        (dict(steps=0), r"steps"),
    ],
)
def test_bad_settings_are_named_before_anything_trains(changes, message):
    with pytest.raises((ValueError, TypeError), match=message):
        LongContextConfig(**(TINY | changes))

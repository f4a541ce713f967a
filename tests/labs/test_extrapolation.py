"""The length-extrapolation lab (tutorial_lib.labs.extrapolation): tasks, models, measurements."""

import pytest
import torch

from tutorial_lib.positional import alibi_slopes


def test_toy_tasks_targets():
    from tutorial_lib.labs.extrapolation import IGNORE, hold_last_value_batch, lag_copy_batch

    g = torch.Generator().manual_seed(0)
    tokens, target = lag_copy_batch(4, 12, g, lag=3)
    assert (target[:, :3] == IGNORE).all()
    assert torch.equal(target[:, 3:], tokens[:, :-3])
    tokens, target = hold_last_value_batch(50, 20, g, values=8)
    for row, tgt in zip(tokens.tolist(), target.tolist(), strict=True):
        latest = None
        for tok, t in zip(row, tgt, strict=True):
            latest = tok if tok < 8 else latest
            assert t == latest


@pytest.mark.parametrize("variant", ["none", "learned", "sinusoidal", "shaw", "xl", "t5",
                                     "alibi", "rope", "rerope"])  # fmt: skip
def test_position_model_runs_every_variant_past_its_training_length(variant):
    from tutorial_lib.labs.extrapolation import ExtrapolationConfig, train_and_evaluate

    cfg = ExtrapolationConfig(steps=3, eval_lens=(16, 32), eval_batch=4)
    row = train_and_evaluate(variant, "lag", cfg, seed=0)
    assert set(row["accuracy"]) == {16, 32}
    assert all(0.0 <= a <= 1.0 for a in row["accuracy"].values())
    assert row["far_attention"][16] == 0.0  # at the training length nothing is that far
    assert 0.0 <= row["far_attention"][32] <= 1.0 and 0.0 <= row["focus"][32] <= 1.0
    assert row["best_head"][32] in range(cfg.n_head)
    hold = train_and_evaluate(variant, "hold", ExtrapolationConfig(steps=1, eval_lens=(16,)))
    assert hold["focus"][16] is None and hold["best_head"][16] is None
    with pytest.raises(ValueError, match="variant"):
        train_and_evaluate("fourier", "lag", cfg)


def test_position_part_by_distance():
    from tutorial_lib.labs.extrapolation import (
        ExtrapolationConfig,
        PositionModel,
        position_part_by_distance,
    )

    cfg = ExtrapolationConfig()
    tokens = torch.randint(0, 10, (3, 12), generator=torch.Generator().manual_seed(0))
    # ALiBi's bias is exactly -slope_h * d at distance d, whatever the tokens.
    alibi = position_part_by_distance(PositionModel("alibi", 10, cfg), tokens, first=4)
    expected = -alibi_slopes(cfg.n_head)[:, None] * torch.arange(12.0)  # (H, T)
    torch.testing.assert_close(alibi, expected)
    # Transformer-XL: terms (b) + (d) only, averaged by hand over queries i >= 4.
    torch.manual_seed(0)
    model = PositionModel("xl", 10, cfg)
    with torch.no_grad():
        model.blocks[0].attention.attention.bias.v.normal_()
    profile = position_part_by_distance(model, tokens, first=4)  # (H, T)
    attention = model.blocks[0].attention.attention
    seen = {}
    hook = attention.register_forward_pre_hook(lambda _, args: seen.update(q=args[0], k=args[1]))
    with torch.no_grad():
        model(tokens)
        hook.remove()
        terms = attention.bias.four_terms(seen["q"], seen["k"])
    part = (terms["b"] + terms["d"]) / attention.temperature  # (B, H, T, T)
    for d in (0, 3, 11):
        pairs = [part[:, :, i, i - d] for i in range(max(4, d), 12)]  # each (B, H)
        torch.testing.assert_close(profile[:, d], torch.stack(pairs).mean(dim=(0, 1)))
    with pytest.raises(ValueError, match="no bias"):
        position_part_by_distance(PositionModel("rope", 10, cfg), tokens)


def test_lab_inputs_are_checked_by_the_lab():
    """Issue 18: a KeyError for an unknown task, ZeroDivisionError for n_head = 0, and
    "index out of range in self" for a token id >= V."""
    from tutorial_lib.labs.extrapolation import (
        ExtrapolationConfig,
        PositionModel,
        lag_copy_batch,
        summarise,
        train_and_evaluate,
    )

    cfg = ExtrapolationConfig(train_len=6, eval_lens=(6,), d_model=8, n_head=2, steps=1, batch=2)
    with pytest.raises(ValueError, match=r"task must be one of \['lag', 'hold'\]; got task='copy'"):
        train_and_evaluate("rope", "copy", cfg)
    with pytest.raises(ValueError, match="n_head must be a positive integer"):
        ExtrapolationConfig(n_head=0)
    with pytest.raises(ValueError, match="lag must be below train_len"):
        ExtrapolationConfig(train_len=3, lag=3)
    with pytest.raises(ValueError, match=r"tokens must hold token ids 0..V-1 = 0..9"):
        PositionModel("rope", 10, cfg)(torch.full((2, 6), 10))
    with pytest.raises(ValueError, match="lag must be below T"):
        lag_copy_batch(2, 3, None, lag=3)
    with pytest.raises(ValueError, match="key must be one of"):
        summarise([], "accuracy_at_L")


def test_position_model_reads_the_same_when_the_batch_equals_the_length():
    """The causal mask goes in with its batch axis, so B = T is not mistaken for padding."""
    from tutorial_lib.labs.extrapolation import ExtrapolationConfig, PositionModel

    cfg = ExtrapolationConfig(train_len=6, eval_lens=(6,), d_model=8, n_head=2)
    model = PositionModel("alibi", 10, cfg).eval()
    tokens = torch.randint(0, 10, (6, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        together = model(tokens)
        alone = torch.cat([model(tokens[b : b + 1]) for b in range(6)])
    torch.testing.assert_close(together, alone)


def test_an_ensemble_member_matches_its_run_alone():
    from tutorial_lib.labs.extrapolation import (
        ExtrapolationConfig,
        train_and_evaluate,
        train_ensemble,
    )

    cfg = ExtrapolationConfig(steps=4, eval_lens=(16, 24), eval_batch=8)
    rows = train_ensemble("shaw", cfg, tasks=("lag", "hold"), run_seeds=(0, 1))
    assert [(r["task"], r["seed"]) for r in rows] == [
        ("lag", 0),
        ("lag", 1),
        ("hold", 0),
        ("hold", 1),
    ]
    alone = train_and_evaluate("shaw", "hold", cfg, seed=1)
    together = rows[3]
    for (name, a), (_, b) in zip(
        alone["model"].named_parameters(), together["model"].named_parameters(), strict=True
    ):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=name)
    for T in cfg.eval_lens:
        assert abs(alone["accuracy"][T] - together["accuracy"][T]) < 0.02
    assert together["accuracy_beyond_L"][16] is None and 0 <= together["accuracy_beyond_L"][24] <= 1
    with pytest.raises(ValueError, match="task"):
        train_ensemble("shaw", cfg, tasks=("copy",))

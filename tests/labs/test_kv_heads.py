"""Chapter Q6's lab: the task, the models with their caches, pooling heads, the training."""

import pytest
import torch

from tutorial_lib.attention import KVCache
from tutorial_lib.labs import kv_heads as lab
from tutorial_lib.latent import LatentCache

SPECS = [lab.KVSpec(n_kv_head=4), lab.KVSpec(n_kv_head=2), lab.KVSpec(n_kv_head=1),
         lab.KVSpec(d_c=8)]  # fmt: skip


def test_the_target_is_the_record_one_step_back():
    records, target = lab.record_batch(5, torch.Generator().manual_seed(0))
    assert records.shape == target.shape == (5, lab.LENGTH, lab.FIELDS)
    assert (target[:, 0] == lab.IGNORE).all()
    torch.testing.assert_close(target[:, 1:], records[:, :-1])
    assert records.min() >= 0 and records.max() < lab.DIGITS


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_decoding_with_the_cache_equals_the_full_forward(spec):
    torch.manual_seed(0)
    model = lab.RecordModel(spec).double().eval()
    records, _ = lab.record_batch(3, torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(records)
    stepwise, bytes_per_token = lab.measured_cache_bytes(model, records)
    torch.testing.assert_close(stepwise, full)
    assert bytes_per_token == 8 * lab.cache_numbers(spec)  # float64: 8 bytes a number


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_cache_is_what_the_formula_counts(spec):
    model = lab.RecordModel(spec).eval()
    records, _ = lab.record_batch(2, torch.Generator().manual_seed(2))
    _, bytes_per_token = lab.measured_cache_bytes(model, records)
    assert bytes_per_token == 4 * lab.cache_numbers(spec)  # float32
    assert isinstance(model.new_cache(), LatentCache if spec.d_c else KVCache)


def test_cache_numbers_follow_the_papers_formulas():
    d_k = lab.WIDTH // lab.HEADS
    assert lab.cache_numbers(lab.KVSpec(n_kv_head=lab.HEADS)) == 2 * lab.HEADS * d_k
    assert lab.cache_numbers(lab.KVSpec(n_kv_head=1)) == 2 * d_k
    assert lab.cache_numbers(lab.KVSpec(d_c=16)) == 16 + lab.D_ROPE


def test_the_model_reads_only_earlier_records():
    torch.manual_seed(0)
    model = lab.RecordModel(lab.KVSpec(n_kv_head=2)).eval()
    records, _ = lab.record_batch(4, torch.Generator().manual_seed(3))
    changed = records.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % lab.DIGITS
    with torch.no_grad():
        torch.testing.assert_close(model(changed)[:, :5], model(records)[:, :5])


def test_pooling_averages_each_groups_key_and_value_heads():
    torch.manual_seed(0)
    mha = lab.RecordModel(lab.KVSpec(n_kv_head=4))
    gqa = lab.pool_kv_heads(mha, 2)
    assert gqa.spec == lab.KVSpec(n_kv_head=2)
    d_k = lab.WIDTH // lab.HEADS
    for name in ("w_k", "w_v"):
        heads = getattr(mha.attention, name).weight.view(4, d_k, lab.WIDTH)
        pooled = getattr(gqa.attention, name).weight.view(2, d_k, lab.WIDTH)
        torch.testing.assert_close(pooled[0], (heads[0] + heads[1]) / 2)
        torch.testing.assert_close(pooled[1], (heads[2] + heads[3]) / 2)
    torch.testing.assert_close(gqa.attention.w_q.weight, mha.attention.w_q.weight)
    torch.testing.assert_close(gqa.readout[0].weight, mha.readout[0].weight)


def test_pooling_heads_that_agree_changes_nothing():
    """If the heads of every group already share their keys and values, the pooled grouped model
    computes exactly what the multi-head one does."""
    torch.manual_seed(0)
    mha = lab.RecordModel(lab.KVSpec(n_kv_head=4)).double().eval()
    d_k = lab.WIDTH // lab.HEADS
    with torch.no_grad():
        for name in ("w_k", "w_v"):
            w = getattr(mha.attention, name).weight.view(2, 2, d_k, lab.WIDTH)
            w[:, 1] = w[:, 0]  # heads 1 and 3 copy heads 0 and 2
    gqa = lab.pool_kv_heads(mha, 2).double()
    records, _ = lab.record_batch(3, torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(gqa(records), mha(records))


def test_only_a_multi_head_model_is_pooled():
    with pytest.raises(ValueError, match="pool a multi-head model"):
        lab.pool_kv_heads(lab.RecordModel(lab.KVSpec(n_kv_head=2)), 1)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({}, "give n_kv_head or d_c"),
        ({"n_kv_head": 2, "d_c": 8}, "give n_kv_head or d_c"),
        ({"n_kv_head": 3}, "n_kv_head must divide H = 4; got 3"),
    ],
)
def test_a_spec_names_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lab.KVSpec(**kwargs)


def test_names_say_which_attention():
    assert [s.name for s in SPECS] == ["MHA", "GQA, 2 kv heads", "MQA", "MLA, d_c = 8"]


def test_training_runs_every_copy_on_its_own_batches():
    run = lab.train_variant(lab.KVSpec(n_kv_head=2), key="test-q6", copies=2, steps=4,
                            eval_every=2)  # fmt: skip
    assert len(run.models) == 2 and run.accuracy.shape == (2,)
    assert sorted(run.curve) == [0, 2, 4]
    torch.testing.assert_close(run.curve[4], run.accuracy)
    assert len(run.losses) == 4
    assert run.parameters == sum(p.numel() for p in run.models[0].parameters())
    # The copies start apart and train apart.
    a, b = (m.attention.w_q.weight for m in run.models)
    assert not torch.equal(a, b)
    # The unstacked copies compute the accuracy the ensemble measured.
    torch.testing.assert_close(lab.accuracy(run.models), run.accuracy)


def test_every_variant_sees_the_same_batches_and_the_same_test(monkeypatch):
    """Copy e of any variant reads (key, "data", e), and all meet one test set: a fair
    comparison."""
    drawn = []

    def recording(n, generator):
        records, target = record_batch(n, generator)
        drawn.append(records)
        return records, target

    record_batch = lab.record_batch
    monkeypatch.setattr(lab, "record_batch", recording)
    seen = []
    for spec in (lab.KVSpec(n_kv_head=4), lab.KVSpec(d_c=8)):
        drawn.clear()
        lab.train_variant(spec, key="test-q6-same", copies=2, steps=2, eval_every=2)
        seen.append(list(drawn))
    # Per variant: the test set (before training), two copies' batches twice, the test set
    # after step 2; the same tensors for both variants.
    assert len(seen[0]) == len(seen[1]) == 6
    for a, b in zip(*seen, strict=True):
        torch.testing.assert_close(a, b)
    assert not torch.equal(seen[0][1], seen[0][2])  # the two copies' batches differ


def test_fine_tuning_continues_from_the_given_weights():
    torch.manual_seed(0)
    models = [lab.RecordModel(lab.KVSpec(n_kv_head=2)) for _ in range(2)]
    before = [m.attention.w_k.weight.detach().clone() for m in models]
    run = lab.fine_tune(models, key="test-q6-fine", steps=2, lr=1e-4, eval_every=1)
    assert sorted(run.curve) == [0, 1, 2]
    for m, w in zip(run.models, before, strict=True):
        assert (m.attention.w_k.weight - w).abs().max() < 1e-2  # small steps from where it was
        assert not torch.equal(m.attention.w_k.weight, w)

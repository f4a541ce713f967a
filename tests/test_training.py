"""tutorial_lib.training and .decoding: the loop, the loss, greedy decoding with and without the
cache, a real run."""

import pytest
import torch
import torch.nn.functional as F

from tutorial_lib.data import EOS, PAD, make_batch, teacher_forcing, vocab_size
from tutorial_lib.decoding import (
    greedy_decode,
    greedy_decode_cached,
    sequence_accuracy,
    teacher_forced_accuracy,
)
from tutorial_lib.model import Transformer, TransformerConfig
from tutorial_lib.training import fit, teacher_forcing_loss, train

V = vocab_size(10)


def small(seed=0, **changes):
    config = dict(
        src_vocab=V,
        tgt_vocab=V,
        d_model=32,
        n_head=4,
        d_ff=128,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,
        max_len=32,
        token_rms=0.25,
    )
    torch.manual_seed(seed)
    return Transformer(TransformerConfig(**(config | changes)))


@pytest.fixture(scope="module")
def trained():
    """Reverse, length 6: learned to 100% greedy accuracy in a second or two."""
    model = small()
    result = train(model, "reverse", length=6, lr=5e-3, max_steps=600, seed=0)
    return model, result


@pytest.fixture(scope="module")
def half_trained():
    """Stopped early, so that some test sequences come out right and some do not."""
    model = small(seed=1)
    train(model, "reverse", length=8, lr=5e-3, max_steps=70, seed=1, target_accuracy=None)
    return model


def test_loss_is_cross_entropy_over_real_positions_only():
    model = small().eval()
    src, tgt = make_batch("reverse", 4, 6, min_length=2, seed=0)
    loss, logits = teacher_forcing_loss(model, src, tgt)
    target = teacher_forcing(tgt)[1]
    real = target != PAD
    manual = F.cross_entropy(logits[real], target[real])
    torch.testing.assert_close(loss, manual)
    assert (~real).any(), "the batch has padded positions for the loss to skip"


@pytest.mark.parametrize("fixture", ["untrained", "half_trained"])
def test_cached_greedy_decoding_gives_the_logits_of_full_recomputation(fixture, request):
    model = small().eval() if fixture == "untrained" else request.getfixturevalue(fixture)
    src, _ = make_batch("reverse", 16, 8, min_length=3, seed=5)
    tokens, logits = greedy_decode(model, src, 9)
    cached = greedy_decode_cached(model, src, 9)
    T = cached.logits.shape[1]  # the cached loop stops once every row has ended
    assert torch.equal(cached.tokens, tokens[:, :T])
    torch.testing.assert_close(cached.logits, logits[:, :T], rtol=1e-5, atol=1e-5)
    assert len(cached.cross) == T and cached.cross[0][0].shape == (16, 4, 8)


def test_greedy_output_stops_at_eos_on_a_model_that_writes_it(trained):
    """The trained model writes EOS (after six digits, or at once for a source it never saw
    padded): every row must end with EOS, PAD after it, and the cached loop must stop once
    every row has ended."""
    model, _ = trained
    src, _ = make_batch("reverse", 16, 6, min_length=2, seed=2)
    tokens, _ = greedy_decode(model, src, 12)
    cached = greedy_decode_cached(model, src, 12)
    first_eos = []
    for row in tokens.tolist():
        assert EOS in row, row
        first_eos.append(row.index(EOS))
        assert all(t == PAD for t in row[first_eos[-1] + 1 :]), row
    assert len(set(first_eos)) > 1  # rows end at different steps
    assert cached.tokens.shape[1] == max(first_eos) + 1 < 12  # stopped when the last row ended
    assert torch.equal(cached.tokens, tokens[:, : max(first_eos) + 1])
    # An untrained model never ends here: the checks above could fail.
    assert not (greedy_decode(small().eval(), src, 12)[0] == EOS).any(dim=1).all()


def pad_prone_model(seed):
    """A tiny random model over 4 token ids (PAD, BOS, EOS, one symbol): it writes PAD often."""
    config = TransformerConfig(
        src_vocab=4, tgt_vocab=4, d_model=4, n_head=1, d_ff=8, n_enc_layers=1, n_dec_layers=2,
        dropout=0.0, max_len=8,
    )  # fmt: skip
    torch.manual_seed(seed)
    return Transformer(config).double().eval()


def recomputed(model, src, steps):
    """The plain loop of chapter Q5: each step reruns ``model.decode`` on every token so far."""
    memory, src_mask = model.encode(src)
    out, step_logits = torch.full((src.shape[0], 1), 1), []
    for _ in range(steps):
        logits = model.decode(out, memory, src_mask)[:, -1:]
        step_logits.append(logits)
        out = torch.cat([out, logits.argmax(-1)], dim=1)
    return out[:, 1:], torch.cat(step_logits, dim=1)


def test_cached_decoding_equals_recomputation_even_when_the_model_writes_pad():
    """Issue 18: recomputation reads a generated PAD as padding (``model.decode`` masks every
    PAD key), the cache did not, so logits differed once a model wrote PAD. The cache now masks
    a cached PAD key too. 240 tiny random models, float64 so that no argmax is a near tie."""
    wrote_pad = 0
    for seed in range(240):
        model = pad_prone_model(seed)
        src = torch.randint(0, 4, (4, 4), generator=torch.Generator().manual_seed(seed))
        src[:, 0] = 3  # at least one real source token per row
        tokens, logits = greedy_decode(model, src, 7)
        if seed < 40:  # the library's loop is the chapter's
            with torch.no_grad():
                assert torch.equal(logits, recomputed(model, src, 7)[1]), seed
        cached = greedy_decode_cached(model, src, 7)
        T = cached.tokens.shape[1]
        wrote_pad += bool((logits[:, :-1].argmax(-1) == PAD).any())
        assert torch.equal(cached.tokens, tokens[:, :T]), seed
        assert (tokens[:, T:] == PAD).all(), seed  # the cached loop stopped: every row ended
        torch.testing.assert_close(cached.logits, logits[:, :T], rtol=1e-12, atol=1e-12)
    assert wrote_pad > 40, f"only {wrote_pad} models wrote PAD before their last step"


def test_decoding_past_the_positions_table_is_refused():
    src = torch.full((1, 3), 3)
    for decode in (greedy_decode, greedy_decode_cached):
        with pytest.raises(ValueError, match=r"need max_len >= 9, but the config has max_len = 8"):
            decode(pad_prone_model(0), src, 9)


def test_a_cache_needs_a_causal_decoder():
    with pytest.raises(ValueError, match="causal"):
        greedy_decode_cached(small(causal=False), torch.full((1, 4), 5), 4)


def test_teacher_forced_exact_match_is_greedy_exact_match(half_trained):
    src, tgt = make_batch("reverse", 300, 8, seed=7)
    tf = teacher_forced_accuracy(half_trained, src, tgt)
    greedy = sequence_accuracy(half_trained, src, tgt)
    assert 0.02 < greedy < 0.98, "the check only means something when some rows fail"
    assert tf == greedy


def test_training_reaches_every_test_sequence(trained):
    model, result = trained
    assert result.reached
    assert result.checks[-1][2] == 1.0
    assert result.losses[-1] < 0.1 * result.losses[0]
    src, tgt = make_batch("reverse", 200, 6, seed=123)
    # Perfect on the 1,000 held-out strings it was checked on; on 200 others, nearly so.
    assert sequence_accuracy(model, src, tgt) >= 0.97


def test_cross_attention_of_a_reversal_is_an_anti_diagonal(trained):
    model, _ = trained
    src, tgt = make_batch("reverse", 64, 6, seed=4)
    with torch.no_grad():
        model(src, teacher_forcing(tgt)[0])
    cross = model.attention["cross"][0].mean(dim=(0, 1))  # (T_tgt, T_src), mean over B and H
    # Output position i (its input is token i-1) answers with source token 5 - i.
    assert torch.equal(cross[:6].argmax(-1), torch.arange(5, -1, -1))


def test_without_the_causal_mask_training_cheats():
    """Targets unrelated to the source cannot be predicted: the best honest loss is about
    (8/9) ln 10 = 2.05 (only the final EOS is certain). Without the causal mask the decoder
    reads each answer from the next input position and the loss falls far below that."""
    final = {}
    for causal in (True, False):
        model = small(causal=causal)
        optimiser = torch.optim.Adam(model.parameters(), lr=5e-3)
        generator = torch.Generator().manual_seed(0)
        for _ in range(120):
            src, _ = make_batch("copy", 64, 8, generator=generator)
            tgt, _ = make_batch("copy", 64, 8, generator=generator)  # independent of src
            loss, _ = teacher_forcing_loss(model, src, tgt)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        final[causal] = loss.item()
    assert final[True] > 1.9
    assert final[False] < 1.0


def test_fit_counts_steps_stops_when_told_and_ramps_the_rate():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    data = iter(lambda: torch.randn(8, 3), None)
    seen = []

    def loss_fn(model, x):
        return model(x).pow(2).mean(), x.shape

    def on_step(step, loss, extra):
        seen.append((step, extra))
        return step == 4

    losses = fit(model, data, loss_fn, steps=10, lr=0.1, warmup=2, on_step=on_step)
    assert len(losses) == 4 and [s for s, _ in seen] == [1, 2, 3, 4]
    assert seen[0][1] == (8, 3) and not model.training

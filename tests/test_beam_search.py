"""tutorial_lib.decoding.beam_search against brute force: on a vocabulary of four tokens and
outputs of at most four, a beam wide enough to hold every hypothesis must find the exact
best length-penalised score, and a narrow beam may not beat it."""

import itertools

import pytest
import torch

from tutorial_lib.data import BOS, EOS, PAD
from tutorial_lib.decoding import beam_search, greedy_decode, length_penalty
from tutorial_lib.model import Transformer, TransformerConfig

V = 4  # PAD, BOS, EOS and one symbol


def tiny(seed, **changes):
    sizes = dict(d_model=8, n_head=2, d_ff=16, n_enc_layers=1, n_dec_layers=2, max_len=8)
    # Large token vectors (token_rms): peaked, varied next-token distributions.
    config = TransformerConfig(
        src_vocab=V, tgt_vocab=V, dropout=0.0, **(sizes | {"token_rms": 2.0} | changes)
    )
    torch.manual_seed(seed)
    return Transformer(config).double().eval()


def sources(seed, B=3, T=3):
    return torch.randint(1, V, (B, T), generator=torch.Generator().manual_seed(seed))


def hypotheses(max_len):
    """Every possible output: n-1 tokens other than EOS then EOS (n <= max_len), or max_len
    tokens with no EOS (cut off)."""
    others = [t for t in range(V) if t != EOS]
    for n in range(1, max_len + 1):
        for body in itertools.product(others, repeat=n - 1):
            yield (*body, EOS)
    yield from itertools.product(others, repeat=max_len)


@torch.no_grad()
def score(model, src_row, hyps, alpha):
    """log P(hyp | src) of each hypothesis (one teacher-forced pass for all of them), and that
    divided by GNMT's length penalty. Causal: position i never reads the filler after it."""
    L = max(len(h) for h in hyps)
    filled = [list(h) + [EOS] * (L - len(h)) for h in hyps]
    dec_in = torch.tensor([[BOS, *h[:-1]] for h in filled])  # (N, L)
    logp = model(src_row.expand(len(hyps), -1), dec_in).log_softmax(-1)  # (N, L, V)
    picked = logp.gather(2, torch.tensor(filled)[..., None])[..., 0]  # (N, L)
    lengths = torch.tensor([len(h) for h in hyps])
    total = (picked * (torch.arange(L) < lengths[:, None])).sum(1)  # (N,)
    return (total / length_penalty(lengths.double(), alpha)).tolist(), total.tolist()


def brute_force(model, src, max_len, alpha):
    every = list(hypotheses(max_len))
    best = []
    for row in src:
        scores, _ = score(model, row, every, alpha)
        best.append(max(zip(scores, every, strict=True)))
    return best


def tokens_of(result, b):
    n = int(result.lengths[b])
    return tuple(result.tokens[b, :n].tolist())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_len", [1, 2, 3, 4])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_a_beam_holding_every_hypothesis_finds_the_exact_optimum(seed, max_len, alpha):
    model, src = tiny(seed), sources(seed)
    result = beam_search(model, src, max_len, beam_size=V**max_len, alpha=alpha)
    for b, (best_score, best_hyp) in enumerate(brute_force(model, src, max_len, alpha)):
        assert tokens_of(result, b) == best_hyp
        assert result.scores[b].item() == pytest.approx(best_score, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("beam_size", [1, 2, 4])
def test_a_narrow_beam_reports_its_true_score_and_never_beats_the_optimum(seed, beam_size):
    model, src = tiny(seed), sources(seed, B=4)
    result = beam_search(model, src, 4, beam_size=beam_size, alpha=0.6)
    for b, (best_score, _) in enumerate(brute_force(model, src, 4, 0.6)):
        hyp = tokens_of(result, b)
        (recomputed,), (logp,) = score(model, src[b], [hyp], 0.6)
        assert result.scores[b].item() == pytest.approx(recomputed, abs=1e-9)
        assert result.log_probs[b].item() == pytest.approx(logp, abs=1e-9)
        assert recomputed <= best_score + 1e-9
        assert (result.tokens[b, len(hyp) :] == 0).all()  # PAD after the hypothesis


def test_reported_scores_are_a_teacher_forced_recomputation_also_where_the_model_writes_pad():
    """Issue 22: the search moved each new hypothesis onto its parent's cached keys and values
    but not onto its parent's record of which of them were PAD, so a hypothesis with PAD in it
    could be scored with another's padding. 120 small random models (float64, so no argmax is
    a near tie), beams of 1 to 4, outputs of 3 to 6; 40 of the 360 outputs hold PAD, and
    before the fix 10 of them were misreported."""
    with_pad = 0
    for seed in range(120):
        model = tiny(seed, d_model=4, n_head=1, d_ff=8, token_rms=1.0 + seed % 3)
        src = sources(seed, B=3)
        beam_size, max_len = 1 + seed % 4, 3 + seed % 4
        result = beam_search(model, src, max_len, beam_size=beam_size, alpha=0.6)
        for b in range(src.shape[0]):
            hyp = tokens_of(result, b)
            (recomputed,), (logp,) = score(model, src[b], [hyp], 0.6)
            assert result.log_probs[b].item() == pytest.approx(logp, abs=1e-9), (seed, b, hyp)
            assert result.scores[b].item() == pytest.approx(recomputed, abs=1e-9), (seed, b)
            with_pad += PAD in hyp
    assert with_pad >= 30, f"only {with_pad} of 360 outputs hold PAD"


def test_wider_beams_find_at_least_as_good_outputs_here():
    """Not a theorem for every model, but brute force bounds it: wider never loses here."""
    model, src = tiny(3), sources(3, B=6)
    scores = [beam_search(model, src, 4, beam_size=k).scores for k in (1, 4, V**4)]
    assert (scores[1] >= scores[0] - 1e-9).all() and (scores[2] >= scores[1] - 1e-9).all()


def test_length_penalty_is_gnmts():
    assert length_penalty(1, 0.6) == 1.0
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert length_penalty(10, 0.0) == 1.0


def test_without_a_length_penalty_the_beam_maximises_probability():
    model, src = tiny(4), sources(4)
    result = beam_search(model, src, 3, beam_size=V**3, alpha=0.0)
    for b in range(src.shape[0]):
        best = max(score(model, src[b], list(hypotheses(3)), 0.0)[1])
        assert result.log_probs[b].item() == pytest.approx(best, abs=1e-9)


def test_a_beam_of_one_follows_greedy_up_to_greedys_end():
    """A beam of one extends the single best prefix, as greedy does. Where greedy writes EOS
    the beam finishes that hypothesis too, but keeps the best other token alive, and with
    the length penalty that longer one may win: then it agrees with greedy up to there."""
    torch.manual_seed(5)
    config = TransformerConfig(
        src_vocab=13, tgt_vocab=13, d_model=16, n_head=2, d_ff=32, n_enc_layers=1,
        n_dec_layers=1, dropout=0.0, max_len=16,
    )  # fmt: skip
    model = Transformer(config).eval()
    src = torch.randint(3, 13, (8, 6), generator=torch.Generator().manual_seed(5))
    greedy_tokens, _ = greedy_decode(model, src, 6)
    result = beam_search(model, src, 6, beam_size=1)
    for b in range(8):
        g = greedy_tokens[b][greedy_tokens[b] != 0].tolist()  # up to and with its EOS
        r = tokens_of(result, b)
        assert list(r[: len(g) - 1]) == g[:-1]
        assert list(r) == g or len(r) > len(g)


def test_bad_arguments_name_what_is_wrong():
    model, src = tiny(0), sources(0)
    with pytest.raises(ValueError, match="alpha"):
        beam_search(model, src, 3, alpha=-0.5)
    open_model = tiny(0, causal=False)
    with pytest.raises(ValueError, match="causal"):
        beam_search(open_model, src, 3)

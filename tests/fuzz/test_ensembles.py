"""Property suite: every member of the book's ensemble engine computes what its single model
computes, for drawn sizes, seeds, head counts, norms, placements and masks."""

import copy

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tutorial_lib.labs import heads as LH
from tutorial_lib.labs.norms import TinyEncoder
from tutorial_lib.labs.seed_ensemble import Ensemble

FEW = settings(max_examples=8, deadline=None, derandomize=True, database=None)


def ids(draw, *shape, vocab, low=0):
    g = torch.Generator().manual_seed(draw(st.integers(0, 999)))
    return torch.randint(low, vocab, shape, generator=g)


@FEW
@given(st.data())
def test_every_heads_copy_computes_its_single_model(data):
    draw = data.draw
    largest = draw(st.sampled_from([1, 2, 4]))  # head counts must nest: each divides the largest
    n_heads = [largest] + draw(st.lists(st.sampled_from([h for h in (1, 2, 4) if largest % h == 0]),
                                        max_size=2))  # fmt: skip
    torch.manual_seed(draw(st.integers(0, 99)))
    models = [LH.TinyAttentionModel(h) for h in n_heads]
    tokens = ids(draw, len(models), draw(st.integers(1, 3)), LH.LENGTH, vocab=LH.VOCAB)
    logits = Ensemble(models).map(lambda model, x: model(x)[0], tokens)
    for r, model in enumerate(models):
        alone, _ = model(tokens[r])
        torch.testing.assert_close(logits[r], alone, atol=1e-4, rtol=1e-4)


def encoder_members(draw):
    """1 to 3 TinyEncoders of one size, each with its own norm and placement."""
    sizes = dict(
        vocab=6, n_classes=draw(st.integers(1, 3)), d_model=4, n_head=draw(st.sampled_from([1, 2])),
        d_ff=4, n_layers=draw(st.integers(1, 2)), max_len=5, positions=draw(st.booleans()),
        causal=draw(st.booleans()),
    )  # fmt: skip
    members = []
    for _ in range(draw(st.integers(1, 3))):
        torch.manual_seed(draw(st.integers(0, 99)))
        norm = draw(st.sampled_from(["layer", "batch", "batch_masked"]))
        placement = draw(st.sampled_from(["post", "pre"]))
        members.append(TinyEncoder(**sizes, norm=norm, placement=placement))
    return members


def encoder_batch(draw, E):
    """tokens (E, B, T) or (B, T) with two real tokens a row at least, and a mask (B, T) or None."""
    B, T = draw(st.integers(1, 3)), draw(st.integers(2, 4))
    tokens = ids(draw, *draw(st.sampled_from([(E, B, T), (B, T)])), vocab=6, low=1)
    mask = None
    if draw(st.booleans()):
        lengths = torch.tensor([draw(st.integers(2, T)) for _ in range(B)])
        mask = torch.arange(T) < lengths[:, None]  # (B, T)
        tokens = tokens * mask
    return tokens, mask


@FEW
@given(st.data())
def test_every_encoder_member_computes_its_tiny_encoder(data):
    members = encoder_members(data.draw)
    tokens, mask = encoder_batch(data.draw, len(members))
    training = data.draw(st.booleans())
    ensemble = Ensemble(members).train(training)
    shared = (mask,) if tokens.dim() == 3 else (tokens, mask)
    batched = (tokens,) if tokens.dim() == 3 else ()
    logits = ensemble.map(lambda model, *x: model(*x), *batched, shared=shared)
    for e, model in enumerate(members):
        alone = model.train(training)(tokens if tokens.dim() == 2 else tokens[e], mask)
        torch.testing.assert_close(logits[e], alone, atol=1e-4, rtol=1e-4)
    e = data.draw(st.integers(0, len(members) - 1))
    # Member e's weights and running statistics, back in a TinyEncoder of its own.
    member = ensemble.eval().unstack([copy.deepcopy(m) for m in members])[e]
    ours = member(tokens if tokens.dim() == 2 else tokens[e], mask)
    theirs = ensemble.map(lambda model, *x: model(*x), *batched, shared=shared)[e]
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


class Scaled(nn.Module):
    """A Linear times a per-member constant (a buffer): what the seed ensemble stacks."""

    def __init__(self, d_in: int, d_out: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(d_in, d_out)
        self.register_buffer("scale", torch.tensor(scale))

    def forward(self, x):
        return self.linear(x) * self.scale


@FEW
@given(st.data())
def test_every_seed_ensemble_member_computes_its_model_and_unstacks_into_it(data):
    draw = data.draw
    d_in, d_out = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    members = []
    for _ in range(draw(st.integers(1, 3))):
        torch.manual_seed(draw(st.integers(0, 99)))
        members.append(Scaled(d_in, d_out, draw(st.floats(0.5, 2))))
    g = torch.Generator().manual_seed(draw(st.integers(0, 99)))
    x = torch.randn(len(members), draw(st.integers(1, 3)), d_in, generator=g)  # (E, B, d_in)
    ensemble = Ensemble(members)
    out, total = ensemble.map(
        lambda m, x: (m(x), m(x).sum()), x, chunk_size=draw(st.sampled_from([None, 1, 2]))
    )
    for e, model in enumerate(members):
        torch.testing.assert_close(out[e], model(x[e]), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(total, out.flatten(1).sum(1))
    with torch.no_grad():
        for p in ensemble.parameters():
            p.add_(1.0)  # as if trained: the stacked weights differ from the members'
    fresh = ensemble.unstack([Scaled(d_in, d_out, 1.0) for _ in members])
    for e, model in enumerate(fresh):
        for name, stacked in zip(ensemble.param_names, ensemble.stacked, strict=True):
            assert torch.equal(model.get_parameter(name), stacked[e]), name

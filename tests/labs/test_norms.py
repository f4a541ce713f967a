"""tutorial_lib.labs.norms: placements, padding, positions, gradients, errors."""

import pytest
import torch

from tests.conftest import lengths_mask
from tests.conftest import rand as rand64
from tutorial_lib.labs.norms import (
    NORM_KINDS,
    Block,
    TinyEncoder,
    ffn_gradient_norms,
    first_layers,
    position_influence,
)
from tutorial_lib.positional import sinusoidal_encoding


@pytest.mark.parametrize("norm", NORM_KINDS)
@pytest.mark.parametrize("placement", ["post", "pre"])
def test_block_follows_its_placement_formula(norm, placement):
    torch.manual_seed(0)
    block = Block(8, 2, 16, norm=norm, placement=placement)
    x = rand(3, 5, 8)
    mask = lengths_mask([5, 4, 3], 5)
    norm_mask = mask if norm == "batch_masked" else None
    ref = Block(8, 2, 16, norm=norm, placement=placement)
    ref.load_state_dict(block.state_dict())
    if placement == "post":
        h = ref.norm_1(x + ref.attention(x, mask), norm_mask)
        expected = ref.norm_2(h + ref.ffn(h), norm_mask)
    else:
        h = x + ref.attention(ref.norm_1(x, norm_mask), mask)
        expected = h + ref.ffn(ref.norm_2(h, norm_mask))
    torch.testing.assert_close(block(x, mask), expected)


@pytest.mark.parametrize("norm", ["layer", "rms", "batch_masked"])
@pytest.mark.parametrize("placement", ["post", "pre"])
def test_real_tokens_ignore_padded_values(norm, placement):
    torch.manual_seed(1)
    block = Block(8, 2, 16, norm=norm, placement=placement)
    mask = lengths_mask([5, 2, 3], 5)
    x = rand(3, 5, 8)
    x_other = torch.where(mask[..., None], x, 100.0 * rand(3, 5, 8, seed=9))
    torch.testing.assert_close(block(x, mask)[mask], block(x_other, mask)[mask])


def rand(*shape, seed=0):
    return rand64(*shape, seed=seed, dtype=torch.float32)


def test_unmasked_batchnorm_lets_padding_in():
    torch.manual_seed(1)
    block = Block(8, 2, 16, norm="batch", placement="post")
    mask = lengths_mask([5, 2, 3], 5)
    x = rand(3, 5, 8)
    x_other = torch.where(mask[..., None], x, 100.0 * rand(3, 5, 8, seed=9))
    assert (block(x, mask)[mask] - block(x_other, mask)[mask]).abs().max() > 0.1


def test_tiny_encoder_adds_the_books_one_sinusoidal_table():
    model = TinyEncoder(10, 2, d_model=6, max_len=7)
    torch.testing.assert_close(model.positions, sinusoidal_encoding(7, 6), rtol=0, atol=0)


@pytest.mark.parametrize("placement", ["post", "pre"])
@pytest.mark.parametrize("positions", [True, False])
def test_tiny_encoder_shapes_and_final_norm(placement, positions):
    model = TinyEncoder(
        10,
        3,
        d_model=8,
        n_head=2,
        d_ff=16,
        n_layers=2,
        placement=placement,
        positions=positions,
        max_len=6,
    )
    tokens = torch.randint(1, 10, (4, 6))
    assert model(tokens, tokens > 0).shape == (4, 6, 3)
    assert (model.final_norm is not None) == (placement == "pre")


def test_without_positions_the_encoder_ignores_order():
    torch.manual_seed(0)
    model = TinyEncoder(10, 3, d_model=8, n_head=2, d_ff=16, positions=False).eval()
    tokens = torch.randint(1, 10, (1, 6))
    perm = torch.randperm(6)
    torch.testing.assert_close(model(tokens)[:, perm], model(tokens[:, perm]))


def test_gradient_norms_pre_ln_top_layer_is_smaller():
    # The chapter's Pre-LN / Post-LN measurement, in miniature.
    tops = {}
    for placement in ("post", "pre"):
        torch.manual_seed(0)
        model = TinyEncoder(
            16, 16, d_model=16, n_head=2, d_ff=32, n_layers=6, placement=placement, max_len=8
        )
        tokens = torch.randint(1, 16, (4, 8), generator=torch.Generator().manual_seed(1))
        target = torch.randint(0, 16, (4, 8), generator=torch.Generator().manual_seed(2))
        torch.nn.functional.cross_entropy(model(tokens).flatten(0, 1), target.flatten()).backward()
        norms = ffn_gradient_norms(model)
        assert len(norms) == 6 and all(n > 0 for n in norms)
        tops[placement] = norms[-1]
    assert tops["post"] > tops["pre"]


def test_errors():
    with pytest.raises(ValueError, match="norm must be one of"):
        Block(8, 2, 16, norm="group")
    with pytest.raises(ValueError, match="placement must be one of"):
        Block(8, 2, 16, placement="middle")
    with pytest.raises(ValueError, match="divisible"):
        Block(8, 3, 16)
    with pytest.raises(ValueError, match=r"\(B, T, D\)"):
        Block(8, 2, 16)(torch.randn(5, 8))
    model = TinyEncoder(10, 3, d_model=8, n_head=2, d_ff=16, max_len=4)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        model(torch.ones(5, dtype=torch.long))
    with pytest.raises(ValueError, match="backward"):
        ffn_gradient_norms(model)


def tiny_decoder(norm):
    torch.manual_seed(0)
    return TinyEncoder(
        9, 4, d_model=8, n_head=2, d_ff=16, n_layers=2, norm=norm, placement="pre", causal=True
    ).double()


def test_position_influence_is_the_jacobian_norm():
    model = tiny_decoder("batch")
    tokens = torch.randint(1, 9, (3, 5), generator=torch.Generator().manual_seed(1))
    x = (model.embed(tokens) + model.positions[:5]).detach()

    def from_embeddings(x):  # the model after its embedding, on sentence 1
        for layer in model.layers:
            x = layer(x)
        return model.head(model.final_norm(x))[1]  # (T, C)

    jacobian = torch.autograd.functional.jacobian(from_embeddings, x)[:, :, 1]  # (T, C, T, D)
    expected = jacobian.pow(2).sum(dim=(1, 3)).sqrt()
    torch.testing.assert_close(position_influence(model, tokens, b=1), expected)


@pytest.mark.parametrize("norm", ["layer", "rms", "batch_masked", "batch"])
def test_a_causal_stack_sees_no_future_unless_batchnorm_trains(norm):
    tokens = torch.randint(1, 9, (4, 6), generator=torch.Generator().manual_seed(2))
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    model = tiny_decoder(norm)
    trained = position_influence(model, tokens)
    evaluated = position_influence(model.eval(), tokens)
    assert (evaluated[future] == 0).all() and (evaluated.diagonal() > 0).all()
    if norm.startswith("batch"):
        assert (trained[future] > 1e-4).all()  # batch statistics carry every later token
    else:
        assert (trained[future] == 0).all()


def test_a_causal_stack_takes_a_batch_as_large_as_its_length():
    """With B = T, a (T_q, T_k) causal map has the shape of a (B, T_k) padding mask, which the
    attention refuses as ambiguous; the stack gives its map the scores' rank instead."""
    model = tiny_decoder("layer").eval()
    tokens = torch.randint(1, 9, (5, 5), generator=torch.Generator().manual_seed(3))
    logits = model(tokens)
    for b in range(5):  # each sentence alone: the same outputs
        torch.testing.assert_close(logits[b : b + 1], model(tokens[b : b + 1]))


def test_position_influence_errors():
    model = tiny_decoder("layer")
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        position_influence(model, torch.ones(5, dtype=torch.long))
    with pytest.raises(ValueError, match="B = 2"):
        position_influence(model, torch.ones(2, 3, dtype=torch.long), b=2)


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_first_layers_is_the_deep_model_cut_short(placement):
    torch.manual_seed(3)
    deep = TinyEncoder(10, 3, d_model=8, n_head=2, d_ff=16, n_layers=4, placement=placement)
    shallow = first_layers(deep, 2)
    assert len(shallow.layers) == 2 and len(deep.layers) == 4  # the deep model is untouched
    tokens = torch.randint(1, 10, (2, 5), generator=torch.Generator().manual_seed(4))
    x = deep.embed(tokens) + deep.positions[:5]
    for layer in deep.layers[:2]:
        x = layer(x)
    if deep.final_norm is not None:
        x = deep.final_norm(x)
    torch.testing.assert_close(shallow(tokens), deep.head(x))
    assert shallow.head.weight is deep.head.weight  # shared, not copied
    with pytest.raises(ValueError, match="between 1 and 4"):
        first_layers(deep, 5)


def test_lab_inputs_are_checked_by_the_lab():
    """Issue 18: token ids >= V and n_head = 0 failed inside torch."""
    import numpy as np

    from tutorial_lib.labs.norms import SelfAttention, make_norm

    with pytest.raises(ValueError, match=r"tokens must hold token ids 0..V-1 = 0..4"):
        TinyEncoder(5, 3)(torch.full((2, 4), 5))
    with pytest.raises(ValueError, match="n_head must be a positive integer"):
        SelfAttention(8, 0)
    with pytest.raises(ValueError, match="kind must be one of"):
        make_norm("group", 8)
    with pytest.raises(TypeError, match="positions must be True or False"):
        TinyEncoder(5, 3, positions="yes")
    model = TinyEncoder(np.int64(5), np.int64(3), d_model=np.int64(8), n_head=np.int64(2))
    assert model(torch.ones(2, 4, dtype=torch.long)).shape == (2, 4, 3)

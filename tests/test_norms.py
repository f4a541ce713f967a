"""tutorial_lib.norms against PyTorch's own layers, its padding mask, and its errors."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tests.conftest import lengths_mask, rand
from tutorial_lib.norms import BatchNorm, LayerNorm, RMSNorm


def randomise_affine(*modules, seed=7):
    """Give every module the same non-trivial weight and bias, so the affine part is tested."""
    g = torch.Generator().manual_seed(seed)
    D = modules[0].weight.shape[0]
    weight = 1 + 0.3 * torch.randn(D, generator=g, dtype=torch.float64)
    bias = 0.2 * torch.randn(D, generator=g, dtype=torch.float64)
    with torch.no_grad():
        for m in modules:
            m.weight.copy_(weight)
            if getattr(m, "bias", None) is not None:
                m.bias.copy_(bias)


# -- LayerNorm -----------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-5, 1e-6, 0.1])
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm_matches_torch(eps, affine):
    B, T, D = 3, 5, 8
    ours = LayerNorm(D, eps=eps, elementwise_affine=affine).double()
    theirs = nn.LayerNorm(D, eps=eps, elementwise_affine=affine).double()
    if affine:
        randomise_affine(ours, theirs)
    x = rand(B, T, D, scale=3.0, shift=1.5).requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    torch.testing.assert_close(ours(x), theirs(x2))
    ours(x).pow(3).sum().backward()
    theirs(x2).pow(3).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    if affine:
        torch.testing.assert_close(ours.weight.grad, theirs.weight.grad)
        torch.testing.assert_close(ours.bias.grad, theirs.bias.grad)


def test_layernorm_token_ignores_its_neighbours():
    B, T, D = 4, 6, 8
    ln = LayerNorm(D).double()
    x = rand(B, T, D)
    y = ln(x)
    x_other = rand(B, T, D, seed=3)
    x_other[1, 2] = x[1, 2]  # the same token, everything around it different
    assert torch.equal(ln(x_other)[1, 2], y[1, 2])


def test_layernorm_ignores_the_padding_mask():
    ln = LayerNorm(8).double()
    x = rand(2, 5, 8)
    assert torch.equal(ln(x), ln(x, lengths_mask([5, 2], 5)))


# -- RMSNorm -------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_rmsnorm_matches_its_definition_and_torch(eps):
    B, T, D = 2, 4, 6
    ours = RMSNorm(D, eps=eps).double()
    theirs = nn.RMSNorm(D, eps=eps).double()
    randomise_affine(ours, theirs)
    x = rand(B, T, D, shift=2.0)
    by_definition = x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * ours.weight
    torch.testing.assert_close(ours(x), by_definition)
    torch.testing.assert_close(ours(x), theirs(x))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), D=st.integers(2, 12))
def test_rmsnorm_commutes_with_rotations_and_layernorm_does_not(seed, D):
    x = rand(2, 3, D, seed=seed, shift=1.0)
    Q, _ = torch.linalg.qr(rand(D, D, seed=seed + 1))  # a random orthogonal matrix
    rms = RMSNorm(D, elementwise_affine=False)
    torch.testing.assert_close(rms(x @ Q), rms(x) @ Q)
    # LayerNorm = RMSNorm after centring; centring commutes with Q only if Q keeps 1 = (1, ..., 1).
    ln = LayerNorm(D, eps=1e-6, elementwise_affine=False)
    centred = x - x.mean(-1, keepdim=True)
    torch.testing.assert_close(ln(x), rms(centred))
    ones = torch.ones(D, dtype=torch.float64) / D**0.5
    if (ones @ Q - ones).abs().max() > 1e-3:
        assert (ln(x @ Q) - ln(x) @ Q).abs().max() > 1e-6


# -- BatchNorm against nn.BatchNorm1d on the transposed input ------------------------------


def bn1d_on_tokens(bn1d, x):
    """nn.BatchNorm1d wants (B, D, T): the feature axis second."""
    return bn1d(x.transpose(1, 2)).transpose(1, 2)  # (B, T, D)


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_matches_torch_in_train_and_eval(momentum, affine):
    B, T, D = 4, 6, 5
    ours = BatchNorm(D, momentum=momentum, affine=affine).double()
    theirs = nn.BatchNorm1d(D, momentum=momentum, affine=affine).double()
    if affine:
        randomise_affine(ours, theirs)
    for step in range(3):  # several batches, so the running statistics really move
        x = rand(B, T, D, seed=step, scale=2.0, shift=step - 1.0).requires_grad_()
        x2 = x.detach().clone().requires_grad_()
        y, y2 = ours(x), bn1d_on_tokens(theirs, x2)
        torch.testing.assert_close(y, y2)
        (y * rand(B, T, D, seed=50)).sum().backward()
        (y2 * rand(B, T, D, seed=50)).sum().backward()
        torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(ours.running_mean, theirs.running_mean)
    torch.testing.assert_close(ours.running_var, theirs.running_var)
    assert int(ours.num_batches_tracked) == int(theirs.num_batches_tracked) == 3
    if affine:
        torch.testing.assert_close(ours.weight.grad, theirs.weight.grad)
        torch.testing.assert_close(ours.bias.grad, theirs.bias.grad)
    ours.eval(), theirs.eval()
    x_test = rand(2, 9, D, seed=99, shift=4.0)  # longer and shifted: eval uses running stats
    torch.testing.assert_close(ours(x_test), bn1d_on_tokens(theirs, x_test))
    assert not torch.allclose(ours(x_test).mean(dim=(0, 1)), torch.zeros(D, dtype=torch.float64))


def test_batchnorm_without_running_stats_uses_batch_stats_in_eval():
    D = 4
    ours = BatchNorm(D, track_running_stats=False).double().eval()
    theirs = nn.BatchNorm1d(D, track_running_stats=False).double().eval()
    x = rand(3, 5, D, shift=2.0)
    torch.testing.assert_close(ours(x), bn1d_on_tokens(theirs, x))


def test_batchnorm_with_one_sequence_is_instance_norm():
    # B = 1 in training mode: the statistics come from one sequence, per feature, over T.
    D = 6
    x = rand(1, 7, D, shift=1.0)
    bn = BatchNorm(D, affine=False).double()
    inorm = nn.InstanceNorm1d(D)
    torch.testing.assert_close(bn(x), inorm(x.transpose(1, 2)).transpose(1, 2))


# -- the padding mask ------------------------------------------------------------------------


@pytest.mark.parametrize("lengths", [[6, 6, 6], [6, 3, 1], [2, 5, 4]])
def test_masked_batchnorm_is_batchnorm1d_on_the_real_tokens(lengths):
    B, T, D = 3, 6, 5
    mask = lengths_mask(lengths, T)
    ours = BatchNorm(D).double()
    theirs = nn.BatchNorm1d(D).double()
    randomise_affine(ours, theirs)
    for step in range(2):
        x = rand(B, T, D, seed=10 + step, shift=1.0)
        y = ours(x, mask)
        torch.testing.assert_close(y[mask], theirs(x[mask]))  # x[mask]: (N, D) real tokens
    torch.testing.assert_close(ours.running_mean, theirs.running_mean)
    torch.testing.assert_close(ours.running_var, theirs.running_var)
    ours.eval(), theirs.eval()
    x = rand(B, T, D, seed=30)
    torch.testing.assert_close(ours(x, mask)[mask], theirs(x[mask]))


@pytest.mark.parametrize("pad_value", [0.0, 1e6, float("nan"), float("inf")])
def test_masked_batchnorm_ignores_padded_values_exactly(pad_value):
    B, T, D = 3, 5, 4
    mask = lengths_mask([5, 2, 3], T)
    x = rand(B, T, D, shift=0.5).requires_grad_()
    bn_clean, bn_padded = BatchNorm(D).double(), BatchNorm(D).double()
    y_clean = bn_clean(x, mask)
    x_padded = torch.where(mask[..., None], x.detach(), pad_value).requires_grad_()
    y_padded = bn_padded(x_padded, mask)
    assert torch.equal(y_padded[mask], y_clean[mask])
    assert torch.equal(bn_padded.running_mean, bn_clean.running_mean)
    assert torch.equal(bn_padded.running_var, bn_clean.running_var)
    # No gradient reaches a padded position from a real token's output.
    y_padded[mask].sum().backward()
    assert torch.equal(x_padded.grad[~mask], torch.zeros_like(x_padded.grad[~mask]))


@pytest.mark.parametrize("pad_value", [float("nan"), float("inf"), -float("inf"), 1e30])
@pytest.mark.parametrize("affine", [True, False])
def test_masked_batchnorm_keeps_padding_out_of_every_real_gradient(pad_value, affine):
    """Issue 18: the backward pass used to compute 0 * NaN and spread it to every real token.
    The real tokens' gradients must equal those of nn.BatchNorm1d on the real tokens alone."""
    B, T, D = 3, 5, 4
    mask = lengths_mask([5, 2, 3], T)
    x = torch.where(mask[..., None], rand(B, T, D, shift=0.5), pad_value).requires_grad_()
    upstream = rand(B, T, D, seed=3)  # every output gets a gradient, padded ones too
    ours, theirs = BatchNorm(D, affine=affine).double(), nn.BatchNorm1d(D, affine=affine).double()
    if affine:
        randomise_affine(ours, theirs)
    (ours(x, mask) * upstream).sum().backward()
    real = x.detach()[mask].requires_grad_()
    (theirs(real) * upstream[mask]).sum().backward()
    torch.testing.assert_close(x.grad[mask], real.grad)
    if affine:  # the padded outputs do not train the scale and shift either
        torch.testing.assert_close(ours.weight.grad, theirs.weight.grad)
        torch.testing.assert_close(ours.bias.grad, theirs.bias.grad)


@pytest.mark.parametrize("layer", [LayerNorm, RMSNorm, BatchNorm])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("training", [True, False])
def test_norms_return_the_input_dtype(layer, dtype, training):
    """float64 BatchNorm used to fail in training; LayerNorm and RMSNorm returned float32 for
    float16 input. Large half-precision values (whose squares overflow float16) stay finite."""
    x = (rand(2, 3, 6) * 300).to(dtype)
    for module in (layer(6), layer(6).to(dtype)):
        module.train(training)
        out = module(x, lengths_mask([3, 2], 3))
        assert out.dtype == dtype and torch.isfinite(out).all()
    reference = layer(6).double().train(training)(x.double(), lengths_mask([3, 2], 3))
    tolerance = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float64: 1e-12}[dtype]
    torch.testing.assert_close(out.double(), reference, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("layer", [LayerNorm, RMSNorm, BatchNorm])
@pytest.mark.parametrize("eps", [-1e-5, float("nan")])
def test_an_eps_that_would_make_nan_is_refused(layer, eps):
    with pytest.raises(ValueError, match=rf"eps >= 0; got {eps}"):
        layer(4, eps=eps)


@pytest.mark.parametrize("layer", [LayerNorm, RMSNorm])
def test_eps_zero_is_pytorchs_too(layer):
    x = rand(2, 3, 4)
    torch.testing.assert_close(
        layer(4, eps=0.0).double()(x),
        (F.layer_norm(x, (4,), eps=0.0) if layer is LayerNorm else F.rms_norm(x, (4,), eps=0.0)),
    )


def test_unmasked_batchnorm_is_moved_by_padding():
    # The failure the mask fixes: zeros in padded slots drag the per-feature mean towards 0.
    T, D = 6, 4
    x = rand(3, T, D, shift=2.0)
    mask = lengths_mask([6, 2, 2], T)
    x = torch.where(mask[..., None], x, 0.0)
    bn = BatchNorm(D).double()
    mean_all, _, n_all = bn.batch_statistics(x)
    mean_real, _, n_real = bn.batch_statistics(x, mask)
    assert (n_all, n_real) == (18, 10)
    torch.testing.assert_close(mean_all, mean_real * n_real / n_all)
    assert (mean_real - mean_all).abs().min() > 0.3


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, mask",
    [
        (rand(6, 8), None),  # (N, D): the mean over (0, 1) would mix features
        (rand(2, 3, 7), None),
        (rand(2, 3, 8), torch.ones(2, 1, dtype=torch.bool)),  # would broadcast over T
        (rand(2, 3, 8), torch.ones(2, 3)),  # not bool
    ],
)
def test_batchnorm_names_the_tokens_and_mask_it_takes(x, mask):
    expected = r"x \(B, T, D\) with D = 8 and a bool padding mask \(B, T\)"
    with pytest.raises(ValueError, match=expected):
        BatchNorm(8).double()(x, mask)


def test_batchnorm_needs_two_real_tokens_to_train():
    with pytest.raises(ValueError, match=r"more than one \(real\) token.*with 0 real token"):
        BatchNorm(4)(torch.randn(2, 3, 4), torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"more than one.*\(1, 1, 4\) with 1 real token"):
        BatchNorm(4)(torch.randn(1, 1, 4))
    mask = torch.zeros(2, 3, dtype=torch.bool)
    mask[0, 0] = True
    with pytest.raises(ValueError, match="1 real token"):
        BatchNorm(4)(torch.randn(2, 3, 4), mask)
    BatchNorm(4).eval()(torch.randn(1, 1, 4))  # evaluation uses the running statistics

"""Absolute encodings (tutorial_lib.positional.absolute), against the paper's formulas."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import rand
from tutorial_lib.attention import MultiHeadAttention
from tutorial_lib.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_encoding,
    sinusoidal_frequencies,
    sinusoidal_shift_matrix,
)


def test_sinusoidal_matches_the_papers_formula():
    T, D = 50, 16
    pe = sinusoidal_encoding(T, D)
    assert pe.shape == (T, D) and pe.dtype == torch.float32
    for p in range(T):
        for i in range(D // 2):
            angle = p / 10000 ** (2 * i / D)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_base_and_wavelengths():
    pe = sinusoidal_encoding(10, 8, base=100.0)
    torch.testing.assert_close(pe[3, 2], torch.tensor(math.sin(3 / 100 ** (2 / 8))))
    omega = sinusoidal_frequencies(512)
    ratios = omega[:-1] / omega[1:]
    torch.testing.assert_close(ratios, torch.full_like(ratios, 10000 ** (2 / 512)))
    assert 2 * math.pi / omega[-1].item() < 2 * math.pi * 10000  # the paper's "up to 10000*2pi"


@pytest.mark.parametrize("d_model", [7, 1])
def test_sinusoidal_rejects_an_odd_width(d_model):
    with pytest.raises(ValueError, match=rf"sinusoids need an even width.*; got {d_model}, base"):
        sinusoidal_encoding(10, d_model)


@settings(max_examples=30, deadline=None)
@given(k=st.integers(-50, 50), half=st.integers(1, 16), base=st.sampled_from([100.0, 1e4, 1e6]))
def test_shift_property(k, half, base):
    D, T = 2 * half, 120
    pe = sinusoidal_encoding(T + 60, D, base).double()
    M = sinusoidal_shift_matrix(k, D, base)
    p = torch.arange(60, T)  # p and p + k both inside the table
    torch.testing.assert_close(pe[p] @ M.T, pe[p + k], atol=1e-6, rtol=0)
    torch.testing.assert_close(M @ M.T, torch.eye(D, dtype=torch.float64))  # a rotation


@settings(max_examples=30, deadline=None)
@given(a=st.integers(-40, 40), b=st.integers(-40, 40), half=st.integers(1, 8))
def test_shift_matrices_compose(a, b, half):
    D = 2 * half
    torch.testing.assert_close(
        sinusoidal_shift_matrix(a, D) @ sinusoidal_shift_matrix(b, D),
        sinusoidal_shift_matrix(a + b, D),
    )


def test_sinusoidal_module_adds_the_encoding_for_any_length():
    module = SinusoidalPositionalEncoding(8, max_len=16)
    x = rand(2, 40, 8, dtype=torch.float32)  # longer than the cached buffer
    torch.testing.assert_close(module(x), x + sinusoidal_encoding(40, 8))
    assert not list(module.parameters())


def test_learned_table_adds_its_rows_and_trains():
    module = LearnedPositionalEmbedding(max_len=10, d_model=4)
    x = rand(3, 6, 4, dtype=torch.float32)
    out = module(x)
    torch.testing.assert_close(out, x + module.table[:6])
    out.sum().backward()
    assert module.table.grad[:6].abs().sum() > 0 and module.table.grad[6:].abs().sum() == 0


def test_learned_table_refuses_positions_past_max_len():
    module = LearnedPositionalEmbedding(max_len=8, d_model=4)
    with pytest.raises(ValueError, match=r"T=9.*max_len=8 rows: it has no vector for a later"):
        module(torch.zeros(1, 9, 4))


def _perm_equivariance_error(add_positions: bool, perm: torch.Tensor) -> float:
    torch.manual_seed(0)
    D = 16
    mha = MultiHeadAttention(4, D, 4, 4, dropout=0.0).eval()
    x = rand(1, len(perm), D, seed=3, dtype=torch.float32)
    enc = SinusoidalPositionalEncoding(D)

    def run(tokens):
        return mha(*(3 * [enc(tokens) if add_positions else tokens]))[0]

    with torch.no_grad():
        return (run(x[:, perm]) - run(x)[:, perm]).abs().max().item()


@settings(max_examples=20, deadline=None)
@given(st.permutations(list(range(6))))
def test_self_attention_without_positions_is_permutation_equivariant(perm):
    assert _perm_equivariance_error(False, torch.tensor(perm)) < 1e-5


def test_positions_break_the_symmetry():
    swap = torch.tensor([3, 1, 2, 0, 4, 5])  # 猫爱吃鱼 -> 鱼爱吃猫
    assert _perm_equivariance_error(True, swap) > 1e-2


@pytest.mark.parametrize("base", [0.0, -1.0, float("nan")])
def test_a_base_that_would_make_a_nan_table_is_refused(base):
    """Issue 18: base <= 0 gave NaN tables."""
    with pytest.raises(ValueError, match=rf"base > 0; got 8, base={base}"):
        sinusoidal_encoding(4, 8, base)
    with pytest.raises(ValueError, match="base"):
        SinusoidalPositionalEncoding(8, base)


def test_token_ids_are_not_embeddings():
    """Issue 18: integer tensors came back int64 with the encoding truncated."""
    for module in (SinusoidalPositionalEncoding(8), LearnedPositionalEmbedding(16, 8)):
        with pytest.raises(
            TypeError, match=r"added to embeddings, not to token ids; got torch.int64"
        ):
            module(torch.ones(2, 5, 8, dtype=torch.long))


def test_numpy_sizes_and_half_precision():
    import numpy as np

    encoding = SinusoidalPositionalEncoding(np.int64(8), max_len=np.int64(4))
    torch.testing.assert_close(encoding.encoding(6), sinusoidal_encoding(6, 8))
    x = torch.zeros(1, 6, 8, dtype=torch.float16)
    assert encoding(x).dtype == torch.float16
    assert LearnedPositionalEmbedding(np.int32(6), 8)(x).dtype == torch.float16

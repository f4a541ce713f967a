"""Shared by the whole suite: one CPU thread for tiny models, seeded tensors, padding masks."""

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """Tiny matrices: one thread beats two that wait on each other, most of all on a busy CPU,
    and gives the same bits on every run."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def rand(*shape, seed=0, dtype=torch.float64, scale=1.0, shift=0.0):
    """A seeded standard-normal tensor (times ``scale``, plus ``shift``)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype) * scale + shift


def lengths_mask(lengths, T):
    """(B, T) bool, True at the first ``lengths[b]`` positions of each row: the real tokens."""
    return torch.arange(T) < torch.as_tensor(lengths)[:, None]

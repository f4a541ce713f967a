"""tutorial_lib.seeds: one knob, BOOK_SEED, reaches every random draw."""

import pytest
import torch

from tutorial_lib import seeds
from tutorial_lib.softmax import random_dot_products


def test_unset_or_empty_means_zero(monkeypatch):
    monkeypatch.delenv("BOOK_SEED", raising=False)
    assert seeds.book_seed() == 0
    monkeypatch.setenv("BOOK_SEED", " ")
    assert seeds.book_seed() == 0


def test_a_seed_is_a_function_of_the_book_seed_and_the_key(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "0")
    a = seeds.derive("q1", "train", 3)
    assert a == seeds.derive("q1", "train", 3)  # the same on every call
    assert a != seeds.derive("q1", "train", 4) != seeds.derive("q2", "train", 3)
    assert 0 <= a < 2**63
    monkeypatch.setenv("BOOK_SEED", "1")
    assert seeds.derive("q1", "train", 3) != a


def test_known_value_is_the_same_on_every_machine(monkeypatch):
    # A hash of the text "0/q1/train/3", so no platform or Python version can change it.
    monkeypatch.setenv("BOOK_SEED", "0")
    import hashlib

    digest = hashlib.blake2b(b"0/q1/train/3", digest_size=8).digest()
    assert seeds.derive("q1", "train", 3) == int.from_bytes(digest, "big") >> 1


def test_generator_and_manual_seed(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "5")
    x = torch.randn(3, generator=seeds.generator("k"))
    assert torch.equal(x, torch.randn(3, generator=seeds.generator("k")))
    used = seeds.manual_seed("k")
    assert used == seeds.derive("k")
    assert torch.equal(torch.randn(3), x)  # the global generator, seeded the same way


def test_library_draws_follow_the_book_seed(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "0")
    a = random_dot_products(4, 3)
    assert torch.equal(a, random_dot_products(4, 3))
    monkeypatch.setenv("BOOK_SEED", "1")
    assert not torch.equal(a, random_dot_products(4, 3))  # the cache keys on the book seed


@pytest.mark.parametrize("bad", ["x", "1.5"])
def test_a_bad_book_seed_is_named(monkeypatch, bad):
    monkeypatch.setenv("BOOK_SEED", bad)
    with pytest.raises(ValueError, match="BOOK_SEED must be an integer"):
        seeds.book_seed()


def test_a_key_counts_as_its_text():
    import numpy as np

    assert seeds.derive("q1", np.int64(3)) == seeds.derive("q1", 3) == seeds.derive("q1", "3")
    assert seeds.derive("q1", True) != seeds.derive("q1", 1)  # True is not the integer 1 here

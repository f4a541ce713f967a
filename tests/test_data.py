"""tutorial_lib.data: the toy tasks are right, deterministic, and padded where they say."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib.data import (
    BOS,
    EOS,
    N_SPECIAL,
    PAD,
    TASKS,
    batches,
    from_text,
    make_batch,
    teacher_forcing,
    to_text,
    vocab_size,
)


def rows(src, tgt):
    """Each row as a plain list of its real (non-PAD) tokens."""
    for s, t in zip(src.tolist(), tgt.tolist(), strict=True):
        yield [x for x in s if x != PAD], [x for x in t if x != PAD]


ANSWERS = {"copy": list, "reverse": lambda s: s[::-1], "sort": sorted}


@settings(max_examples=30, deadline=None)
@given(
    task=st.sampled_from(TASKS),
    length=st.integers(1, 12),
    short=st.integers(0, 11),
    n_symbols=st.integers(1, 20),
    seed=st.integers(0, 2**31),
)
def test_every_answer_is_right(task, length, short, n_symbols, seed):
    min_length = max(1, length - short)
    src, tgt = make_batch(task, 8, length, n_symbols, min_length=min_length, seed=seed)
    assert src.shape == tgt.shape == (8, length)
    for s, t in rows(src, tgt):
        assert min_length <= len(s) <= length
        assert t == ANSWERS[task](s)
        assert all(N_SPECIAL <= x < N_SPECIAL + n_symbols for x in s)


@pytest.mark.parametrize("task", TASKS)
def test_padding_sits_at_the_end_of_both_sides(task):
    src, tgt = make_batch(task, 64, 10, min_length=2, seed=1)
    for side in (src, tgt):
        real = side != PAD
        assert torch.equal(real, real.cummin(dim=1).values)  # no real token after a PAD
    assert torch.equal(src != PAD, tgt != PAD)
    assert (src == PAD).any(), "with min_length < length some rows are padded"


def test_the_same_seed_gives_the_same_batches_and_another_seed_does_not():
    a = make_batch("reverse", 16, 8, seed=3)
    b = make_batch("reverse", 16, 8, seed=3)
    c = make_batch("reverse", 16, 8, seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    stream_1, stream_2 = batches("sort", 4, 6, seed=9), batches("sort", 4, 6, seed=9)
    for _ in range(3):
        assert torch.equal(next(stream_1)[0], next(stream_2)[0])


def test_teacher_forcing_shifts_the_answer_right():
    tgt = torch.tensor([[5, 6, 7], [8, 9, PAD]])
    dec_in, dec_target = teacher_forcing(tgt)
    assert dec_in.tolist() == [[BOS, 5, 6, 7], [BOS, 8, 9, EOS]]
    assert dec_target.tolist() == [[5, 6, 7, EOS], [8, 9, EOS, PAD]]
    # Every input is the previous position's target: the decoder sees the truth, shifted.
    real = dec_target[:, :-1] != PAD
    assert torch.equal(dec_in[:, 1:][real], dec_target[:, :-1][real])


def test_text_round_trip():
    assert vocab_size(10) == 13
    src = from_text("3 1 4 1 5")
    assert src.tolist() == [[6, 4, 7, 4, 8]]
    assert to_text(src[0]) == "3 1 4 1 5"
    assert from_text("31415").tolist() == src.tolist()
    assert to_text([BOS, 3, EOS, PAD]) == "<s> 0 </s> ·"


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: make_batch("shuffle", 2, 4), r"task must be one of \('copy', 'reverse', 'sort'\)"),
        (lambda: from_text("3 x 1"), "separated by spaces"),
        (lambda: from_text("3 12", n_symbols=10), "0..9"),
        (lambda: from_text("", n_symbols=10), "0..9"),
    ],
)
def test_bad_input_says_what_was_expected(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_the_book_seed_changes_every_batch(monkeypatch):
    monkeypatch.delenv("BOOK_SEED", raising=False)
    first = make_batch("copy", 4, 6, seed=3)[0]
    assert torch.equal(first, make_batch("copy", 4, 6, seed=3)[0])
    monkeypatch.setenv("BOOK_SEED", "1")
    assert not torch.equal(first, make_batch("copy", 4, 6, seed=3)[0])


def test_teacher_forcing_refuses_a_pad_before_a_symbol():
    """Issue 18: [[3, 0, 4]] used to have its 4 overwritten by EOS."""
    with pytest.raises(ValueError, match=r"tgt row 0 has PAD \(0\) before a symbol: \[3, 0, 4\]"):
        teacher_forcing([[3, 0, 4]])
    dec_in, dec_target = teacher_forcing([[3, 4, 0], [5, 6, 7]])  # lists are token ids too
    assert dec_in.tolist() == [[BOS, 3, 4, EOS], [BOS, 5, 6, 7]]
    assert dec_target.tolist() == [[3, 4, EOS, PAD], [5, 6, 7, EOS]]


@pytest.mark.parametrize(
    "text, n_symbols", [("+3 4", 10), ("1_0 2", 11), ("٣ 1", 10), ("-1 2", 10)]
)
def test_from_text_takes_plain_digits_only(text, n_symbols):
    """int() accepts a sign, underscores and other scripts' digits; the book's symbols do not."""
    with pytest.raises(ValueError, match="written with the digits 0-9"):
        from_text(text, n_symbols)


def test_from_text_reads_one_digit_per_symbol_only_when_every_symbol_is_one_digit():
    """Issue 22: "10" with 11 symbols is the symbol 10, not the symbols 1 and 0."""
    assert from_text("10", n_symbols=11).tolist() == [[10 + N_SPECIAL]]
    assert from_text("10", n_symbols=10).tolist() == [[1 + N_SPECIAL, 0 + N_SPECIAL]]
    assert from_text("10 3", n_symbols=11).tolist() == [[10 + N_SPECIAL, 3 + N_SPECIAL]]
    assert from_text("3\t1").tolist() == [[3 + N_SPECIAL, 1 + N_SPECIAL]]
    assert to_text(from_text("10", n_symbols=11)[0]) == "10"

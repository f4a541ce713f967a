"""tutorial_lib.checks.engine: safe calls, shape and type feedback, compare then explain."""

import pytest
import torch

from tutorial_lib.checks.engine import (
    Mistake,
    call_learner,
    compare_and_explain,
    describe,
    expect_shape,
    expect_tensor,
    same,
)


def test_compare_and_explain_returns_quietly_when_equal():
    a = torch.arange(6.0)
    assert compare_and_explain("check_x", "your y", a, a.clone(), [], "x") is None


def test_compare_and_explain_names_the_matching_mistake_first():
    mistakes = [Mistake("off by one", "add one less", torch.ones(3))]
    with pytest.raises(
        AssertionError,
        match=r"^check_x: your y \(for T=3\) shows a common "
        r"mistake, off by one: add one less$",
    ):
        compare_and_explain(
            "check_x",
            "your y",
            torch.ones(3),
            torch.zeros(3),
            mistakes,
            "zeros",
            config=describe(T=3),
        )


def test_compare_and_explain_then_diagnoses_then_reports_the_difference():
    def diagnose(actual):
        if actual.sum() < 0:
            raise AssertionError("check_x: negative")

    with pytest.raises(AssertionError, match="negative"):
        compare_and_explain("check_x", "y", -torch.ones(3), torch.zeros(3), [], "z", diagnose)
    with pytest.raises(AssertionError, match=r"y is off from zeros by up to 2, and it shows none"):
        compare_and_explain("check_x", "y", torch.full((3,), 2.0), torch.zeros(3), [], "zeros")


def test_nan_is_named_with_where_it_is_not_as_a_difference_of_nan():
    actual = torch.tensor([0.0, float("nan"), 1.0])
    with pytest.raises(
        AssertionError,
        match=r"contains NaN or inf, at 1 place\(s\), the first "
        r"at index \(1,\)",
    ) as caught:
        compare_and_explain("check_x", "your y", actual, torch.zeros(3), [], "zeros")
    assert "by up to nan" not in str(caught.value)


def test_expect_shape_and_tensor_name_the_letters():
    with pytest.raises(AssertionError, match=r"\(B, T\) = \(2, 3\); got \(3, 2\)"):
        expect_shape("check_x", torch.zeros(3, 2), (2, 3), "x", "(B, T)")
    with pytest.raises(AssertionError, match="should be a torch.Tensor"):
        expect_tensor("check_x", [1, 2], "x", "(T,)", (2,))
    import numpy as np

    converted = expect_tensor("check_x", np.zeros(2), "x", "(T,)", (2,))
    assert isinstance(converted, torch.Tensor)


def test_call_learner_names_a_signature_that_does_not_fit():
    def fn(q, k):
        return q

    with pytest.raises(
        AssertionError,
        match=r"calls fn\(q, k, v\), but fn\(q, k\) cannot be "
        r"called this way",
    ):
        call_learner(
            "check_x",
            fn,
            torch.zeros(1),
            torch.zeros(1),
            torch.zeros(1),
            call="fn(q, k, v)",
            names=("q", "k", "v"),
        )


def test_call_learner_reports_a_crash_with_the_shapes_it_was_given():
    def fn(x):
        return x @ torch.zeros(5, 5)

    with pytest.raises(
        AssertionError,
        match=r"calling fn\(x\) with x \(2, 3\) raised "
        r"RuntimeError: .*print each tensor's shape",
    ):
        call_learner("check_x", fn, torch.zeros(2, 3), call="fn(x)", names=("x",))


def test_call_learner_catches_in_place_edits_and_non_functions():
    with pytest.raises(AssertionError, match="changed its input x in place"):
        call_learner("check_x", lambda x: x.add_(1), torch.zeros(2), call="fn(x)", names=("x",))
    with pytest.raises(AssertionError, match="expected a function"):
        call_learner("check_x", 42, call="fn()")


def test_same_compares_values_dtypes_and_shapes():
    assert same(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert not same(torch.ones(2), torch.ones(3))
    assert not same(torch.ones(2, dtype=torch.bool), torch.ones(2))

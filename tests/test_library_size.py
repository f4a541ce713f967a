"""tutorial_lib stays small (issue 22): every module at most 300 lines, at most a fifth of each
concept module's code lines checking input, one MultiHeadAttention.forward at most 15 Python
calls into tutorial_lib. What counts as a checking line: tests/library_size.py."""

import ast

import pytest

from tests import library_size as size

MODULES = size.modules()


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_every_module_reads_in_one_sitting(module):
    assert module.lines <= size.MAX_LINES, f"{module.name}: {module.lines} lines"


CONCEPTS = [m for m in MODULES if m.concept]


@pytest.mark.parametrize("module", CONCEPTS, ids=[m.name for m in CONCEPTS])
def test_concept_modules_are_mostly_concept(module):
    assert module.checking_share <= size.MAX_CHECKING_SHARE, (
        f"{module.name}: {module.checking} of {module.code} code lines check input"
    )


def test_every_concept_module_is_measured():
    assert {m.name for m in CONCEPTS} == set(size.CONCEPT_MODULES)


def test_one_multi_head_attention_forward_makes_few_calls():
    count, names = size.calls_per_forward()
    assert 0 < count <= size.MAX_CALLS, names


def test_the_rule_counts_raises_validators_and_guard_blocks_only():
    source = '''
def f(x, n):
    """A docstring is not code."""
    require_int("n", n)  # a validator call: checking
    if n < 0:  # a block that only raises: checking
        raise ValueError(
            "n must be >= 0"
        )
    y = x + n  # the concept
    if y > 0:  # a block that computes: not checking
        y = y - 1
    return y


def _require_small(x):
    return x < 3
'''
    tree = ast.parse(source)
    code = size._code_lines(source, tree)
    checking = code & size._checking_lines(tree)
    lines = source.splitlines()
    assert {lines[i - 1].strip().split("(")[0] for i in checking} == {
        'require_int', "if n < 0:  # a block that only raises: checking", "raise ValueError",
        '"n must be >= 0"', ")", "def _require_small", "return x < 3",
    }  # fmt: skip
    assert len(code) == 12 and len(checking) == 7

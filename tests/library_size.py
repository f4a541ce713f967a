"""How small tutorial_lib is: lines per module, the share of checking lines, calls per forward.

The design asks for a library a learner reads in one sitting: every module at most
``MAX_LINES`` lines; in each concept module at most ``MAX_CHECKING_SHARE`` of the code lines
check input; one ``MultiHeadAttention.forward`` making at most ``MAX_CALLS`` Python calls into
tutorial_lib. ``tests/test_library_size.py`` asserts the three bounds;

    .venv/bin/python -m tests.library_size         # a table of every module

prints the figures.

**What counts.** A *code line* is a physical line of a module holding code: not blank, not
only a comment, not inside a docstring. A *checking line* is a code line inside a checking
statement, which is one of

1. a ``raise`` or an ``assert`` statement;
2. a statement that calls a validator: a function whose name starts with ``require_`` or
   ``_require`` (``tutorial_lib.validate``'s and the concept modules' own), the whole
   statement, even when it also assigns the checked value;
3. the definition of such a validator, all of it;
4. a compound statement (``if``, ``for``, ``with``, ``try``) every statement of whose bodies
   is a checking statement, its header included: ``if d % 2: raise ValueError(...)``.

A check that is part of computing (``mask.any(...)`` to keep a softmax finite) is not a
checking line: the rule counts code whose only job is to refuse input.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tutorial_lib"

MAX_LINES = 300
MAX_CHECKING_SHARE = 1 / 5
MAX_CALLS = 15

# The concept modules: one idea each, importing only torch (and each other, downward).
CONCEPT_MODULES = (
    "attention",
    "softmax",
    "masks",
    "norms",
    "model",
    "layers",
    "data",
    "training",
    "decoding",
    "positional/__init__",
    "positional/absolute",
    "positional/bias",
    "positional/rotation",
    "positional/registry",
)


@dataclass
class ModuleSize:
    name: str  # path under tutorial_lib without .py: "positional/bias"
    lines: int  # every physical line
    code: int  # code lines (see the module docstring)
    checking: int  # checking lines among them

    @property
    def checking_share(self) -> float:
        return self.checking / max(self.code, 1)

    @property
    def concept(self) -> bool:
        return self.name in CONCEPT_MODULES


def _is_validator(name: str) -> bool:
    return name.startswith(("require_", "_require"))


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _calls_validator(node: ast.AST) -> bool:
    return any(
        isinstance(sub, ast.Call) and _is_validator(_called_name(sub)) for sub in ast.walk(node)
    )


def _bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds (empty for a simple statement)."""
    bodies = [getattr(node, field, None) for field in ("body", "orelse", "finalbody")]
    bodies += [handler.body for handler in getattr(node, "handlers", [])]
    return [body for body in bodies if body]


def _is_checking(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Raise, ast.Assert)):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _is_validator(node.name)
    if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
        return all(_is_checking(s) for body in _bodies(node) for s in body)
    if isinstance(node, ast.ClassDef):
        return False
    return _calls_validator(node)


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def _code_lines(source: str, tree: ast.Module) -> set[int]:
    """Lines holding a token other than a comment, a newline or indentation, outside docstrings."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip.add(tokenize.ENDMARKER)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines - _docstring_lines(tree)


def _checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if _is_checking(node):
                first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                lines.update(range(first, node.end_lineno + 1))
            else:
                for inner in _bodies(node):
                    visit(inner)

    visit(tree.body)
    return lines


def measure(path: Path) -> ModuleSize:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    code = _code_lines(source, tree)
    name = path.relative_to(PACKAGE).with_suffix("").as_posix()
    return ModuleSize(name, len(source.splitlines()), len(code), len(code & _checking_lines(tree)))


def modules() -> list[ModuleSize]:
    """Every module of tutorial_lib, largest first."""
    sizes = [measure(path) for path in sorted(PACKAGE.rglob("*.py"))]
    return sorted(sizes, key=lambda m: -m.lines)


def calls_per_forward() -> tuple[int, list[str]]:
    """Python calls into tutorial_lib made by one ``MultiHeadAttention.forward`` (with a mask,
    as the seed code calls it), not counting the forward itself; and their names, in order."""
    import torch

    from tutorial_lib.attention import MultiHeadAttention

    torch.manual_seed(0)
    layer = MultiHeadAttention(n_head=2, d_model=8, d_k=4, d_v=4, dropout=0.0).eval()
    x = torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, 5, dtype=torch.bool).tril()
    layer(x, x, x, mask=mask)  # a first call, so nothing is counted that runs only once
    package = str(PACKAGE)
    calls: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            calls.append(f"{frame.f_code.co_filename[len(package) + 1 :]}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        layer(x, x, x, mask=mask)
    finally:
        sys.setprofile(None)
    inner = calls[1:] if calls and calls[0].endswith(":forward") else calls
    return len(inner), inner


def main() -> int:
    print(f"{'module':<28} {'lines':>5} {'code':>5} {'checking':>8} {'share':>6}")
    for m in modules():
        share = f"{100 * m.checking_share:5.0f}%" if m.concept else ""
        flag = " OVER" if m.lines > MAX_LINES or (m.concept and m.checking_share > 0.2) else ""
        print(f"{m.name:<28} {m.lines:>5} {m.code:>5} {m.checking:>8} {share:>6}{flag}")
    count, names = calls_per_forward()
    print(f"\nMultiHeadAttention.forward: {count} Python calls into tutorial_lib")
    for name in names:
        print("   ", name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

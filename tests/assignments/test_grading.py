"""`make assignments` and `make grade`, end to end: a folder of generated submissions graded.

The assignments are built with a course seed other than the book's; then one folder holds, for
every assignment, its solutions (full marks), wrong implementations from the self-checks'
corpora (tests/checks: each loses its question's points, and its feedback names the mistake),
the book's public answer copied into a numeric question, and submissions that break: not a
notebook, unreadable, empty, a graded cell deleted, an endless loop, a kernel that dies.

`make test` grades a sample of the corpora (about two minutes); `make test-grading-corpora`
(GRADING_CORPORA=all) grades every wrong implementation of every corpus.
"""

import ast
import csv
import json
import os
import re
import time
from pathlib import Path

import assignments
import grade
import nbformat
import pytest

from tests.checks import (
    test_attention,
    test_grouped,
    test_masks,
    test_multihead,
    test_norms,
    test_positional,
    test_scaling,
)

ROOT = Path(__file__).resolve().parents[2]
COURSE_SEED = 4242  # not the book's 0: numeric answers differ from the public book's
ALL = os.environ.get("GRADING_CORPORA") == "all"
TIMEOUT = 40.0  # per submission (one takes about 6 s); the endless loop costs this much
# check -> (the corpus's module, the name of its wrong implementations)
CORPORA = {
    "check_attention": ("test_attention", "WRONG"),
    "check_causal_mask": ("test_masks", "WRONG"),
    "check_multihead": ("test_multihead", "WRONG"),
    "check_layer_norm": ("test_norms", "WRONG"),
    "check_sinusoidal_encoding": ("test_positional", "SINUSOID_WRONG"),
    "check_rope": ("test_positional", "ROPE_WRONG"),
    "check_grouped_attention": ("test_grouped", "WRONG"),
    "check_scaled_frequencies": ("test_scaling", "WRONG_YARN"),
}
MODULES = {m.__name__.rsplit(".", 1)[1]: m for m in (
    test_attention, test_grouped, test_masks, test_multihead, test_norms, test_positional,
    test_scaling,
)}  # fmt: skip


def corpus(check: str) -> dict:
    module, name = CORPORA[check]
    return getattr(MODULES[module], name)


def sample(names: list[str]) -> list[str]:
    """Every name with GRADING_CORPORA=all; else one, the middle one (a different mistake for
    each check: scaling, masks, heads, norms, positions)."""
    return names if ALL else [names[len(names) // 2]]


def answer_cell(notebook, label: str | None = None) -> nbformat.NotebookNode:
    """The answer cell of question ``label``, or the only one."""
    [cell] = [
        c
        for c in notebook.cells
        if c.metadata.get("assignment", {}).get("question") not in (None, False)
        and label in (None, c.metadata["assignment"]["question"])
    ]
    return cell


def with_answer(base: Path, source: str, label: str | None = None) -> nbformat.NotebookNode:
    """The notebook ``base`` with the answer to ``label`` (or its only one) replaced."""
    notebook = nbformat.read(base, as_version=4)
    answer_cell(notebook, label).source = source
    return notebook


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    started = time.monotonic()
    qs = assignments.build(ROOT, out, COURSE_SEED, run_tests=False)
    print(f"built {len({q.chapter for q in qs})} assignments in {time.monotonic() - started:.0f} s")
    return out, qs


@pytest.fixture(scope="module")
def graded(built, tmp_path_factory):
    """Write the submissions, grade the folder; return the rows, the feedback, the expectations."""
    out, qs = built
    folder = tmp_path_factory.mktemp("submissions")
    expect = {}  # file -> (question losing its points or None for full marks, feedback regex)
    for q in qs:
        solutions = out / "solutions" / f"{q.chapter}.ipynb"  # the other answers right
        right = folder / f"{q.chapter}.right.ipynb"
        if not right.exists():
            right.write_text((out / "solutions" / f"{q.chapter}.ipynb").read_text())
            expect[right.name] = (None, None)
        if q.kind == "check":
            module, name = CORPORA[q.check]
            for mistake in sample(list(corpus(q.check))):
                slug = re.sub(r"\W+", "_", mistake)
                path = folder / f"{q.chapter}.{q.label}.{slug}.ipynb"
                source = (
                    f"from tests.checks.{module} import {name}\n\n"
                    f"{q.function} = {name}[{mistake!r}][0]"
                )
                nbformat.write(with_answer(solutions, source, q.label), path)
                expect[path.name] = (q.label, corpus(q.check)[mistake][1])
        elif q.seed_dependent:  # the answer the public book shows, copied
            path = folder / f"{q.chapter}.{q.label}.copied.ipynb"
            nbformat.write(
                with_answer(solutions, f"{q.answer} = {q.at_book_seed!r}", q.label), path
            )
            expect[path.name] = (q.label, r"is not the answer this notebook's data gives")
        else:
            path = folder / f"{q.chapter}.{q.label}.off.ipynb"
            nbformat.write(
                with_answer(solutions, f"{q.answer} = {q.expected + 1!r}", q.label), path
            )
            expect[path.name] = (q.label, r"is not the answer this notebook's data gives")
    student = out / "student" / "q5_transformer.ipynb"
    nbformat.write(with_answer(student, "while True:\n    pass"), folder / "endless.ipynb")
    nbformat.write(with_answer(student, "import os\n\nos._exit(1)"), folder / "dies.ipynb")
    deleted = nbformat.read(out / "student" / "q4_norms.ipynb", as_version=4)
    deleted.cells.remove(answer_cell(deleted))
    nbformat.write(deleted, folder / "deleted.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), folder / "empty.ipynb")
    (folder / "broken.ipynb").write_text(student.read_text()[:300])
    (folder / "essay.pdf").write_bytes(b"%PDF-1.4 not a notebook")
    breaks = {
        "endless.ipynb": r"did not finish within 40 s",
        "dies.ipynb": r"did not run to the end: .*Kernel died",
        "deleted.ipynb": r"graded cells deleted: the answer cell of q4-ex-layernorm",
        "empty.ipynb": r"an empty notebook",
        "broken.ipynb": r"not a readable notebook",
        "essay.pdf": r"not a notebook \(a \.pdf file\)",
    }
    results = tmp_path_factory.mktemp("grades")
    os.environ["PYTHONPATH"] = str(ROOT)  # the kernels import the corpora from tests/
    started = time.monotonic()
    grades = grade.grade_folder(folder, results, out, timeout=TIMEOUT)
    seconds = time.monotonic() - started
    ran = [g.seconds for g in grades if g.seconds]
    print(f"graded {len(grades)} submissions in {seconds:.0f} s; one that runs takes "
          f"{min(ran):.1f} to {max(ran):.1f} s")  # fmt: skip
    with (results / "grades.csv").open(encoding="utf-8") as stream:
        rows = {row["submission"]: row for row in csv.DictReader(stream)}
    feedback = {
        p.name.removesuffix(".txt"): p.read_text() for p in (results / "feedback").iterdir()
    }
    return rows, feedback, expect, breaks, folder


def test_one_row_and_one_feedback_file_per_submission(graded):
    rows, feedback, _, _, folder = graded
    files = {p.name for p in folder.iterdir()}
    assert set(rows) == files and set(feedback) == files


def test_the_solutions_get_full_marks(graded):
    rows, _, expect, _, _ = graded
    right = [name for name, (question, _) in expect.items() if question is None]
    assert len(right) == len({name.split(".")[0] for name in expect}), "one per assignment"
    for name in right:
        assert float(rows[name]["total"]) == float(rows[name]["possible"]) > 0, rows[name]
        assert rows[name]["note"] == "", rows[name]


def test_every_wrong_answer_loses_its_questions_points_and_is_named(graded):
    rows, feedback, expect, _, _ = graded
    wrong = {name: e for name, e in expect.items() if e[0] is not None}
    assert len(wrong) >= 8
    for name, (question, named) in wrong.items():
        row = rows[name]
        assert float(row[question]) == 0, (name, row)
        assert float(row["total"]) == float(row["possible"]) - points(rows, question), (name, row)
        section = feedback[name].split(f"\n{question}: ")[1]
        assert re.search(named, section, flags=re.S), (name, named, section)


def points(rows, question) -> float:
    """A question's points: what a full-marks row of its assignment has in its column."""
    return max(float(row[question] or 0) for row in rows.values())


def test_a_self_checks_message_reaches_the_feedback_verbatim(graded):
    _, feedback, expect, _, _ = graded
    for name, (question, _) in expect.items():
        if question and "ex-implement" in question:
            assert "self-check (" in feedback[name] and "AssertionError: check_" in feedback[name]


def test_a_submission_that_breaks_gets_its_row_with_zero_and_the_reason(graded):
    rows, feedback, _, breaks, _ = graded
    for name, reason in breaks.items():
        assert float(rows[name]["total"]) == 0, rows[name]
        assert re.search(reason, rows[name]["note"]), rows[name]
        assert re.search(reason, feedback[name]), feedback[name]


def test_student_notebooks_import_nothing_of_otter_and_hold_no_solution(built):
    out, qs = built
    for q in qs:
        notebook = nbformat.read(out / "student" / f"{q.chapter}.ipynb", as_version=4)
        code = "\n".join(
            "\n".join(line for line in c.source.split("\n") if not line.startswith("%"))
            for c in notebook.cells
            if c.cell_type == "code"
        )
        for node in ast.walk(ast.parse(code)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not [n for n in names if n.split(".")[0] == "otter"], q.chapter
        assert "grader" not in code and "otter" not in code, q.chapter
        answer = answer_cell(notebook, q.label).source
        solution = q.source if q.kind == "numeric" else solution_lines(q)
        for line in solution.split("\n"):
            if len(line.strip()) > 12 and not line.strip().startswith(("def ", '"""', "#")):
                assert line.strip() not in answer, (q.label, line)


def solution_lines(q) -> str:
    tree = ast.parse(q.source)
    [function] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == q.function]
    return "\n".join(q.source.split("\n")[function.body[0].lineno - 1 : function.end_lineno])


def test_hidden_tests_and_answers_are_only_in_the_autograder(built):
    import zipfile

    out, qs = built
    assert not list((out / "student").glob("**/*.py")), "no test files go to students"
    for q in qs:
        with zipfile.ZipFile(out / "autograder" / f"{q.chapter}.zip") as archive:
            tests = archive.read(f"tests/{q.label}.py").decode()
            config = json.loads(archive.read("otter_config.json"))
            assert any(n.startswith("files/attention_one_question-") for n in archive.namelist())
        assert "hidden=True" in tests and config["assignment_name"] == q.chapter
        student = (out / "student" / f"{q.chapter}.ipynb").read_text()
        if q.kind == "numeric":
            assert repr(q.expected) in tests and repr(q.expected) not in student
        else:
            assert "other_settings" in tests and "other_settings" not in student


def test_the_course_seed_is_an_assignment_parameter(built):
    out, qs = built
    for chapter in {q.chapter for q in qs}:
        notebook = nbformat.read(out / "student" / f"{chapter}.ipynb", as_version=4)
        [seed] = [c for c in notebook.cells if "seed" in c.metadata.get("assignment", {})]
        assert f'os.environ["BOOK_SEED"] = "{COURSE_SEED}"' in seed.source
    assert any(q.seed_dependent for q in qs), "at least one answer changes with the seed"


def test_every_chapter_exercise_that_runs_a_self_check_is_a_question(built):
    """A chapter's solution cell that defines a function and runs a check on it is marked."""
    _, qs = built
    from tutorial_lib import checks

    names = set(checks.__all__) - {"check_shape"}
    marked = {(q.chapter, q.function) for q in qs if q.kind == "check"}
    for chapter in assignments.book_toc.chapters(ROOT):
        for label, _, _, _, code in unmarked_solution_cells(chapter):
            tree = ast.parse(assignments.MAGIC.sub("#", code))
            calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Name)}  # fmt: skip
            defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
            if calls & names and defined:
                assert any((chapter.stem, f) in marked for f in defined), (chapter.name, label)


def unmarked_solution_cells(chapter: Path):
    notebook = json.loads(chapter.read_text())
    gate = None
    for cell in notebook["cells"]:
        text = assignments.cell_text(cell)
        if cell["cell_type"] == "markdown":
            for kind, label in assignments.GATE.findall(text):
                gate = label if kind == "start" else None
        elif gate and "assignment" not in cell.get("metadata", {}):
            yield gate, None, None, None, text

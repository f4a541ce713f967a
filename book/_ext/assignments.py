"""Graded assignments from the chapters: ``make assignments`` (otter-grader's ``otter assign``).

Which exercises become questions is marked in the chapters themselves, in the metadata of a
code cell of the exercise's gated solution (``{solution-start}`` ... ``{solution-end}``), under
the key ``assignment``; readers never see it, and the book builds as before:

* ``{"points": 4}`` on a cell that calls a self-check on a function it defines
  (``check_rope(rope_real)``; or name both, ``"function"`` and ``"check"``): an *implement
  it yourself* question. The student gets the
  function's signature and docstring with ``...`` for a body; the public test is the learner's
  own self-check (half the points), the hidden test the same check on other sizes and draws
  (``tutorial_lib.checks.other_settings``, seeded from the course's seed).
* ``{"answer": "layers", "points": 2}`` (optionally ``"rtol"``, ``"atol"``, ``"prompt"``) on a
  cell that computes a number: a *numeric* question. The student writes the computation and
  stores the number in that variable; the hidden test compares it with the answer this cell
  computes from the course's seed, within the tolerance (default ``rtol`` 1e-3).
* ``{"given": true}``: a cell of the same solution that the student gets as it is, before the
  question's answer cell (the data a numeric question computes from).

The chapters come from ``_toc.yml`` (``book_toc``), so a new chapter's marked exercises become
questions by the same rule. The question's text is the exercise as the learner notebook
(``notebooks/``) words it. Each chapter with questions becomes one assignment: its title, its
install and imports cells, a cell that sets ``BOOK_SEED`` to the course's seed (an assignment
parameter), then the questions. ``otter assign`` (``init_cell``, ``check_cell`` and
``export_cell`` off, so the student notebook imports nothing of otter) writes, under
``_build/assignments/``:

* ``student/<chapter>.ipynb``: what students get (no solutions, no tests);
* ``autograder/<chapter>.zip``: public and hidden tests, for ``make grade`` and Gradescope;
* ``solutions/<chapter>.ipynb``: the same notebook with every answer;
* ``questions.csv``: every question, its points, and whether its answer changes with the seed.

Keep everything but ``student/`` private: the hidden tests hold this course's answers.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import book_toc
import nbformat

ROOT = Path(__file__).resolve().parents[2]
MARKER = "assignment"
GATE = re.compile(r"\{solution-(start|end)\}\s*(\S*)")
EXERCISE = re.compile(r"\{exercise\}\s*(.*)\n:label:\s*(\S+)")
CHECK_CALL = re.compile(r"^check_\w+$")
MAGIC = re.compile(r"^\s*[%!]", re.M)
PYTORCH_CPU = "https://download.pytorch.org/whl/cpu"


class AssignmentError(RuntimeError):
    """A marker that cannot become a question, with where it is."""


@dataclass
class Question:
    chapter: str  # q2_scaling
    label: str  # the exercise's label, q2-ex-implement: the question's name everywhere
    title: str
    prompt: str  # Markdown
    points: int
    kind: str  # "check" or "numeric"
    source: str  # the marked cell's code
    given: list[str] = field(default_factory=list)
    function: str = ""  # check: the learner's function
    check: str = ""  # check: the self-check it calls
    answer: str = ""  # numeric: the variable
    rtol: float = 1e-3
    atol: float = 1e-9
    expected: float | None = None  # numeric: from the course's seed
    at_book_seed: float | None = None  # numeric: from the book's own seed, 0

    @property
    def seed_dependent(self) -> bool | None:
        if self.kind != "numeric":
            return None
        return not math.isclose(
            self.expected, self.at_book_seed, rel_tol=self.rtol, abs_tol=self.atol
        )


# -- reading the chapters ---------------------------------------------------------------------


def cell_text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def learner_exercises(learner: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(title, text) of every exercise of a learner notebook, in order."""
    found = []
    for cell in learner.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("### Exercise: "):
            heading, _, text = cell.source.partition("\n\n")
            found.append((heading.removeprefix("### Exercise: ").strip(), text.strip()))
    return found


def marked_cells(chapter: Path) -> list[tuple[str, str, dict, list[str], str]]:
    """(exercise label, exercise title, marker, given cells, code) of every question cell."""
    notebook = json.loads(chapter.read_text(encoding="utf-8"))
    titles, gate, given, found = {}, None, [], []
    for cell in notebook["cells"]:
        text = cell_text(cell)
        if cell["cell_type"] == "markdown":
            titles.update({label: title.strip() for title, label in EXERCISE.findall(text)})
            for kind, label in GATE.findall(text):
                gate, given = (label, []) if kind == "start" else (None, [])
            continue
        marker = cell.get("metadata", {}).get(MARKER)
        if marker is None:
            continue
        if gate is None:
            raise AssignmentError(f"{chapter.name}: an {MARKER!r} marker outside a solution")
        if marker.get("given"):
            given.append(text)
        else:
            found.append((gate, titles[gate], marker, given, text))
            given = []
    return found


def check_question(q: Question, marker: dict) -> None:
    """The self-check and the function it checks: named by the marker, or the cell's one call."""
    tree = ast.parse(q.source)
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    if "function" in marker and "check" in marker:
        q.check, q.function = marker["check"], marker["function"]
        if q.function not in defined:
            raise AssignmentError(f"{q.chapter}, {q.label}: the cell defines no {q.function}")
        return
    calls = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and CHECK_CALL.match(node.value.func.id)
        and len(node.value.args) == 1
        and isinstance(node.value.args[0], ast.Name)
    ]
    calls = [call for call in calls if call.args[0].id in defined]
    if len(calls) != 1:
        raise AssignmentError(
            f"{q.chapter}, {q.label}: a question cell calls one self-check on a function it "
            f"defines, check_...(my_function), or its marker names both; found {len(calls)}"
        )
    q.check, q.function = calls[0].func.id, calls[0].args[0].id


def questions(chapter: Path, learner: Path) -> list[Question]:
    """The questions one chapter's markers make."""
    exercises = learner_exercises(nbformat.read(learner, as_version=4))
    notebook = json.loads(chapter.read_text(encoding="utf-8"))
    markdown = "\n".join(cell_text(c) for c in notebook["cells"] if c["cell_type"] == "markdown")
    labels = [label for _, label in EXERCISE.findall(markdown)]
    found = []
    for label, title, marker, given, source in marked_cells(chapter):
        learner_title, text = exercises[labels.index(label)]
        if learner_title != title:
            raise AssignmentError(f"{learner.name}: exercise {label} is not where expected")
        kind = "numeric" if "answer" in marker else "check"
        q = Question(
            chapter=chapter.stem,
            label=label,
            title=title,
            prompt=marker.get("prompt", text),
            points=int(marker.get("points", 4 if kind == "check" else 2)),
            kind=kind,
            source=source,
            given=given,
            answer=marker.get("answer", ""),
            rtol=float(marker.get("rtol", 1e-3)),
            atol=float(marker.get("atol", 1e-9)),
        )
        if kind == "check":
            check_question(q, marker)
        found.append(q)
    return found


# -- numeric answers ----------------------------------------------------------------------------


@contextlib.contextmanager
def book_seed(seed: int):
    before = os.environ.get("BOOK_SEED")
    os.environ["BOOK_SEED"] = str(seed)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("BOOK_SEED")
        else:
            os.environ["BOOK_SEED"] = before


# Run in a fresh interpreter: the imports, the given cells, the question's cell, then the answer.
ANSWER_SCRIPT = """
import json, sys
cells, answer = json.load(sys.stdin)
namespace = {}
for code in cells:
    exec(compile(code, "<cell>", "exec"), namespace)
print(json.dumps(float(namespace[answer])))
"""


def compute_answer(q: Question, imports: str, seed: int) -> float:
    """The marked cell's answer with BOOK_SEED = seed, computed as a fresh kernel would."""
    cells = [MAGIC.sub("#", code) for code in (imports, *q.given, q.source)]
    done = subprocess.run(
        [sys.executable, "-c", ANSWER_SCRIPT],
        input=json.dumps([cells, q.answer]),
        capture_output=True,
        text=True,
        env=os.environ | {"BOOK_SEED": str(seed), "MPLBACKEND": "Agg"},
    )
    if done.returncode != 0:
        raise AssignmentError(f"{q.chapter}, {q.label}: the answer cell failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().split("\n")[-1])


# -- the otter master notebook ------------------------------------------------------------------


def raw(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(text.strip("\n"))


def solution_cell(q: Question) -> str:
    """The answer cell as otter assign reads it: the solution between otter's markers."""
    if q.kind == "numeric":
        return (
            f"# BEGIN SOLUTION NO PROMPT\n{q.source.rstrip()}\n# END SOLUTION\n"
            f'""" # BEGIN PROMPT\n{q.answer} = ...  # your computation, then the number\n'
            '"""; # END PROMPT'
        )
    tree = ast.parse(q.source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    needed, todo = [], [q.function]
    while todo:  # the function and every function of the cell it calls
        name = todo.pop()
        if name in needed:
            continue
        needed.append(name)
        used = {n.id for n in ast.walk(functions[name]) if isinstance(n, ast.Name)}
        todo += sorted(used & set(functions) - {name})
    lines = q.source.split("\n")
    parts = [f"from tutorial_lib.checks import {q.check}"]
    helpers = ""  # the solution's own helpers: students get none of them
    for name in sorted(needed[1:], key=lambda n: functions[n].lineno):
        helper = "\n".join(lines[functions[name].lineno - 1 : functions[name].end_lineno])
        helpers += f"# BEGIN SOLUTION NO PROMPT\n{helper}\n\n\n# END SOLUTION\n"
    node = functions[q.function]
    body = node.body
    has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    head = lines[node.lineno - 1 : (body[1] if has_doc else body[0]).lineno - 1]
    code = lines[(body[1] if has_doc else body[0]).lineno - 1 : node.end_lineno]
    indent = re.match(r"\s*", code[0]).group(0)
    parts.append(
        helpers + "\n".join([*head, f"{indent}# BEGIN SOLUTION", *code, f"{indent}# END SOLUTION"])
    )
    parts.append(f"# Then run {q.check}({q.function}): quiet when right, it names the mistake.")
    return "\n\n\n".join(parts)


def test_cells(q: Question, check_seed: int) -> list[nbformat.NotebookNode]:
    """Otter's exception-based test cells: the self-check in public, the rest hidden."""
    if q.kind == "check":
        public = q.points // 2
        return [
            nbformat.v4.new_code_cell(
                f'""" # BEGIN TEST CONFIG\npoints: {public}\n""" # END TEST CONFIG\n'
                f"def test_self_check({q.function}):\n"
                f"    from tutorial_lib.checks import {q.check}\n\n"
                f"    {q.check}({q.function})\n\n\n"
                f"test_self_check({q.function})"
            ),
            nbformat.v4.new_code_cell(
                f'""" # BEGIN TEST CONFIG\nhidden: true\npoints: {q.points - public}\n'
                '""" # END TEST CONFIG\n'
                f"def test_other_sizes({q.function}):\n"
                f"    from tutorial_lib.checks import {q.check}, other_settings\n\n"
                f"    {q.check}({q.function}, **other_settings({q.check}, seed={check_seed}))"
                f"\n\n\ntest_other_sizes({q.function})"
            ),
        ]
    name = q.answer
    return [
        nbformat.v4.new_code_cell(
            f'""" # BEGIN TEST CONFIG\nhidden: true\npoints: {q.points}\n""" # END TEST CONFIG\n'
            f"def test_this_courses_answer({name}):\n"
            "    import math\n\n"
            f"    expected = {q.expected!r}  # from this course's seed\n"
            "    try:\n"
            f"        value = float({name})\n"
            "    except (TypeError, ValueError):\n"
            f"        raise AssertionError(\n"
            f'            f"{name} should be a number; it is {{{name}!r:.80}}"\n'
            "        ) from None\n"
            f"    assert math.isclose(value, expected, rel_tol={q.rtol!r}, abs_tol={q.atol!r}), "
            f"(\n        f\"{name} = {{value:.6g}} is not the answer this notebook's data gives "
            f'(checked to a relative {q.rtol:g})"\n    )\n\n\n'
            f"test_this_courses_answer({name})"
        )
    ]


def master_notebook(
    chapter: str, learner: nbformat.NotebookNode, qs: list[Question], seed: int, config: dict
) -> nbformat.NotebookNode:
    """The chapter's assignment in otter assign's notebook format."""
    codes = [c for c in learner.cells if c.cell_type == "code"]
    install, imports = codes[0].source, codes[1].source
    title = learner.cells[0].source.removeprefix("# ").strip()
    points = sum(q.points for q in qs)
    listing = "\n".join(f"{i}. {q.title} ({q.points} points)" for i, q in enumerate(qs, 1))
    about = (
        f"This assignment is made from the chapter *{title}* of the book *Attention, one "
        "question at a time*. Read the chapter first; here are only the cells the questions "
        f"need. {'Its questions' if len(qs) > 1 else 'Its question'} ({points} points):"
        f"\n\n{listing}\n\n"
        "Answer in the cells that end each question, keeping the names they give. The grader "
        "runs this notebook from top to bottom in a fresh kernel, so make sure it runs that "
        "way, and do not delete or edit the other cells: the seed cell sets this course's "
        "data, and answers computed from other data are wrong here."
    )
    seed_cell = nbformat.v4.new_code_cell(
        "import os\n\n"
        "# This course's seed: every random draw of tutorial_lib follows it (BOOK_SEED).\n"
        f'os.environ["BOOK_SEED"] = "{seed}"'
    )
    seed_cell.metadata[MARKER] = {"seed": seed}
    cells = [
        raw("# ASSIGNMENT CONFIG\n" + yaml_dump(config)),
        nbformat.v4.new_markdown_cell(f"# Assignment · {title}\n\n{about}"),
        nbformat.v4.new_code_cell(install),
        seed_cell,
        nbformat.v4.new_code_cell(imports),
    ]
    for number, q in enumerate(qs, 1):
        if q.kind == "check":
            graded = (
                f"**Graded:** your `{q.function}`. The grader runs `{q.check}({q.function})` "
                f"({q.points // 2} points) and the same check on other sizes "
                f"({q.points - q.points // 2} points)."
            )
        else:
            graded = (
                f"**Graded** ({q.points} points): the number in `{q.answer}`, computed in the "
                "cell below from this notebook's data, compared with this course's answer."
            )
        cells += [
            raw(f"# BEGIN QUESTION\nname: {q.label}\ncheck_cell: false"),
            nbformat.v4.new_markdown_cell(
                f"## Question {number} · {q.title} ({q.points} points)\n\n{q.prompt}\n\n{graded}"
            ),
            *[nbformat.v4.new_code_cell(code) for code in q.given],
            raw("# BEGIN SOLUTION"),
            nbformat.v4.new_code_cell(solution_cell(q), metadata={MARKER: {"question": q.label}}),
            raw("# END SOLUTION"),
            raw("# BEGIN TESTS"),
            *test_cells(q, check_seed=seed_for_checks(seed, q)),
            raw("# END TESTS"),
            raw("# END QUESTION"),
        ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return notebook


def seed_for_checks(seed: int, q: Question) -> int:
    """The hidden tests' draws: from the course's seed, per question, below 2**31."""
    with book_seed(seed):
        from tutorial_lib import seeds

        return seeds.derive("assignment", q.chapter, q.label) % 2**31


def yaml_dump(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def otter_config(chapter: str, wheel: str) -> dict:
    """The assignment config: nothing of otter in the notebook; Gradescope's environment."""
    return {
        "name": chapter,
        "init_cell": False,
        "check_all_cell": False,
        "export_cell": False,
        "run_tests": True,
        "tests": {"files": True, "ok_format": False},
        "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
        # Gradescope's image installs these: PyTorch's CPU build (the default wheel is the
        # multi-GB CUDA one) and tutorial_lib as this checkout has it, shipped in the zip.
        "requirements": [
            f"--extra-index-url {PYTORCH_CPU}",
            "torch==2.13.0",
            f"/autograder/source/files/{wheel}",
        ],
        "autograder_files": [wheel],
        "generate": {"show_stdout": False, "show_hidden": False},
    }


# -- building -----------------------------------------------------------------------------------


def build_wheel(root: Path, where: Path) -> Path:
    """tutorial_lib's wheel, from a copy of the checkout (the build leaves its files there)."""
    copy = where / "checkout"
    shutil.copytree(
        root / "tutorial_lib", copy / "tutorial_lib", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(root / name, copy / name)
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, "-w", where, copy], check=True, capture_output=True)
    shutil.rmtree(copy)
    [wheel] = where.glob("*.whl")
    return wheel


def build(root: Path, out: Path, seed: int, run_tests: bool = True) -> list[Question]:
    """Write every chapter's assignment into ``out``; return the questions."""
    every = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheel = build_wheel(root, work / "wheel")
        for folder in ("student", "autograder", "solutions"):
            shutil.rmtree(out / folder, ignore_errors=True)
            (out / folder).mkdir(parents=True)
        for chapter in book_toc.chapters(root):
            learner_path = root / "notebooks" / chapter.name
            qs = questions(chapter, learner_path)
            if not qs:
                continue
            learner = nbformat.read(learner_path, as_version=4)
            imports = [c for c in learner.cells if c.cell_type == "code"][1].source
            for q in qs:
                if q.kind == "numeric":
                    q.expected = compute_answer(q, imports, seed)
                    q.at_book_seed = compute_answer(q, imports, 0)
            config = otter_config(chapter.stem, wheel.name)
            config["run_tests"] = run_tests
            master_dir = work / chapter.stem
            master_dir.mkdir()
            shutil.copy(wheel, master_dir / wheel.name)
            master = master_notebook(chapter.stem, learner, qs, seed, config)
            nbformat.write(master, master_dir / chapter.name)
            done = subprocess.run(
                [Path(sys.executable).with_name("otter"), "assign", chapter.name, "dist"],
                cwd=master_dir,
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise AssignmentError(f"otter assign failed on {chapter.stem}:\n{done.stderr}")
            dist = master_dir / "dist"
            shutil.copy(dist / "student" / chapter.name, out / "student" / chapter.name)
            shutil.copy(dist / "autograder" / chapter.name, out / "solutions" / chapter.name)
            [zip_file] = (dist / "autograder").glob("*.zip")
            shutil.copy(zip_file, out / "autograder" / f"{chapter.stem}.zip")
            every += qs
    write_questions(out / "questions.csv", every)
    return every


def write_questions(path: Path, qs: list[Question]) -> None:
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["assignment", "question", "title", "kind", "points", "seed-dependent"])
        for q in qs:
            dependent = {None: "", True: "yes", False: "no"}[q.seed_dependent]
            writer.writerow([q.chapter, q.label, q.title, q.kind, q.points, dependent])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--out", type=Path, help="default: _build/assignments")
    parser.add_argument("--no-run-tests", action="store_true", help="skip otter's solution run")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    out = args.out or root / "_build" / "assignments"
    from tutorial_lib import seeds

    seed = seeds.book_seed()
    if seed == 0:
        print(
            "make assignments: BOOK_SEED is 0, the book's own seed, so numeric answers are the "
            "ones the public book shows. For a course, set a private one: BOOK_SEED=<number> "
            "make assignments.",
            file=sys.stderr,
        )
    try:
        qs = build(root, out, seed, run_tests=not args.no_run_tests)
    except AssignmentError as error:
        print(f"make assignments: {error}", file=sys.stderr)
        return 1
    chapters = sorted({q.chapter for q in qs})
    print(f"{len(chapters)} assignments, {len(qs)} questions, course seed {seed}, in {out}:")
    for q in qs:
        dependent = {None: "", True: ", seed-dependent", False: ", the same for every seed"}
        print(f"  {q.chapter:<28} {q.label:<22} {q.kind:<8} {q.points} points"
              f"{dependent[q.seed_dependent]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Grade a folder of submissions with otter-grader's `otter run`: `make grade SUBMISSIONS=<dir>`.

Every file in the folder is one submission. Each notebook is graded against the autograder zip
of its assignment (``_build/assignments/autograder/<name>.zip``, named in the notebook's
metadata, or ``--assignment`` for all), by ``otter run``: no Docker, the notebook executed top to
bottom in a fresh kernel of this environment, then its public and hidden tests. Submissions are
graded side by side, one per core, each with a time limit.

Written into the output folder:

* ``grades.csv``: one row per submission file, named by it: the assignment, one column per
  question, the total, the points possible, and a note saying why a submission got nothing;
* ``feedback/<file>.txt``: per question, the points and the message of every failed test (a
  self-check's message as the learner would see it).

A file that is not a notebook, a notebook that cannot be read or does not run, one that runs
past the time limit, or one whose graded cells (the answer cells and the seed cell) were
deleted gets its row with zero points and the reason; it never stops the others.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "assignment"  # the metadata of the graded cells (book/_ext/assignments.py)


@dataclass
class Grade:
    """One submission's result."""

    submission: str
    assignment: str = ""
    scores: dict[str, float] = field(default_factory=dict)  # question -> points
    possible: dict[str, float] = field(default_factory=dict)
    messages: dict[str, list[str]] = field(default_factory=dict)  # question -> failures
    note: str = ""  # why the submission got nothing, or what else went wrong
    seconds: float = 0.0  # how long its grading took

    def zero(self, note: str) -> Grade:
        self.scores = {q: 0.0 for q in self.possible}
        self.note = note
        return self


# -- one submission, in its own process ---------------------------------------------------------


def run_one(submission: Path, autograder: Path) -> dict:
    """Grade with otter run (in this process) and return what the row and the feedback need."""
    import otter.run
    from nbformat import NotebookNode

    with contextlib.redirect_stdout(sys.stderr):  # otter prints its summary
        results = otter.run.main(
            str(submission), autograder=str(autograder), output_dir=None, no_logo=True
        )
    report = {"scores": {}, "possible": {}, "messages": {}, "errors": []}
    for name, test_file in results.results.items():
        report["scores"][name] = float(test_file.score)
        report["possible"][name] = float(test_file.possible)
        failed = []
        for result in test_file.test_case_results:
            if result.passed:
                continue
            kind = "hidden test" if result.test_case.hidden else "self-check"
            failed.append(f"{kind} ({result.test_case.name}): {failure(result.message)}")
        report["messages"][name] = failed
    if results.catastrophic_error is not None:
        report["errors"].append(f"grading failed: {results.catastrophic_error}")
    notebook = results.notebook if isinstance(results.notebook, NotebookNode) else None
    for cell in notebook.cells if notebook else []:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                report["errors"].append(f"a cell raised {output['ename']}: {output['evalue']}")
    return report


def failure(message: str) -> str:
    """The exception of an otter failure message, without otter's header and the test line."""
    lines = message.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Error at line") and i + 2 < len(lines):
            return "\n".join(lines[i + 2 :]).strip()
    return message.strip()


# -- the folder ---------------------------------------------------------------------------------


def questions_of(autograder: Path) -> dict[str, float]:
    """Every question of an autograder zip and its points, read from its test files."""
    import zipfile

    from otter.test_files.exception_test import ExceptionTestFile

    possible = {}
    with zipfile.ZipFile(autograder) as archive, tempfile.TemporaryDirectory() as tmp:
        for name in sorted(archive.namelist()):
            if name.startswith("tests/") and name.endswith(".py"):
                path = archive.extract(name, tmp)
                test_file = ExceptionTestFile.from_file(path)
                possible[test_file.name] = float(test_file.possible)
    return possible


def graded_cells(autograder: Path) -> list[str]:
    """What the graded cells of the assignment's notebook are called: its questions, and seed."""
    return [*questions_of(autograder), "seed"]


def read_submission(path: Path, assignments: Path, forced: str | None, grade: Grade):
    """The notebook and its autograder zip, or None with the grade's note set."""
    import nbformat

    if path.suffix != ".ipynb":
        grade.note = f"not a notebook (a {path.suffix or 'file without extension'} file)"
        return None
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # any unreadable file is a reason, not a crash
        reason = str(error).split("\n")[0] or type(error).__name__
        grade.note = f"not a readable notebook: {reason[:200]}"
        return None
    name = forced or notebook.metadata.get("otter", {}).get("assignment_name")
    if not notebook.cells and not name:
        grade.note = "an empty notebook: no cells"
        return None
    if not name:
        grade.note = "no assignment named in its metadata (grade it with ASSIGNMENT=<name>)"
        return None
    grade.assignment = name
    autograder = assignments / "autograder" / f"{name}.zip"
    if not autograder.is_file():
        grade.note = f"no autograder for the assignment {name!r} in {assignments}"
        return None
    grade.possible = questions_of(autograder)
    present = {
        (m.get("question") or ("seed" if "seed" in m else None))
        for cell in notebook.cells
        for m in [cell.get("metadata", {}).get(MARKER, {})]
    }
    missing = [cell for cell in graded_cells(autograder) if cell not in present]
    if missing:
        named = ", ".join(
            "the seed cell" if c == "seed" else f"the answer cell of {c}" for c in missing
        )
        grade.zero(f"graded cells deleted: {named}")
        return None
    return autograder


def grade_one(path: Path, assignments: Path, forced: str | None, timeout: float, work: Path):
    """Grade one file in a child process with a time limit; never raises."""
    try:
        return grade_in_child(path, assignments, forced, timeout, work)
    except Exception as error:  # a row with the reason, whatever happened
        return Grade(path.name).zero(f"could not be graded: {type(error).__name__}: {error}")


def grade_in_child(path: Path, assignments: Path, forced: str | None, timeout: float, work: Path):
    grade = Grade(path.name)
    autograder = read_submission(path, assignments, forced, grade)
    if autograder is None:
        return grade.zero(grade.note) if grade.possible else grade
    out = work / f"{path.name}.json"
    tmp = work / f"{path.name}.tmp"
    tmp.mkdir()
    command = [sys.executable, __file__, "--one", str(path), "--autograder", str(autograder)]
    command += ["--json", str(out)]
    env = os.environ | {"TMPDIR": str(tmp), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    started = time.monotonic()
    child = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        _, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(child.pid)
        child.communicate()
        return grade.zero(f"did not finish within {timeout:g} s (an endless loop?)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if child.returncode != 0 or not out.is_file():
        last = [line for line in stderr.strip().split("\n") if line.strip()][-1:] or ["?"]
        return grade.zero(f"the notebook did not run to the end: {last[0][:300]}")
    grade.seconds = time.monotonic() - started
    report = json.loads(out.read_text())
    grade.scores, grade.messages = report["scores"], report["messages"]
    grade.possible.update(report["possible"])
    if report["errors"]:
        grade.note = "; ".join(dict.fromkeys(report["errors"]))[:500]
    return grade


def kill_tree(pid: int) -> None:
    """End a grading process and everything it started (its kernel runs in a session of its own)."""
    import psutil

    try:
        parent = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    family = [*parent.children(recursive=True), parent]
    for process in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGKILL)
    psutil.wait_procs(family, timeout=10)


def write_grades(out: Path, grades: list[Grade]) -> None:
    """grades.csv and one feedback file per submission."""
    questions = list(dict.fromkeys(q for g in grades for q in g.possible))
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["submission", "assignment", *questions, "total", "possible", "note"])
        for g in grades:
            cells = [f"{g.scores[q]:g}" if q in g.scores else "" for q in questions]
            total, possible = sum(g.scores.values()), sum(g.possible.values())
            writer.writerow(
                [g.submission, g.assignment, *cells, f"{total:g}", f"{possible:g}", g.note]
            )
    feedback = out / "feedback"
    shutil.rmtree(feedback, ignore_errors=True)
    feedback.mkdir()
    for g in grades:
        lines = [
            f"{g.submission}: {sum(g.scores.values()):g} of {sum(g.possible.values()):g} points"
        ]
        if g.assignment:
            lines[0] += f" ({g.assignment})"
        if g.note:
            lines += ["", g.note]
        for q, possible in g.possible.items():
            lines += ["", f"{q}: {g.scores.get(q, 0):g} of {possible:g}"]
            lines += [f"  {m}".replace("\n", "\n  ") for m in g.messages.get(q, [])]
        (feedback / f"{g.submission}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def grade_folder(
    submissions: Path,
    out: Path,
    assignments: Path,
    forced: str | None = None,
    timeout: float = 300.0,
    workers: int | None = None,
) -> list[Grade]:
    files = sorted(p for p in submissions.iterdir() if p.is_file() and not p.name.startswith("."))
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as tmp,
        ThreadPoolExecutor(workers or os.cpu_count()) as pool,
    ):
        grades = list(
            pool.map(lambda p: grade_one(p, assignments, forced, timeout, Path(tmp)), files)
        )
    write_grades(out, grades)
    return grades


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, nargs="?")
    parser.add_argument("--out", type=Path, help="default: _build/grades/<folder name>")
    parser.add_argument("--assignments", type=Path, default=ROOT / "_build" / "assignments")
    parser.add_argument("--assignment", help="grade every file against this assignment")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per submission")
    parser.add_argument("--workers", type=int, help="default: one per core")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--autograder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # the child process of grade_one
        args.json.write_text(json.dumps(run_one(args.one, args.autograder)))
        return 0
    if args.submissions is None or not args.submissions.is_dir():
        print("make grade: give a folder of submissions: make grade SUBMISSIONS=<folder>")
        return 2
    out = args.out or ROOT / "_build" / "grades" / args.submissions.resolve().name
    started = time.monotonic()
    grades = grade_folder(
        args.submissions, out, args.assignments, args.assignment, args.timeout, args.workers
    )
    seconds = time.monotonic() - started
    many = "submission" if len(grades) == 1 else "submissions"
    print(f"graded {len(grades)} {many} in {seconds:.0f} s: {out / 'grades.csv'}")
    for g in grades:
        total, possible = sum(g.scores.values()), sum(g.possible.values())
        took = f", {g.seconds:.0f} s" if g.seconds else ""
        print(
            f"  {g.submission}: {total:g} / {possible:g}{took}"
            + (f"  ({g.note})" if g.note else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

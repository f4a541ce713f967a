"""The chapter sources: stripped, listed in the table of contents, shaped like a chapter."""

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", [{"chapters": toc.get("chapters", [])}]):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def markdown(nb):
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_there_are_chapters():
    assert NOTEBOOKS, "no notebooks under book/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stripped(path):
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"cell {i} of {path.name} has outputs: strip them"
            assert cell["execution_count"] is None, f"cell {i} of {path.name} has a count"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_is_in_the_table_of_contents(path):
    # only_build_toc_files: a notebook missing from _toc.yml would silently vanish from the book.
    assert f"book/{path.stem}" in toc_files()


def test_every_toc_entry_exists():
    for entry in toc_files():
        assert any((ROOT / f"{entry}{suffix}").is_file() for suffix in (".ipynb", ".md")), entry


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.name.startswith("q")], ids=lambda p: p.name
)
def test_chapter_has_the_books_shape(path):
    text = markdown(json.loads(path.read_text()))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # a '# comment' in a code block is no title
    assert len(re.findall(r"^# ", prose, flags=re.M)) == 1, "exactly one title"
    assert "In this chapter" in text, "objectives, time needed and prerequisites at the top"
    assert "Time needed" in text or "time needed" in text
    assert len(re.findall(r"\{exercise\}", text)) >= 3, "at least three exercises"
    # A solution is a {solution} directive, or a gated {solution-start} whose code cells execute.
    n_solutions = len(re.findall(r"\{solution(?:-start)?\}", text))
    assert n_solutions == len(re.findall(r"\{exercise\}", text)), "one solution per exercise"
    assert "## Summary" in text
    assert len(re.findall(r"\{term\}", text)) >= 3, "link the glossary from first uses"
    # Footnote citations: a paper cited by several chapters is listed in each without clashing.
    assert "{footbibliography}" in text
    assert "{cite" not in text, "use {footcite:t} / {footcite:p}, not {cite}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_machine_paths(path):
    assert not re.search(r"/(tmp|root|work|home)/[A-Za-z]", path.read_text())

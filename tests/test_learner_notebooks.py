"""The learner notebooks in notebooks/ (what Colab, Binder, a hub and downloads open).

These checks read the committed files and the converter alone; tests/built checks that
the committed files are what the current book build makes, and tests/learner runs them.
"""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from .solutions import CHAPTERS, chapter_fragments, leaks, readable
from .solutions import normalize as normalize_text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import learner_notebooks as ln  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
RAW_MYST = [
    "{glue",
    "{term}",
    "{footcite",
    "{cite",
    ":::",
    "{solution",
    "{exercise",
    "{ref}",
    "{numref}",
    "{doc}",
    "{admonition",
    "{footbibliography}",
    "```{",
]


def learner(path: Path) -> dict:
    return json.loads((NOTEBOOKS / path.name).read_text())


def cells(nb: dict, kind: str) -> list[str]:
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def code_outside_solutions(nb: dict) -> list[str]:
    """The code cells a student sees: none between {solution-start} and {solution-end}."""
    code, gated = [], False
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for found in re.finditer(r"\{solution-(start|end)\}", text):
                gated = found.group(1) == "start"
        elif cell["cell_type"] == "code" and not gated:
            code.append(text)
    assert not gated, "a {solution-start} without its {solution-end}"
    return code


def test_one_learner_notebook_per_chapter_in_each_language():
    assert CHAPTERS
    names = sorted(p.name for p in CHAPTERS)
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == names
    assert sorted(p.name for p in (NOTEBOOKS / "zh").glob("*.ipynb")) == names
    # Instructor notebooks hold solutions: they are built, never committed (see README).
    others = [
        p for p in NOTEBOOKS.rglob("*.ipynb") if p.parent not in (NOTEBOOKS, NOTEBOOKS / "zh")
    ]
    assert others == [], "only student notebooks belong in notebooks/ and notebooks/zh/"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_learner_notebook_is_a_plain_valid_notebook(path):
    nb = nbformat.read(NOTEBOOKS / path.name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.metadata["learner_notebook"] == {
        "source": path.name,
        "edition": "student",
        "format": ln.FORMAT_VERSION,
    }
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_myst_syntax_reaches_a_learner(path):
    for text in cells(learner(path), "markdown"):
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        found = [token for token in RAW_MYST if token in prose]
        assert not found, f"{path.name}: {found} in:\n{text[:300]}"
        assert not re.search(r"\{[a-z]+(:[a-z]+)?\}`", prose), text[:300]
        assert not re.search(r"^\([\w-]+\)=\s*$", prose, flags=re.M), text[:300]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_machine_paths(path):
    for folder in (NOTEBOOKS, NOTEBOOKS / "zh"):
        assert not re.search(
            r"/(tmp|root|work|home)/[A-Za-z]|file://", (folder / path.name).read_text()
        )


# -- the Chinese learner notebooks (notebooks/zh), made from the same chapters and catalogs ----


def chinese(path: Path) -> dict:
    return json.loads((NOTEBOOKS / "zh" / path.name).read_text())


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chinese_notebook_has_the_english_code_and_no_myst(path):
    """Same code, cell for cell: what the Colab-like kernel runs in the English notebook is
    what runs here (tests/learner also runs one Chinese notebook there)."""
    nb = chinese(path)
    assert nb["metadata"]["learner_notebook"] == {
        "source": path.name,
        "edition": "student",
        "format": ln.FORMAT_VERSION,
        "language": "zh",
    }
    assert cells(nb, "code") == cells(learner(path), "code")
    for text in cells(nb, "markdown"):
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        assert not [token for token in RAW_MYST if token in prose], text[:300]
    assert "构建本书时算出来的" in cells(nb, "markdown")[1]
    assert "attention-book/zh/" in cells(nb, "markdown")[1], "links lead to the Chinese pages"


def _chinese_solution_fragments(path: Path) -> list[str]:
    """Runs of 12+ characters of the translations of each solution's own messages."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import translations

    from .solutions import SOLUTION, markdown_of, normalize, solutions

    docname = f"book/{path.stem}"
    gated = re.compile(r"\{solution-start\}.*?\{solution-end\}", re.S)
    text = markdown_of(path)
    outside = normalize(gated.sub("", SOLUTION.sub("", text)))
    bodies = [normalize(body) for body in solutions(path) + gated.findall(text)]
    fragments = []
    for message in translations.read_po(translations.catalog_paths(ROOT)[docname]):
        plain = normalize(message.id)
        if not message.string or plain in outside or not any(plain in b for b in bodies):
            continue
        runs = re.split(r"\{[\w:]+\}`[^`]*`|`[^`]*`|\$[^$]*\$", message.string)
        fragments += [normalize(r).strip() for r in runs if len(r.strip()) >= 12]
    return fragments


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chinese_student_notebook_holds_no_solution(path):
    seen = normalize_text(readable(NOTEBOOKS / "zh" / path.name))
    assert leaks(readable(NOTEBOOKS / "zh" / path.name), path) == []
    assert [f for f in _chinese_solution_fragments(path) if f in seen] == []


def test_the_chinese_leak_check_sees_a_translated_solution():
    """Q0's solutions are translated: their fragments exist, so the check above can fail."""
    assert len(_chinese_solution_fragments(CHAPTERS[0])) >= 4


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_student_notebook_holds_no_solution(path):
    fragments = chapter_fragments(path)
    assert all(fragments.values()), "every solution must have text to look for"
    assert leaks(readable(NOTEBOOKS / path.name), path) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_is_the_chapters_code_and_imports_no_build_tool(path):
    source = json.loads(path.read_text())
    chapter_code = code_outside_solutions(source)
    code = [c for c in cells(learner(path), "code") if c != ln.ANSWER_CELL]
    assert code == chapter_code
    for text in code:
        assert not re.search(r"^\s*(from|import)\s+(myst_nb|jupyter_book|sphinx)\b", text, re.M)
    # One empty answer cell per exercise, and the install cell first.
    n_exercises = sum(t.count("{exercise}") for t in cells(source, "markdown"))
    assert cells(learner(path), "code").count(ln.ANSWER_CELL) == n_exercises
    assert cells(learner(path), "code")[0] == chapter_code[0]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_notebook_says_its_numbers_come_from_the_book_build(path):
    markdown = cells(learner(path), "markdown")
    assert markdown[0].startswith("# ")
    assert "computed when the book was built" in markdown[1]
    assert sum("computed when the book was built" in text for text in markdown) == 1


# -- the converter, on small inputs ------------------------------------------------------------


BASE = "https://book.example/"


def converter(edition="student", glued=None):
    links = ln.Links(
        terms={"head": "book/glossary.html#term-head", "LayerNorm": "book/glossary.html#term-L"},
        labels={"q1-cost": ("book/q1.html#q1-cost", "What splitting costs")},
        docs={
            "book/q1": ("book/q1.html", "Q1"),
            "book/bibliography": ("book/bibliography.html", "Bibliography"),
        },
    )
    values = glued or {"n": {"text/plain": "1048576"}, "x": {"text/plain": "0.123456"}}
    return ln.Converter(
        base_url=BASE,
        links=links,
        bibliography=ln.Bibliography(ROOT / "references.bib"),
        glue=ln.glue_renderer(values),
        edition=edition,
        docname="book/q1",
    )


def markdown(source, **kwargs):
    return [(c.cell_type, c.source) for c in converter(**kwargs).markdown(source)]


def test_glued_values_are_formatted_as_myst_nb_formats_them():
    from myst_nb.core.variables import format_plain_text

    [(_, text)] = markdown("{glue:text}`n:,` and {glue:text}`x:.2f` and {glue:text}`x`")
    expected = [format_plain_text("1048576", ","), format_plain_text("0.123456", ".2f")]
    assert text == f"{expected[0]} and {expected[1]} and 0.123456"


def test_glued_text_cannot_break_a_table():
    glued = {"name": {"text/plain": "'a|b*c'"}}
    [(_, text)] = markdown("| x | {glue:text}`name` |", glued=glued)
    assert text == r"| x | a\|b\*c |"


def test_a_missing_glued_value_stops_the_conversion():
    with pytest.raises(ln.LearnerError, match="nope"):
        markdown("{glue:text}`nope:.2f`")


def test_terms_refs_and_docs_link_to_the_published_book():
    [(_, text)] = markdown(
        "{term}`heads <head>`, {term}`layernorm`, {ref}`q1-cost`, "
        "{ref}`this part <q1-cost>`, {doc}`the chapter <q1>`"
    )
    assert text == (
        f"[heads]({BASE}book/glossary.html#term-head), "
        f"[layernorm]({BASE}book/glossary.html#term-L), "
        f"[What splitting costs]({BASE}book/q1.html#q1-cost), "
        f"[this part]({BASE}book/q1.html#q1-cost), [the chapter]({BASE}book/q1.html)"
    )


def test_unknown_targets_stop_the_conversion():
    for source in ("{term}`nothing`", "{ref}`nowhere`", "{doc}`none`", "{footcite:p}`nobody`"):
        with pytest.raises(ln.LearnerError):
            markdown(source)


def test_citations_are_author_year_links_and_the_chapter_lists_its_references():
    convert = converter()
    out = convert.markdown(
        "As {footcite:t}`vaswani2017attention` showed ({footcite:p}`ba2016layernorm`).\n\n"
        "## References\n\n```{footbibliography}\n```"
    )
    [text] = [c.source for c in out]
    bib = f"{BASE}book/bibliography.html#cite-all-"
    assert f"[Vaswani *et al.* (2017)]({bib}vaswani2017attention) showed" in text
    assert f"([Ba *et al.*, 2016]({bib}ba2016layernorm))" in text
    references = text.split("## References")[1]
    assert references.index("Attention is all you need") < references.index("Layer normalization")
    assert "{" not in references


def test_admonitions_become_block_quotes_with_a_bold_title():
    [(_, text)] = markdown(":::{admonition} Careful\n:class: warning\nA {term}`head`.\n:::")
    assert text == f"> **Careful**\n>\n> A [head]({BASE}book/glossary.html#term-head)."


def test_dropdowns_become_block_quotes_too():
    [(_, text)] = markdown(":::{dropdown} The evidence\nEight seeds.\n:::")
    assert text == "> **The evidence**\n>\n> Eight seeds."


def test_targets_are_dropped_and_code_blocks_are_left_alone():
    [(_, text)] = markdown("(q1-cost)=\n## Costs\n\n```python\nx = '{term}`head`'\n```")
    assert text == "## Costs\n\n```python\nx = '{term}`head`'\n```"


EXERCISE = (
    "## Exercises\n\n"
    "::::{exercise} Try it\n:label: q1-ex\n:nonumber:\nDo {glue:text}`n:,` things.\n::::\n\n"
    "::::{solution} q1-ex\n:class: dropdown\nThe answer is plain.\n"
    "```python\nprint(42)\n```\nAnd that is all.\n::::\n\nAfter."
)


def test_student_edition_drops_solutions_and_leaves_an_answer_cell():
    out = markdown(EXERCISE)
    assert out == [
        ("markdown", "## Exercises"),
        ("markdown", "### Exercise: Try it\n\nDo 1,048,576 things."),
        ("code", ln.ANSWER_CELL),
        ("markdown", "After."),
    ]


def test_instructor_edition_keeps_solutions_as_markdown_and_code():
    out = markdown(EXERCISE, edition="instructor")
    assert out == [
        ("markdown", "## Exercises"),
        ("markdown", "### Exercise: Try it\n\nDo 1,048,576 things."),
        ("markdown", "> **Solution**\n>\n> The answer is plain."),
        ("code", "print(42)"),
        ("markdown", "> And that is all."),
        ("markdown", "After."),
    ]


def gated_chapter(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "# Q1 · Title\n\n::::{exercise} Try it\n:label: q1-ex\nDo it.\n::::"
            ),
            nbformat.v4.new_code_cell("setup = 1"),
            nbformat.v4.new_markdown_cell(
                "::::{solution-start} q1-ex\n:class: dropdown\n::::\n\n"
                "The secret is {glue:text}`n:,`."
            ),
            nbformat.v4.new_code_cell("print('the secret code')"),
            nbformat.v4.new_markdown_cell("::::{solution-end}\n::::\n\nAfter the solution."),
            nbformat.v4.new_code_cell("after = 2"),
        ]
    )
    path = tmp_path / "q1.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("edition", ["student", "instructor"])
def test_a_gated_solution_spans_cells_and_only_instructors_get_it(tmp_path, edition):
    nb = ln.learner_notebook(gated_chapter(tmp_path), "book/q1", converter(edition=edition))
    text = json.dumps(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code" and c.source != ln.ANSWER_CELL]
    assert "After the solution." in text and code[0] == "setup = 1" and code[-1] == "after = 2"
    if edition == "student":
        assert "secret" not in text and len(code) == 2
    else:
        assert "The secret is 1,048,576." in text and "print('the secret code')" in code
        assert "> **Solution**" in text


def test_an_unclosed_gated_solution_stops_the_conversion(tmp_path):
    path = gated_chapter(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.cells[4].source = "After the solution."
    nbformat.write(nb, path)
    with pytest.raises(ln.LearnerError, match="without its"):
        ln.learner_notebook(path, "book/q1", converter())


def test_unknown_directives_and_roles_stop_the_conversion():
    for source in (":::{figure} x.png\n:::", "```{code-cell}\n1\n```", "{eval}`1 + 1`"):
        with pytest.raises(ln.LearnerError, match="no plain-Markdown form"):
            markdown(source)


def test_the_book_address_comes_from_the_config():
    assert ln.base_url(ROOT).startswith("https://")


# -- writing the notebooks of a build --------------------------------------------------------


def small_book(tmp_path, monkeypatch):
    """A book of one chapter; what its build would give (the links, the glued values, the
    records of the execution cache) is faked, the records in ``execution``."""
    root = tmp_path / "root"
    (root / "book").mkdir(parents=True)
    chapter = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Q1 · Title\n\nThe value is {glue:text}`n:,`."),
            nbformat.v4.new_code_cell("n = 1048576"),
        ]
    )
    nbformat.write(chapter, root / "book" / "q1.ipynb")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/q1\n")
    (root / "references.bib").write_bytes((ROOT / "references.bib").read_bytes())
    html = tmp_path / "html"
    html.mkdir()
    (html / "objects.inv").write_bytes(b"the links of one build")
    execution = {"id": "1:hash:2026-01-01T00:00:00"}
    links = converter().links
    monkeypatch.setattr(ln.Links, "from_inventory", classmethod(lambda cls, path: links))
    monkeypatch.setattr(ln, "cache_records", lambda cache: execution["id"])
    monkeypatch.setattr(ln, "glue_outputs", lambda source, cache: {"n": {"text/plain": "1048576"}})
    return root, html, execution


def test_a_notebook_is_converted_again_only_when_one_of_its_inputs_changed(tmp_path, monkeypatch):
    root, html, execution = small_book(tmp_path, monkeypatch)
    out, keys = tmp_path / "out", tmp_path / "keys.json"

    def write(edition="student", folder=out, kept=keys):
        return ln.write_learner_notebooks(
            root, html, folder, edition, cache_path=tmp_path, url=BASE, keys=kept
        )

    [path] = write()
    first = path.read_text()
    assert "The value is 1,048,576." in first
    [unkept] = write(folder=tmp_path / "without_keys", kept=None)
    assert unkept.read_text() == first
    converted = []
    convert = ln.learner_notebook
    monkeypatch.setattr(
        ln, "learner_notebook", lambda *args: converted.append(args[1]) or convert(*args)
    )
    write()
    assert converted == []  # nothing changed: the notebook is the one written before
    execution["id"] = "2:hash:2026-01-02T00:00:00"  # the same code executed again
    write()
    (html / "objects.inv").write_bytes(b"the links of another build")
    write()
    path.write_text("changed by hand")
    write()
    path.unlink()
    write()
    write(edition="instructor")
    assert converted == ["book/q1"] * 5
    write(edition="instructor")
    assert len(converted) == 5
    write()  # back to the student edition: the key kept is the instructor's
    assert len(converted) == 6 and path.read_text() == first

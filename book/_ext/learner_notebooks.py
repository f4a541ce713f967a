"""Learner notebooks: each chapter as a plain notebook for Colab, Binder, a hub or a download.

A chapter's source is a MyST notebook: its prose quotes computed values with
``{glue:text}``, links the glossary with ``{term}``, cites with ``{footcite:p}``, and
keeps exercises and solutions in ``{exercise}`` / ``{solution}`` directives. Jupyter,
Colab and VS Code show all of that as raw text. This module writes the same chapter as
a notebook they read well:

* glued values are replaced by the values the book build computed (its execution cache,
  ``_build/.jupyter_cache``, read with MyST-NB's own glue code, so the numbers and their
  formatting are the book's);
* ``{term}``, ``{ref}``, ``{doc}`` become links to the published book (``html_baseurl``),
  resolved through the built book's ``objects.inv``, so an anchor exists whenever the
  book's does; citations become author-year links to the bibliography page, and
  ``{footbibliography}`` a list of the chapter's references;
* admonitions become block quotes with a bold title, exercises a heading and their text;
* the student edition drops every solution and leaves an empty cell after each exercise;
  the instructor edition keeps solutions, their prose as Markdown and their code as cells.
  A gated solution (``{solution-start}`` ... ``{solution-end}``) may span cells: everything
  between the two, code cells included, is a solution.

Code cells are copied unchanged, without outputs. Anything MyST that this module does not
know stops it with an error naming the chapter, so no raw syntax reaches a learner.

``make notebooks`` runs this file to refresh the committed student notebooks in
``notebooks/``; the Sphinx extension ``learner`` writes both editions into the built site.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import book_toc
import nbformat
import yaml

EDITIONS = ("student", "instructor")
FORMAT_VERSION = 1
# The empty cell a student notebook leaves after each exercise.
ANSWER_CELL = "# Your answer to the exercise above"

ROLE = re.compile(r"\{(?P<name>[a-z]+(?::[a-z]+)?)\}`(?P<content>[^`]+)`")
COLON_FENCE = re.compile(r"^(?P<fence>:{3,})\{(?P<name>[\w-]+)\}\s*(?P<argument>.*)$")
BACKTICK_DIRECTIVE = re.compile(r"^(?P<fence>`{3,})\{(?P<name>[\w-]+)\}\s*(?P<argument>.*)$")
BACKTICK_FENCE = re.compile(r"^(?P<fence>`{3,})")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
TARGET = re.compile(r"^\((?P<label>[^)\s]+)\)=\s*$")
EXPLICIT_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
# What must never reach a learner: MyST roles, colon fences, directive fences, targets.
RAW_MYST = re.compile(
    r"\{[a-z]+(?::[a-z]+)?\}`|^\s*:{3,}|^\s*`{3,}\{|^\([\w-]+\)=\s*$|\{glue|\{term\}"
    r"|\{footcite|\{solution|\{exercise|\{ref\}|\{doc\}|\{numref\}",
    re.M,
)


# What the converter writes itself, in each language of the book (the chapter's own text comes
# translated from the Chinese edition's catalogs, book/_ext/translations.py).
LABELS = {
    "en": {
        "solution": "Solution",
        "exercise": "Exercise",
        "exercise_heading": "Exercise: {title}",
        "note": "Note", "tip": "Tip", "warning": "Warning", "important": "Important",
        "caution": "Caution", "hint": "Hint", "seealso": "See also",
        "about": "> **About this notebook.** It is a chapter of the book "
        "[*Attention, one question at a time*]({url}), made for running. "
        "Numbers quoted in the text were computed when the book was built; when you rerun "
        "the cells, yours may differ slightly. Run the first code cell first: where "
        "`tutorial_lib` is missing (Colab), it installs it. {solutions}",
        "with_solutions": "Solutions follow each exercise (instructor edition).",
        "without_solutions": "Solutions are not included; an empty cell after each exercise "
        "is yours.",
    },
    "zh": {
        "solution": "解答",
        "exercise": "练习",
        "exercise_heading": "练习：{title}",
        "note": "注意", "tip": "提示", "warning": "警告", "important": "重要",
        "caution": "小心", "hint": "提示", "seealso": "另请参阅",
        "about": "> **关于这个 notebook**：它是《[注意力，一次一个问题]({url})》的一章，"
        "供你动手运行。正文里引用的数字是构建本书时算出来的；重新运行后，你得到的数字可能"
        "略有不同。请先运行第一个代码单元：在缺少 `tutorial_lib` 的环境（如 Colab）里，"
        "它会自动安装。代码、代码注释和输出保持英文，与英文版共用同一份代码。{solutions}",
        "with_solutions": "每道练习后附有解答（教师版）。",
        "without_solutions": "本 notebook 不含解答；每道练习后的空单元格留给你作答。",
    },
}  # fmt: skip


class LearnerError(RuntimeError):
    """The chapter uses something this converter cannot turn into plain Markdown."""


# -- what the converter reads from the built book -------------------------------------------


@dataclass
class Links:
    """Where the book's terms, labels and pages are, from its ``objects.inv``.

    Every value is a path relative to the site's root, with its anchor.
    """

    terms: dict[str, str]
    labels: dict[str, tuple[str, str]]  # label -> (path#anchor, section title)
    docs: dict[str, tuple[str, str]]  # docname -> (path, title)

    @classmethod
    def from_inventory(cls, path: Path) -> Links:
        from sphinx.util.inventory import InventoryFile

        with open(path, "rb") as stream:
            inventory = InventoryFile.load(stream, "", lambda base, uri: uri)
        terms = {name: entry[2] for name, entry in inventory.get("std:term", {}).items()}
        labels = {
            name: (entry[2], entry[3]) for name, entry in inventory.get("std:label", {}).items()
        }
        docs = {name: (entry[2], entry[3]) for name, entry in inventory.get("std:doc", {}).items()}
        return cls(terms, labels, docs)


@dataclass
class Bibliography:
    """Author-year labels and formatted entries for the keys of ``references.bib``."""

    path: Path
    _entries: dict = field(default_factory=dict, init=False)

    def __post_init__(self):
        from pybtex.database import parse_file

        self._entries = parse_file(str(self.path)).entries

    def _entry(self, key: str):
        if key not in self._entries:
            raise LearnerError(f"citation key {key!r} is not in {self.path.name}")
        return self._entries[key]

    def author_year(self, key: str) -> tuple[str, str]:
        """("Vaswani *et al.*", "2017"), as the book's author-year citations read."""
        from pybtex.backends.plaintext import Backend
        from pybtex.richtext import Text

        entry = self._entry(key)
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        # render(Backend()), not render_as("text"), which scans entry points on every call.
        names = [
            Text.from_latex(" ".join(p.prelast_names + p.last_names)).render(Backend())
            for p in people
        ]
        if not names:
            authors = entry.fields.get("title", key)
        elif len(names) == 1:
            authors = names[0]
        elif len(names) == 2:
            authors = f"{names[0]} and {names[1]}"
        else:
            authors = f"{names[0]} *et al.*"
        return authors, entry.fields.get("year", "n.d.")

    def formatted(self, keys: list[str]) -> list[str]:
        """Each entry as the book's bibliography formats it (pybtex), in Markdown."""
        from pybtex.backends.markdown import Backend
        from pybtex.style.formatting.unsrt import Style

        entries = [self._entry(key) for key in keys]
        # pybtex escapes every punctuation mark; in the middle of a line these need none.
        return [
            re.sub(r"\\([.()\-!:])", r"\1", " ".join(e.text.render(Backend()).split("\n")))
            for e in Style().format_entries(entries)
        ]


def cache_records(cache_path: Path) -> str:
    """The executions the cache holds: each record's id, code hash and time. With a chapter's
    source, they decide which execution its glued values come from (a new run of the same
    code, in another cache or a cleared one, is a new record)."""
    from jupyter_cache import get_cache

    if not cache_path.is_dir():
        raise LearnerError(f"no execution cache at {cache_path}: run `make book` first")
    records = get_cache(str(cache_path)).list_cache_records()
    return " ".join(sorted(f"{r.pk}:{r.hashkey}:{r.created.isoformat()}" for r in records))


def glue_outputs(source: Path, cache_path: Path) -> dict[str, dict]:
    """The glued values of one chapter, from the book build's execution cache.

    Raises LearnerError when the cache holds no execution of the chapter as it is now.
    """
    from jupyter_cache import get_cache
    from myst_nb.ext.glue import extract_glue_data_cell

    if not cache_path.is_dir():
        raise LearnerError(f"no execution cache at {cache_path}: run `make book` first")
    notebook = nbformat.read(source, as_version=4)
    try:
        _, executed = get_cache(str(cache_path)).merge_match_into_notebook(notebook)
    except KeyError:
        raise LearnerError(
            f"{source.name} has changed since the book was built (no matching execution "
            "in the cache): run `make book` first"
        ) from None
    values = {}
    for cell in executed.cells:
        if cell.cell_type == "code":
            for key, output in extract_glue_data_cell(cell):
                values[key] = output["data"]
    return values


# -- the converter ------------------------------------------------------------------------------


# A glue renderer takes (key, format spec, kind) and returns the Markdown to put in the text.
GlueRenderer = Callable[[str, str, str], str]


def glue_renderer(values: dict[str, dict]) -> GlueRenderer:
    """Render glued values exactly as MyST-NB's ``{glue:text}`` and ``{glue:md}`` roles do."""
    from myst_nb.core.variables import format_plain_text

    def render(key: str, spec: str, kind: str) -> str:
        if key not in values:
            raise LearnerError(f"no glued value named {key!r}")
        data = values[key]
        if kind == "md":
            return data["text/markdown"]
        return escape_markdown(format_plain_text(data["text/plain"], spec))

    return render


def escape_markdown(text: str) -> str:
    """Plain text made safe inside Markdown prose and tables."""
    return re.sub(r"([\\`*_\[\]<>|$#])", r"\\\1", text)


@dataclass
class Converter:
    """Turns one chapter's MyST Markdown into plain Markdown and code cells."""

    base_url: str
    links: Links
    bibliography: Bibliography
    glue: GlueRenderer
    edition: str = "student"
    docname: str = ""
    language: str = "en"
    cited: list[str] = field(default_factory=list)
    # Inside a gated solution ({solution-start} ... {solution-end}), which may span cells.
    gated: bool = False

    def __post_init__(self):
        if self.edition not in EDITIONS:
            raise ValueError(f"edition must be one of {EDITIONS}; got {self.edition!r}")
        if not self.base_url.endswith("/"):
            self.base_url += "/"

    def label(self, name: str) -> str:
        return LABELS[self.language][name]

    # -- inline --------------------------------------------------------------------------

    def url(self, path: str) -> str:
        return self.base_url + path

    def inline(self, text: str) -> str:
        """Replace every MyST role in a stretch of prose (not inside code fences)."""
        return ROLE.sub(self._role, text)

    def _role(self, match: re.Match) -> str:
        name, content = match.group("name"), match.group("content")
        if name in ("glue:text", "glue:md", "glue"):
            key, _, spec = content.partition(":")
            kind = "md" if name == "glue:md" else "text"
            return (
                self.inline(self.glue(key, spec, kind))
                if kind == "md"
                else self.glue(key, spec, kind)
            )
        if name == "term":
            text, target = self._split(content)
            path = self.links.terms.get(target) or next(
                (p for t, p in self.links.terms.items() if t.lower() == target.lower()), None
            )
            if path is None:
                raise LearnerError(f"{self.docname}: no glossary term {target!r}")
            return f"[{text}]({self.url(path)})"
        if name in ("ref", "numref"):
            text, target = self._split(content)
            if target not in self.links.labels:
                raise LearnerError(f"{self.docname}: no label {target!r}")
            path, title = self.links.labels[target]
            shown = text if "<" in content else title
            return f"[{shown}]({self.url(path)})"
        if name == "doc":
            text, target = self._split(content)
            docname = self._docname(target)
            if docname not in self.links.docs:
                raise LearnerError(f"{self.docname}: no page {target!r}")
            path, title = self.links.docs[docname]
            return f"[{text if '<' in content else title}]({self.url(path)})"
        if name in ("footcite:t", "footcite:p", "cite:t", "cite:p"):
            keys = [k.strip() for k in content.split(",")]
            for key in keys:
                if key not in self.cited:
                    self.cited.append(key)
            parts = []
            for key in keys:
                authors, year = self.bibliography.author_year(key)
                link = self.bibliography_url(key)
                text = f"{authors} ({year})" if name.endswith(":t") else f"{authors}, {year}"
                parts.append(f"[{text}]({link})")
            return "; ".join(parts) if name.endswith(":t") else f"({'; '.join(parts)})"
        raise LearnerError(f"{self.docname}: no plain-Markdown form for the role {{{name}}}")

    def bibliography_url(self, key: str) -> str:
        from docutils.nodes import make_id

        path = self.links.docs.get("book/bibliography", ("book/bibliography.html", ""))[0]
        # The bibliography page's entries carry ids "cite-all-<key>" (bibtex_cite_id).
        return self.url(f"{path}#{make_id('cite-all-' + key)}")

    @staticmethod
    def _split(content: str) -> tuple[str, str]:
        explicit = EXPLICIT_TARGET.match(content)
        if explicit:
            return explicit.group("text"), explicit.group("target")
        return content, content

    def _docname(self, target: str) -> str:
        if target.startswith("/"):
            return target.lstrip("/")
        folder = self.docname.rpartition("/")[0]
        return f"{folder}/{target}" if folder else target

    # -- blocks --------------------------------------------------------------------------

    def markdown(self, source: str) -> list[nbformat.NotebookNode]:
        """One MyST Markdown cell as plain cells (an exercise may split it into several)."""
        cells: list[nbformat.NotebookNode] = []
        pieces: list[str] = []  # finished Markdown
        prose: list[str] = []  # source lines whose roles are still to replace

        def hidden() -> bool:  # a gated solution's text, in the student edition
            return self.gated and self.edition == "student"

        def end_prose():
            if prose and hidden():
                prose.clear()  # dropped before its roles are read: its citations do not count
            if prose:
                # Roles may run over a line break, so replace them in the whole stretch.
                pieces.append(self.inline("\n".join(prose)))
                prose.clear()

        def flush():
            end_prose()
            if hidden():
                pieces.clear()
            joined = tidy("\n".join(pieces))
            if joined:
                check_plain(joined, self.docname)
                cells.append(nbformat.v4.new_markdown_cell(joined))
            pieces.clear()

        lines = source.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if TARGET.match(line):
                i += 1
                continue
            found = COLON_FENCE.match(line) or BACKTICK_DIRECTIVE.match(line)
            if found:
                end_prose()  # before the directive: citations above it are then counted
                end = self._closing(lines, i, found.group("fence"))
                if found.group("name") in ("solution-start", "solution-end"):
                    flush()
                    opening = found.group("name") == "solution-start"
                    if opening == self.gated:
                        raise LearnerError(f"{self.docname}: unpaired {{{found.group('name')}}}")
                    self.gated = opening
                    if opening and self.edition == "instructor":
                        cells.append(
                            nbformat.v4.new_markdown_cell(f"> **{self.label('solution')}**")
                        )
                    i = end + 1
                    continue
                options, body = self._options(lines[i + 1 : end])
                block = self._directive(
                    found.group("name"), found.group("argument").strip(), options, body
                )
                i = end + 1
                if isinstance(block, str):
                    pieces.append(block)
                elif block:
                    flush()
                    cells.extend(block)
                continue
            fence = BACKTICK_FENCE.match(line)
            if fence:
                # A code block in the prose: copied as it is, roles and all.
                end = self._closing(lines, i, fence.group("fence"))
                end_prose()
                pieces.append("\n".join(lines[i : end + 1]))
                i = end + 1
                continue
            prose.append(line)
            i += 1
        flush()
        return cells

    def _closing(self, lines: list[str], start: int, fence: str) -> int:
        char = fence[0]
        for j in range(start + 1, len(lines)):
            stripped = lines[j].strip()
            if stripped == fence or (
                char == "`" and stripped.startswith(fence) and set(stripped) == {"`"}
            ):
                return j
        raise LearnerError(f"{self.docname}: unclosed {fence} at line {start + 1} of a cell")

    @staticmethod
    def _options(body: list[str]) -> tuple[dict[str, str], list[str]]:
        options = {}
        while body and OPTION.match(body[0]):
            found = OPTION.match(body[0])
            options[found.group("key")] = found.group("value")
            body = body[1:]
        return options, body

    def _directive(self, name, argument, options, body):
        if name in ("admonition", "dropdown"):  # a notebook has no collapsed box: a quote
            return self._quote(f"**{self.inline(argument)}**", self._plain(body))
        if name in ("note", "tip", "warning", "important", "caution", "hint", "seealso"):
            return self._quote(f"**{self.label(name)}**", self._plain(body))
        if name == "exercise":
            title = self.inline(argument)
            heading = self.label("exercise_heading").format(title=title) if title else ""
            heading = heading or self.label("exercise")
            cells = [nbformat.v4.new_markdown_cell(tidy(f"### {heading}\n\n{self._plain(body)}"))]
            if self.edition == "student":
                cells.append(nbformat.v4.new_code_cell(ANSWER_CELL))
            return cells
        if name == "solution":
            return self._solution(body) if self.edition == "instructor" else None
        if name == "footbibliography":
            if not self.cited:
                raise LearnerError(f"{self.docname}: a footbibliography with nothing cited")
            entries = self.bibliography.formatted(self.cited)
            return "\n".join(f"* {entry}" for entry in entries)
        raise LearnerError(f"{self.docname}: no plain-Markdown form for the directive {{{name}}}")

    def _plain(self, body: list[str]) -> str:
        """The Markdown of a directive's body (which may hold directives itself)."""
        parts = []
        for cell in self.markdown("\n".join(body)):
            if cell.cell_type != "markdown":
                raise LearnerError(f"{self.docname}: an exercise or solution inside a block")
            parts.append(cell.source)
        return "\n\n".join(parts)

    @staticmethod
    def _quote(title: str, body: str) -> str:
        lines = ([title, ""] if title else []) + body.split("\n")
        return "\n" + "\n".join(f"> {line}".rstrip() for line in lines) + "\n"

    def _solution(self, body: list[str]) -> list[nbformat.NotebookNode]:
        """A solution: prose as quoted Markdown cells, each Python fence as a code cell."""
        cells: list[nbformat.NotebookNode] = []
        prose: list[str] = []

        def flush():
            text = self._plain(prose).strip()
            prose.clear()
            if text:
                # The first stretch carries the title; a stretch after code continues it.
                quoted = self._quote("" if cells else f"**{self.label('solution')}**", text)
                cells.append(nbformat.v4.new_markdown_cell(tidy(quoted)))

        i = 0
        while i < len(body):
            fence = BACKTICK_FENCE.match(body[i])
            language = body[i][len(fence.group("fence")) :].strip() if fence else ""
            if fence and language in ("python", "python3", "ipython3", "ipython"):
                end = self._closing(body, i, fence.group("fence"))
                flush()
                if not cells:
                    cells.append(nbformat.v4.new_markdown_cell(f"> **{self.label('solution')}**"))
                cells.append(nbformat.v4.new_code_cell("\n".join(body[i + 1 : end])))
                i = end + 1
                continue
            prose.append(body[i])
            i += 1
        flush()
        return cells


def tidy(text: str) -> str:
    """Markdown without leading, trailing or doubled blank lines (outside code fences)."""
    parts = re.split(r"(```.*?```)", text.strip("\n"), flags=re.S)
    return "".join(p if p.startswith("```") else re.sub(r"\n{3,}", "\n\n", p) for p in parts)


def check_plain(text: str, where: str) -> None:
    found = RAW_MYST.search(re.sub(r"```.*?```", "", text, flags=re.S))
    if found:
        raise LearnerError(f"{where}: MyST syntax left in a learner notebook: {found.group(0)!r}")


# -- a whole notebook ---------------------------------------------------------------------------


def about_cell(chapter_url: str, edition: str, language: str = "en") -> nbformat.NotebookNode:
    labels = LABELS[language]
    solutions = labels["with_solutions" if edition == "instructor" else "without_solutions"]
    return nbformat.v4.new_markdown_cell(
        labels["about"].format(url=chapter_url, solutions=solutions)
    )


def learner_notebook(
    source: Path, docname: str, converter: Converter, messages: dict[str, str] | None = None
) -> nbformat.NotebookNode:
    """The learner notebook of one chapter (``converter`` fixes the edition and the links;
    ``messages``, a translation of the chapter's text, its language)."""
    notebook = nbformat.read(source, as_version=4)
    if messages:
        import translations

        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                cell.source = translations.translate_markdown(cell.source, messages)
    converter.docname = docname
    converter.cited = []
    converter.gated = False
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cells.extend(converter.markdown(cell.source))
        elif converter.gated and converter.edition == "student":
            continue  # a gated solution's code: instructors only
        elif cell.cell_type == "code":
            tags = cell.metadata.get("tags", [])
            new = nbformat.v4.new_code_cell(cell.source)
            if tags:
                new.metadata["tags"] = list(tags)
            cells.append(new)
        else:
            cells.append(cell)
    if converter.gated:
        raise LearnerError(f"{docname}: a {{solution-start}} without its {{solution-end}}")
    page = converter.links.docs.get(docname, (f"{docname}.html", ""))[0]
    # The note goes right under the title, which leads the chapter's first cell.
    title, _, rest = cells[0].source.partition("\n\n")
    if cells[0].cell_type != "markdown" or not title.startswith("# "):
        raise LearnerError(f"{docname}: a chapter starts with its title")
    cells[0].source = title
    more = [nbformat.v4.new_markdown_cell(rest)] if rest.strip() else []
    about = about_cell(converter.url(page), converter.edition, converter.language)
    cells[1:1] = [about, *more]
    for index, cell in enumerate(cells):
        # Ids by position: a notebook made from the same source is the same file.
        cell.id = f"cell-{index:03d}"
    learner = nbformat.v4.new_notebook(cells=cells)
    learner.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "learner_notebook": {
            "source": source.name,
            "edition": converter.edition,
            "format": FORMAT_VERSION,
        },
    }
    if converter.language != "en":
        learner.metadata["learner_notebook"]["language"] = converter.language
    nbformat.validate(learner)
    return learner


def dumps(notebook: nbformat.NotebookNode) -> str:
    return json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


# -- the book: chapters, configuration, output ---------------------------------------------------


def chapters(root: Path) -> list[tuple[str, Path]]:
    """(docname, path) of every notebook in the table of contents, in order."""
    return [(docname, root / f"{docname}.ipynb") for docname in book_toc.chapter_docnames(root)]


def base_url(root: Path, language: str = "en") -> str:
    """The published book's address: ``sphinx.config.html_baseurl`` in ``_config.yml`` (the
    Chinese edition's is its folder ``zh/`` there)."""
    import translations

    config = yaml.safe_load((root / "_config.yml").read_text())
    url = config.get("sphinx", {}).get("config", {}).get("html_baseurl", "")
    if not url.startswith("https://"):
        raise LearnerError("_config.yml needs sphinx.config.html_baseurl (the book's address)")
    return url if language == "en" else url.rstrip("/") + f"/{translations.SITE_FOLDER}/"


def translations_catalog(root: Path, docname: str) -> Path:
    """The committed catalog that translates one chapter."""
    import translations

    path = translations.catalog_paths(root).get(docname)
    if path is None:
        raise LearnerError(f"no catalog for {docname}: run `make pot`")
    return path


def chapter_messages(root: Path, docname: str) -> dict[str, str]:
    """The translated messages of one chapter's committed catalog (none fuzzy)."""
    import translations

    path = translations_catalog(root, docname)
    return {m.id: m.string for m in translations.read_po(path) if translations.translated(m)}


def _sha256(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        part = part.encode() if isinstance(part, str) else part
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def _converter_key(
    root: Path, inventory: Path, cache_path: Path, edition: str, url: str, language: str
) -> str:
    """What every learner notebook of an edition depends on besides its chapter: the links
    (``objects.inv``), the bibliography, the edition, language and address, and the code that
    converts (this module, the translation of the text, and the packages they call; the
    execution cache's, which matches a chapter to its execution)."""
    here = Path(__file__).parent
    packages = ("myst-nb", "jupyter-cache", "nbformat", "pybtex", "sphinx", "docutils", "babel")
    versions = [importlib.metadata.version(package) for package in packages]
    return _sha256(
        inventory.read_bytes(),
        cache_records(cache_path),  # with the chapter's source: its glued values
        (root / "references.bib").read_bytes(),
        edition,
        url,
        language,
        (here / "learner_notebooks.py").read_bytes(),
        (here / "translations.py").read_bytes(),
        *versions,
    )


def write_learner_notebooks(
    root: Path,
    html_dir: Path,
    out_dir: Path,
    edition: str,
    cache_path: Path | None = None,
    url: str | None = None,
    language: str = "en",
    keys: Path | None = None,
) -> list[Path]:
    """Write the learner notebook of every chapter into ``out_dir``; return their paths.

    ``language`` "zh": the Chinese notebooks, their text translated by the committed catalogs
    (``html_dir`` is then the Chinese edition's site, whose pages the links lead to).

    ``keys``: a JSON file that keeps, for each notebook written, the key of its inputs and a
    hash of the file. A notebook whose inputs have the key kept, and whose file is the one
    written then, is left as it is: converting every chapter again took most of a rebuild
    after a prose edit, and gave the same bytes."""
    inventory = html_dir / "objects.inv"
    if not inventory.is_file():
        raise LearnerError(f"no built book at {html_dir}: run `make book` first")
    cache_path = cache_path or root / "_build" / ".jupyter_cache"
    url = url or base_url(root, language)
    common = _converter_key(root, inventory, cache_path, edition, url, language)
    kept = json.loads(keys.read_text(encoding="utf-8")) if keys and keys.is_file() else {}
    links = bibliography = None  # read when a notebook has to be written
    written = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for docname, source in chapters(root):
        target = out_dir / source.name
        catalog = translations_catalog(root, docname) if language == "zh" else None
        key = _sha256(
            common,
            docname,
            source.read_bytes(),
            catalog.read_bytes() if catalog else b"",
        )
        last = kept.get(str(target.resolve()), {})
        if (
            last.get("key") == key
            and target.is_file()
            and _sha256(target.read_bytes()) == last.get("file")
        ):
            written.append(target)
            continue
        if links is None:
            links = Links.from_inventory(inventory)
            bibliography = Bibliography(root / "references.bib")
        converter = Converter(
            base_url=url,
            links=links,
            bibliography=bibliography,
            glue=glue_renderer(glue_outputs(source, cache_path)),
            edition=edition,
            language=language,
        )
        messages = chapter_messages(root, docname) if language == "zh" else None
        target.write_text(dumps(learner_notebook(source, docname, converter, messages)))
        kept[str(target.resolve())] = {"key": key, "file": _sha256(target.read_bytes())}
        written.append(target)
    if keys:
        keys.parent.mkdir(parents=True, exist_ok=True)
        keys.write_text(json.dumps(kept, indent=1, sort_keys=True), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--html", type=Path, help="the built book (default: _build/html)")
    parser.add_argument("--out", type=Path, help="where to write (default: notebooks/)")
    parser.add_argument("--edition", choices=EDITIONS, default="student")
    parser.add_argument(
        "--language", choices=("en", "zh", "both"), default="both",
        help="English into OUT, Chinese into OUT/zh (default: both)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    root = args.root.resolve()
    html = args.html or root / "_build" / "html"
    out = args.out or root / "notebooks"
    languages = ("en", "zh") if args.language == "both" else (args.language,)
    written = []
    try:
        for language in languages:
            folder = "" if language == "en" else "zh"
            written += write_learner_notebooks(
                root, html / folder, out / folder, args.edition, language=language
            )
    except LearnerError as error:
        print(f"make notebooks: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path.relative_to(root) if path.is_relative_to(root) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

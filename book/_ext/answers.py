"""All the answers on one page: every chapter's "What to remember", gathered at build time.

Each chapter keeps its answer in one Markdown cell that starts with the label line
``(<prefix>-remember)=`` and the heading ``## What to remember``, and holds nothing else.
The ``{answers}`` directive (``book/answers.md``) reads that cell from every chapter of
``_toc.yml`` (``book_toc``), in the table's order, and sets it under the chapter's title, its
question in English and Chinese, with a link to the chapter::

    ```{answers}
    ```

So the page is made from the chapters and cannot drift from them; it is read again whenever
a chapter changes. A chapter without the cell makes the build warn (``-W`` fails), and so
does a cell that would not stand on its own page: glue (its numbers live in the chapter's
kernel), footnote citations (their footnotes are the chapter's) or a heading of its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import book_toc
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

LABEL = re.compile(r"^\((?P<prefix>[\w-]+)-remember\)=\s*$")
HEADING = "## What to remember"
# What the copied section may not hold: it has to mean the same on the answers page.
NOT_PORTABLE = {
    "a glue role": re.compile(r"\{glue(:\w+)?\}"),
    "a footnote citation": re.compile(r"\{footcite(:\w+)?\}|\[\^"),
    "a heading of its own": re.compile(r"^#{1,6} ", re.M),
}


@dataclass
class Answer:
    """One chapter's answer: where it comes from and what it says."""

    docname: str  # book/q0_lookup
    prefix: str  # q0, from the label (q0-remember)
    title: str  # the chapter's title, its question: "Q0 · What does attention do? (…)"
    body: str  # the section's Markdown, without the label and the heading

    @property
    def name(self) -> str:
        """The chapter's short name, as its title starts ("Q3a · …" -> "Q3a")."""
        head, dot, _ = self.title.partition(" · ")
        return head if dot else self.prefix.upper()


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def chapter_title(notebook: dict) -> str | None:
    """The text of the chapter's one ``# `` title, from its first Markdown cell that has one."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            found = re.search(r"^# (.+)$", _source(cell), re.M)
            if found:
                return found.group(1).strip()
    return None


def read_answer(notebook: dict, docname: str) -> Answer:
    """The chapter's answer; ``ValueError`` says what is missing or wrong, in the chapter's
    terms, so the build's warning tells its author what to fix."""
    found = []
    for cell in notebook.get("cells", []):
        lines = _source(cell).strip().splitlines()
        if cell.get("cell_type") == "markdown" and lines and LABEL.match(lines[0].strip()):
            found.append(lines)
    if not found:
        raise ValueError(
            f"{docname} has no 'What to remember' cell: one Markdown cell that starts with "
            f"'(<prefix>-remember)=' and '{HEADING}' and holds only that section"
        )
    if len(found) > 1:
        raise ValueError(f"{docname} has {len(found)} '(…-remember)=' cells; it needs one")
    lines = found[0]
    prefix = LABEL.match(lines[0].strip()).group("prefix")
    rest = list(lines[1:])
    while rest and not rest[0].strip():
        rest.pop(0)
    if not rest or rest[0].strip() != HEADING:
        raise ValueError(f"{docname}: the line after '({prefix}-remember)=' must be '{HEADING}'")
    body = "\n".join(rest[1:]).strip()
    if not body:
        raise ValueError(f"{docname}: 'What to remember' is empty")
    for what, pattern in NOT_PORTABLE.items():
        if pattern.search(body):
            raise ValueError(
                f"{docname}: 'What to remember' holds {what}, which means nothing on the "
                "answers page; the section must stand on its own"
            )
    title = chapter_title(notebook)
    if title is None:
        raise ValueError(f"{docname} has no '# ' title")
    return Answer(docname, prefix, title, body)


def chapter_answers(root: Path) -> list[tuple[str, Path, Answer | ValueError]]:
    """Every chapter of ``_toc.yml`` under ``root``, in order: its docname, its notebook, and
    its answer or the error that says why there is none."""
    found = []
    for docname in book_toc.chapter_docnames(root):
        path = root / f"{docname}.ipynb"
        try:
            answer = read_answer(json.loads(path.read_text(encoding="utf-8")), docname)
        except ValueError as error:
            answer = error
        found.append((docname, path, answer))
    return found


class AnswersDirective(SphinxDirective):
    """``{answers}``: one section per chapter, its title, its answer, a link to it."""

    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        sections = []
        for _, path, answer in chapter_answers(root):
            self.env.note_dependency(str(path))
            if isinstance(answer, ValueError):
                logger.warning(
                    str(answer), location=(self.env.docname, self.lineno), type="answers"
                )
                continue
            sections.append(self._section(answer, path))
        return sections

    def _section(self, answer: Answer, path: Path) -> nodes.section:
        section = nodes.section(ids=[f"answer-{answer.prefix}"])
        title, messages = self.state.inline_text(answer.title, self.lineno)
        heading = nodes.title(answer.title, "", *title)
        # With a source, the Chinese edition translates it (with the chapter's own title).
        heading.source, heading.line = str(path), 1
        section += heading
        section += messages
        body = answer.body + f"\n\n{{doc}}`Read chapter {answer.name} → </{answer.docname}>`"
        self.state.nested_parse(StringList(body.splitlines(), source=str(path)), 0, section)
        return section


def setup(app):
    app.add_directive("answers", AnswersDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

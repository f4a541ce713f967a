"""The main line of a built chapter: the argument a student reads top to bottom.

It is the article's text without what a reader opens on purpose or reads on the side:
dropdowns and hidden cells, exercises and solutions, code cells and their outputs, tables,
figures (their captions stay), explorers, footnotes and the references. Admonitions and
display math stay. On it we count words and glued numbers (MyST-NB's ``span.pasted-text``
whose text holds a digit): the figures issue 21 sets bounds on.

    .venv/bin/python -m tests.built.mainline          # a table for every built chapter
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import book_toc
from bs4 import BeautifulSoup, Tag

# Elements a reader opens or reads on the side: never part of the argument.
OFF_THE_LINE = [
    "details",  # dropdowns (sphinx-design, togglebutton's hidden cells)
    ".dropdown",  # admonitions with :class: dropdown
    ".toggle-hidden",
    "div.cell",  # code cells and their outputs
    ".exercise",
    ".solution",
    "table",
    "div.explorer",
    "aside.footnote-list",
    "a.footnote-reference",
    "a.headerlink",
    "section#references",
]
HAS_DIGIT = re.compile(r"\d")
# A sentence ends at . ! ? followed by a space or the end (decimals like 0.9 do not).
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


@dataclass
class MainLine:
    words: int
    glued_numbers: int
    remember_sentences: int | None  # None: the chapter has no "What to remember"
    remember_numbers: int | None
    remember_at: float | None  # where the section starts, as a fraction of the page's words

    @property
    def glued_per_1000(self) -> float:
        return 1000 * self.glued_numbers / max(self.words, 1)


def article(html: str) -> Tag:
    soup = BeautifulSoup(html, "html.parser")
    found = soup.select_one("article.bd-article")
    if found is None:
        raise ValueError("no <article class='bd-article'>: is this a page of the built book?")
    return found


def strip_off_the_line(root: Tag) -> Tag:
    for selector in OFF_THE_LINE:
        for element in root.select(selector):
            element.decompose()
    for figure in root.select("figure"):
        captions = [c.extract() for c in figure.select("figcaption")]
        figure.replace_with(*captions) if captions else figure.decompose()
    return root


def text_of(root: Tag) -> str:
    return " ".join(root.get_text(" ").split())


def remember_section(root: Tag) -> Tag | None:
    return root.select_one("section#what-to-remember")


def measure(html: str) -> MainLine:
    page = article(html)
    # Where "What to remember" starts, as a share of all the page's words (code included).
    section = remember_section(page)
    at = None
    if section is not None:
        marker = "\u2063remember\u2063"
        section.insert(0, marker)
        before = text_of(page).split(marker)[0]
        at = len(before.split()) / max(len(text_of(page).split()), 1)
        section.contents[0].extract()
    line = strip_off_the_line(page)
    glued = [s for s in line.select("span.pasted-text") if HAS_DIGIT.search(s.get_text())]
    words = len(text_of(line).split())
    sentences = numbers = None
    section = remember_section(line)
    if section is not None:
        heading = section.find(re.compile("^h[1-6]$"))
        if heading is not None:
            heading.extract()
        for math in section.select(".math"):
            math.replace_with("x")
        remember = text_of(section)
        sentences = len(SENTENCE_END.findall(remember))
        # Chapter names (Q2) are names, not numbers.
        numbers = len(re.findall(r"(?<![\w.])(?<!Q)\d[\d,.]*", remember))
    return MainLine(words, len(glued), sentences, numbers, at)


def chapters(html_root: Path) -> list[Path]:
    """The built chapter pages, in the order of _toc.yml."""
    return [html_root / f"{docname}.html" for docname in book_toc.chapter_docnames()]


def main(html_root: Path) -> None:
    print(f"{'chapter':32} {'words':>6} {'glued':>6} {'/1000':>6} {'remember':>9} {'at':>5}")
    for path in chapters(html_root):
        m = measure(path.read_text())
        remember = (
            "-"
            if m.remember_sentences is None
            else f"{m.remember_sentences}s {m.remember_numbers}n"
        )
        at = "-" if m.remember_at is None else f"{m.remember_at:.2f}"
        print(
            f"{path.stem:32} {m.words:6d} {m.glued_numbers:6d} {m.glued_per_1000:6.1f} "
            f"{remember:>9} {at:>5}"
        )


if __name__ == "__main__":
    root = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[2] / "_build" / "html"
    )
    main(root)

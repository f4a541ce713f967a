"""The answers page says what the chapters say: one section per chapter, in the order of
_toc.yml, each holding the words of the chapter's own "What to remember" and a link to it."""

import functools

import pytest
from bs4 import BeautifulSoup

from .conftest import HTML, chapter_pages
from .mainline import article, strip_off_the_line, text_of

ANSWERS = HTML / "book" / "answers.html"


@functools.cache
def answer_sections():
    page = article(ANSWERS.read_text())  # parsed once; the tests below only read copies
    return page.select("section[id^='answer-']")


def without_heading(section):
    """The section's prose: no heading, and none of the code cells that follow it on the page."""
    section = strip_off_the_line(BeautifulSoup(str(section), "html.parser").section)
    for element in section.select("h1, h2, h3"):
        element.decompose()
    return section


def test_every_chapter_has_its_answer_in_the_order_of_the_table_of_contents(html_root):
    linked = [s.select("p a.reference.internal")[-1]["href"] for s in answer_sections()]
    assert linked == [page.name for page in chapter_pages()]


@pytest.mark.parametrize("page", chapter_pages(), ids=lambda p: p.stem)
def test_the_answer_is_the_chapters_own_words(html_root, page):
    remember = article((HTML / page).read_text()).select_one("section#what-to-remember")
    assert remember is not None, f"{page.stem} has no 'What to remember'"
    answer = next(
        s for s in answer_sections() if s.select("p a.reference.internal")[-1]["href"] == page.name
    )
    answer = without_heading(answer)
    answer.select("p")[-1].decompose()  # the link to the chapter
    assert text_of(answer) == text_of(without_heading(remember))

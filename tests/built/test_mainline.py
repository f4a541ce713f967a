"""Each chapter's argument reads top to bottom (issue 21's bounds, stated in README).

A first-year student follows the main line (see ``mainline.py`` for what it leaves out):
at most 4,500 words, at most 8 glued numbers per 1,000 of them, and a "What to remember" of
at most five sentences, with at most one number, in the first fifth of the page.
"""

import pytest

from .conftest import HTML
from .mainline import chapters, measure

MAX_WORDS = 4500
MAX_GLUED_PER_1000 = 8
MAX_REMEMBER_SENTENCES = 5
REMEMBER_WITHIN = 0.2

PAGES = chapters(HTML)


def test_there_are_chapters_to_measure(html_root):
    assert PAGES, "no chapter pages in _build/html/book"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_main_line_is_short_and_light_on_numbers(page):
    m = measure(page.read_text())
    assert m.words <= MAX_WORDS, f"{page.stem}: main line of {m.words} words"
    assert m.glued_per_1000 <= MAX_GLUED_PER_1000, (
        f"{page.stem}: {m.glued_numbers} glued numbers in {m.words} words "
        f"({m.glued_per_1000:.1f} per 1,000): move the evidence into a dropdown"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_what_to_remember_comes_first_and_is_short(page):
    m = measure(page.read_text())
    assert m.remember_sentences is not None, f"{page.stem} has no 'What to remember' section"
    assert 1 <= m.remember_sentences <= MAX_REMEMBER_SENTENCES, (
        f"{page.stem}: 'What to remember' has {m.remember_sentences} sentences"
    )
    assert m.remember_numbers <= 1, f"{page.stem}: {m.remember_numbers} numbers in it"
    assert m.remember_at <= REMEMBER_WITHIN, (
        f"{page.stem}: 'What to remember' starts at {m.remember_at:.0%} of the page"
    )

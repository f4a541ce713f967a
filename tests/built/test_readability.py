"""Readable on every screen, and light: measured in Chromium on every built page.

Budget (first load, every request), sharp figures (SVG, or two pixels per CSS pixel),
text size in explorers and figures, contrast of every output in light and dark mode,
display equations that fit their column, Chinese text in code, plain math in search.
"""

import re

import pytest

from .conftest import browsed_pages, chapter_pages
from .pageload import (
    BUDGET_MB,
    CONTRAST_JS,
    EQUATIONS_JS,
    EXPLORER_TEXT_JS,
    FIGURES_JS,
    MIN_TEXT_PX,
)

PAGES = browsed_pages()
CHAPTERS = chapter_pages()
PHONE_MIN_TEXT_PX = 8.5  # a figure on a phone: shown no narrower than 600 px, scrolled sideways


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_first_load_is_within_budget(open_page, page_path):
    measured = open_page(page_path)
    assert measured.total_mb <= BUDGET_MB, (
        f"{measured.total_mb:.2f} MB in {len(measured.requests)} requests; "
        f"largest: {measured.largest()}"
    )


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_figures_are_sharp_on_a_2x_screen(open_page, page_path):
    """Two image pixels per CSS pixel: the comparison does not depend on the screen's own."""
    page = open_page(page_path).page
    blurry = [
        f"{f['src']}: {f['natural']} px shown at {f['displayed']} CSS px"
        for f in page.evaluate(FIGURES_JS)
        if not f["svg"] and f["natural"] < 2 * f["displayed"]
    ]
    assert blurry == [], f"raster figures below 2x: {blurry}"


@pytest.mark.parametrize("view,least", [("desktop", MIN_TEXT_PX), ("phone", PHONE_MIN_TEXT_PX)])
@pytest.mark.parametrize("page_path", CHAPTERS, ids=str)
def test_figure_text_is_large_enough(open_page, page_path, view, least):
    page = open_page(page_path, view).page
    small = [
        f"{f['src']}: {f['smallest']:.1f} px"
        for f in page.evaluate(FIGURES_JS)
        if f["smallest"] is not None and f["smallest"] < least
    ]
    assert small == [], f"figures with text below {least} px ({view}): {small}"


@pytest.mark.parametrize("view", ["desktop", "phone"])
@pytest.mark.parametrize("page_path", CHAPTERS, ids=str)
def test_explorer_text_is_large_enough_in_every_frame(open_page, page_path, view):
    page = open_page(page_path, view).page
    explorers = page.evaluate(EXPLORER_TEXT_JS)
    assert explorers, "a chapter without an explorer"
    small = [e for e in explorers if e["smallest"] < MIN_TEXT_PX]
    assert small == [], f"explorer text below {MIN_TEXT_PX} px ({view}): {small}"


@pytest.mark.parametrize("view", ["desktop", "dark"])
@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_outputs_meet_wcag_aa_contrast(open_page, page_path, view):
    page = open_page(page_path, view).page
    scheme = "dark" if view == "dark" else "light"
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    bad = page.evaluate(CONTRAST_JS)
    assert bad == [], f"output text below 4.5:1 in {scheme} mode: {bad[:8]}"


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_display_equations_fit_the_column_at_1280(open_page, page_path):
    page = open_page(page_path).page
    wide = page.evaluate(EQUATIONS_JS)
    assert wide == [], "display equations wider than their column: " + "; ".join(
        f"{e['width']} px in {e['column']} px: {e['tex']}" for e in wide
    )


def test_wide_equations_scroll_with_a_cue_on_a_phone(open_page):
    """On a phone an equation may be wider than the screen: it scrolls in its own box."""
    page = open_page(CHAPTERS[0], "phone").page
    styles = page.evaluate(
        """[...document.querySelectorAll('mjx-container[display="true"]')].map(m => {
            const s = getComputedStyle(m);
            return [s.overflowX, s.backgroundImage.includes('gradient')];
        })"""
    )
    assert styles and all(s == ["auto", True] for s in styles), styles


@pytest.mark.parametrize("page_path", CHAPTERS, ids=str)
def test_chinese_in_code_has_a_font_served_by_the_site(open_page, page_path):
    page = open_page(page_path).page
    found = page.evaluate(
        """() => [...document.querySelectorAll('pre, code')]
             .map(e => [getComputedStyle(e).fontFamily, e.textContent])
             .filter(([f, t]) => /[\\u4e00-\\u9fff]/.test(t))"""
    )
    for family, text in found:
        assert "Noto Sans SC" in family, family
        chinese = "".join(c for c in text if "\u4e00" <= c <= "\u9fff")
        assert page.evaluate(
            "([font, text]) => document.fonts.check(font, text)", ['16px "Noto Sans SC"', chinese]
        ), chinese


def test_search_shows_no_raw_tex(open_page):
    """Titles and snippets of search results read math as text, not TeX source."""
    page = open_page("search.html?q=embeddings").page
    page.wait_for_function(
        "document.querySelectorAll('#search-results li p.context').length > 0", timeout=20000
    )
    page.wait_for_load_state("networkidle")
    text = page.evaluate("document.querySelector('#search-results').innerText")
    assert not re.search(r"\\[A-Za-z]+|_\{", text), re.findall(r".{30}\\[A-Za-z]+.{10}", text)

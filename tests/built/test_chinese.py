"""The Chinese edition (_build/html/zh): its pages, once, in files and in Chromium.

The numbers are shared with the English pages (one execution), so the English suite is not run
twice: these tests check what translation can break. Every message shows in Chinese (pages
still being translated are listed in tests/test_translations.py), every glued number equals
the English page's, the language switch lands on the same page, the buttons open Chinese
notebooks, and one browser pass: first load within budget with no outside request, contrast,
phone width, Chinese in the site's own font, and a search for a Chinese term.
"""

import json
import re
import sys
from collections import Counter
from html import unescape
from pathlib import Path

import pytest

from ..test_translations import API_SOURCE, NOT_YET_TRANSLATED
from .conftest import HTML, ROOT, ZH, browsed_pages, chapter_pages
from .pageload import BUDGET_MB, CONTRAST_JS
from .test_browser import (
    KNOWN_UPSTREAM_ERRORS,
    MARK_CJK,
    drawn_without_the_books_font,
    sideways_overflow,
)
from .test_html import Resources, _parse_links

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import translations  # noqa: E402

ZH_HTML = HTML / ZH
PAGES = browsed_pages("zh")
CHAPTERS = chapter_pages()
REPORT = ROOT / "_build" / "zh" / "_build" / "untranslated.json"
BASE_URL = "https://attention-book.github.io/attention-book/"


def text_of(page: Path) -> str:
    return (HTML / page).read_text(encoding="utf-8")


def test_the_chinese_edition_was_built_with_every_page():
    assert PAGES, "no Chinese edition in _build/html/zh: run `make book`"
    from book_toc import toc_entries

    for entry in toc_entries(ROOT):
        assert (ZH_HTML / f"{entry}.html").is_file(), entry


def _allowed_in_english(docname: str) -> set[str]:
    """What a page may still show in English: a listed page's own text, the API page's
    docstrings, and on the answers page the listed chapters' answers."""
    catalogs = translations.catalog_paths(ROOT)
    allowed = set()
    for listed in NOT_YET_TRANSLATED:
        allowed |= {m.id for m in translations.read_po(catalogs[listed]) if m.id}
    return allowed if docname in (translations.ANSWERS, *NOT_YET_TRANSLATED) else set()


def test_every_message_shows_in_chinese():
    """The build's own record: what Sphinx left in English because the catalog had no
    translation (untranslated, fuzzy, or `make pot` not run after an English edit)."""
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    left = {}
    for docname, messages in report.items():
        allowed = _allowed_in_english(docname)
        shown = [
            m
            for m in messages
            if m not in allowed
            and not (docname == translations.API and " ".join(m.split()) not in API_SOURCE)
        ]
        if docname in NOT_YET_TRANSLATED:
            assert messages, f"{docname} shows no English: remove it from NOT_YET_TRANSLATED"
        if shown:
            left[docname] = shown[:3]
    assert left == {}, f"shown in English on Chinese pages (run `make pot`, translate): {left}"


def test_the_landing_pages_diagram_is_drawn_in_chinese():
    """The {diagram} directive's drawing (book_diagrams.py) is translated as a chapter's figure
    is: the Chinese landing page once showed the whole Transformer diagram in English."""
    drawn = {
        " ".join(unescape(re.sub(r"<[^>]+>", "", text)).split())
        for text in re.findall(
            r"<text\b[^>]*>(.*?)</text>", text_of(Path(ZH) / "book" / "intro.html"), re.S
        )
    }
    assert {"源语言词元", "交叉注意力", "带掩码的自注意力"} <= drawn, sorted(drawn)[:20]
    assert not drawn & {"source tokens", "Cross-attention", "Masked self-attention"}


def glued(page: Path) -> Counter:
    found = re.findall(r'<span class="pasted-text">([^<]*)</span>', text_of(page))
    return Counter(unescape(v) for v in found)


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_every_glued_number_equals_the_english_one(page):
    english, chinese = glued(page), glued(Path(ZH) / page)
    assert english, f"{page}: no glued values found"
    # The same values; how often each shows may differ: a {glue:md} value (rendered as
    # Markdown, not counted) is said in Chinese with the glued numbers it is made of.
    assert set(chinese) == set(english), f"differ: {set(english) ^ set(chinese)}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_page_is_chinese_with_its_own_address_and_a_switch_to_the_same_english_page(page):
    text = text_of(page)
    assert re.search(r'<html lang="zh-CN"', text)
    inner = page.relative_to(ZH)
    canonical = re.search(r'<link rel="canonical" href="([^"]+)"', text)
    if canonical:
        assert canonical.group(1) == f"{BASE_URL}{ZH}/{inner.as_posix()}"
    switch = re.search(r'class="btn btn-sm book-language-switch" href="([^"]+)"', text)
    assert switch, "no language switch"
    target = ((HTML / page).parent / switch.group(1)).resolve()
    assert target == (HTML / inner).resolve() and target.is_file()
    back = re.search(r'class="btn btn-sm book-language-switch" href="([^"]+)"', text_of(inner))
    assert back and ((HTML / inner).parent / back.group(1)).resolve() == (HTML / page).resolve()


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_page_fetches_nothing_from_outside_and_its_links_resolve(page):
    parser = Resources()
    parser.feed(text_of(page))
    assert [u for u in parser.urls if re.match(r"^(https?:)?//", u)] == []
    links = _parse_links(page)
    broken = []
    for href in links.hrefs:
        if re.match(r"^([a-z]+:|//)", href):
            continue
        path, _, anchor = href.partition("#")
        target = ((HTML / page).parent / path.split("?")[0]).resolve() if path else HTML / page
        target = target / "index.html" if target.is_dir() else target
        if not target.is_file():
            broken.append(href)
        elif anchor and target.suffix == ".html":
            ids = _parse_links(target.relative_to(HTML)).ids
            broken += [href] if anchor not in ids else []
    assert broken == [], broken


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_markup_shows_as_text(page):
    """A translation parsed as Markdown again: `**` that CommonMark could not pair (bold that
    closes after 。or：before a Chinese character) or a role left as text shows raw."""
    text = text_of(page)
    if page.name == "api.html":  # its docstrings stay English, with Python's ** in them
        text = text.split('<dl class="py', 1)[0]
    body = re.sub(r"<(pre|code|script|style)\b.*?</\1>", "", text, flags=re.S)
    words = unescape(re.sub(r"<[^>]+>", " ", body))
    assert "**" not in words
    assert not re.search(r"\{[a-z]+(:[a-z]+)?\}`", words)


@pytest.mark.parametrize("page", [Path(ZH) / p for p in CHAPTERS], ids=str)
def test_buttons_open_the_chinese_learner_notebooks(page):
    text = text_of(page)
    name = page.stem
    launch = re.findall(r'href="(https://[^"]*(?:colab|mybinder)[^"]*)"', text)
    assert launch and all(f"notebooks/{ZH}/{name}.ipynb" in unescape(u) for u in launch), launch
    download = re.search(r'href="((?!https?:)[^"]*notebooks/[^"]+\.ipynb)"', text)
    assert download, "no download button"
    notebook = json.loads(((HTML / page).parent / download.group(1)).read_text(encoding="utf-8"))
    assert notebook["metadata"]["learner_notebook"]["language"] == "zh"


# -- one pass in Chromium ----------------------------------------------------------------------


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_first_load_offline_light_and_readable(open_page, page_path):
    v = open_page(page_path)
    assert v.outside == [], f"requests left the site: {v.outside}"
    assert v.failed == [], f"failed requests: {v.failed}"
    errors = [e for e in v.errors if not any(k in e for k in KNOWN_UPSTREAM_ERRORS)]
    assert errors == [], errors
    assert v.total_mb <= BUDGET_MB, f"{v.total_mb:.2f} MB; largest: {v.largest()}"
    bad = v.page.evaluate(CONTRAST_JS)
    assert bad == [], f"output text below 4.5:1: {bad[:8]}"
    assert v.page.evaluate(MARK_CJK), "a Chinese page without Chinese"
    cdp = v.page.context.new_cdp_session(v.page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        for _ in range(20):
            v.page.evaluate("document.fonts.ready")
            boxes = drawn_without_the_books_font(cdp)
            if not boxes:
                break
            v.page.wait_for_timeout(500)
    finally:
        cdp.detach()
    assert boxes == [], f"Chinese drawn without the book's font: {boxes[:3]}"


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_readable_at_phone_width(open_page, page_path):
    overflow = sideways_overflow(open_page(page_path, "phone").page)
    assert overflow <= 1, f"the Chinese page scrolls sideways by {overflow}px at 375px"


def test_search_for_a_chinese_term_lands_on_its_page(browser, server):
    """Sphinx's Chinese search indexes Chinese words only with jieba installed, and the
    glossary's terms as whole words (book/_ext/chinese.py): 软查找 (soft lookup) must find
    chapter Q0, which introduces it, not only the glossary."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{server}/{ZH}/book/glossary.html", wait_until="load")
        page.keyboard.press("Control+k")
        page.wait_for_function("document.activeElement && document.activeElement.name === 'q'")
        page.keyboard.type("软查找")
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/{ZH}/search.html?q=*", timeout=15000)
        # Results come in as the search runs; its summary line appears when it is done.
        page.wait_for_function(
            "(document.querySelector('#search-results .search-summary') || {}).textContent",
            timeout=30000,
        )
        found = page.evaluate(
            "[...document.querySelectorAll('#search-results li a')].map(a => a.href)"
        )
        chapter = [url for url in found if "q0_lookup" in url]
        assert chapter, found
        page.goto(chapter[0], wait_until="load")
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
    finally:
        context.close()


def test_the_chinese_student_site_holds_no_translated_solution():
    """Pages, search index and notebooks of the Chinese site: no solution's translation (the
    English fragments are searched across the whole site by tests/built/test_learner.py)."""
    from ..solutions import CHAPTERS as SOURCES
    from ..solutions import normalize
    from ..test_learner_notebooks import _chinese_solution_fragments

    files = [p for p in ZH_HTML.rglob("*") if p.suffix in (".html", ".js", ".ipynb")]
    seen = normalize(" ".join(unescape(p.read_text(errors="replace")) for p in files))
    fragments = [f for path in SOURCES for f in _chinese_solution_fragments(path)]
    assert fragments, "translated solutions to look for (chapter Q0's at least)"
    assert [f for f in fragments if f in seen] == []
    instructor = ROOT / "_build" / "instructor" / "_build" / "html" / ZH / "book" / "q0_lookup.html"
    shown = normalize(unescape(re.sub(r"<[^>]+>", "", instructor.read_text())))
    assert any(f in shown for f in fragments), "the instructor edition shows them"

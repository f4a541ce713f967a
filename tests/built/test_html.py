"""Checks on the built HTML files themselves: offline, complete, no leaks."""

import functools
import re
from html.parser import HTMLParser

import pytest
import yaml

from .conftest import HTML, ROOT, built_pages, chapter_pages

PAGES = built_pages()


class Resources(HTMLParser):
    """Collects every URL a browser would fetch while loading the page."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video", "embed") and attrs.get(
            "src"
        ):
            self.urls.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            rel = attrs.get("rel", "")
            if any(r in rel for r in ("stylesheet", "preload", "icon", "modulepreload")):
                self.urls.append(attrs["href"])


def test_the_book_was_built(html_root):
    assert PAGES, "no pages in _build/html"


def test_every_toc_page_is_built(html_root):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    for entry in entries:
        assert (html_root / f"{entry}.html").is_file(), entry


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_page_fetches_nothing_from_outside(page):
    parser = Resources()
    parser.feed((HTML / page).read_text())
    outside = [u for u in parser.urls if re.match(r"^(https?:)?//", u)]
    assert outside == [], f"{page} loads {outside}"
    for url in parser.urls:
        if url.startswith(("data:", "#")):
            continue
        target = (HTML / page).parent / url.split("?")[0].split("#")[0]
        assert target.resolve().is_file(), f"{page} refers to missing {url}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_machine_paths_in_pages(page):
    text = (HTML / page).read_text()
    assert not re.search(r"(/(tmp|root|work|home)/[A-Za-z])|file://", text)


def test_math_and_widgets_are_served_by_the_site(html_root):
    assert (html_root / "_static" / "mathjax" / "startup.js").is_file()
    assert (html_root / "_static" / "mathjax" / "input" / "tex.js").is_file()
    assert (html_root / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert (html_root / "_static" / "html-manager" / "embed-amd.js").is_file()
    assert (html_root / "_static" / "require.min.js").is_file()


@pytest.mark.parametrize("page", [p for p in PAGES if p.name.startswith("q")], ids=str)
def test_chapters_have_explorers_and_no_glue_left_unresolved(page):
    text = (HTML / page).read_text()
    assert 'class="explorer"' in text, f"{page} has no explorer"
    assert "{glue" not in text and "glue:text" not in text


class Links(HTMLParser):
    """Collects internal link targets and the ids a page defines."""

    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


@functools.cache
def _parse_links(page):
    """Parsed once per page: the index links to every page, hundreds of times over."""
    parser = Links()
    parser.feed((HTML / page).read_text())
    return parser


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_internal_links_and_anchors_resolve(page):
    links = _parse_links(page)
    broken = []
    for href in links.hrefs:
        if re.match(r"^([a-z]+:|//)", href):  # another site, mailto:, javascript:
            continue
        path, _, anchor = href.partition("#")
        target = ((HTML / page).parent / path.split("?")[0]).resolve() if path else HTML / page
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(href)
            continue
        if anchor and target.suffix == ".html":
            ids = _parse_links(target.relative_to(HTML)).ids if target != HTML / page else links.ids
            if anchor not in ids:
                broken.append(href)
    assert broken == [], f"{page} has broken links: {broken}"


INSTRUCTOR_HTML = ROOT / "_build" / "instructor" / "_build" / "html"
CHAPTERS = chapter_pages()


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_student_edition_hides_solutions_and_instructor_edition_shows_them(page):
    student = (HTML / page).read_text()
    assert (INSTRUCTOR_HTML / page).is_file(), "build the instructor edition: make book-instructor"
    instructor = (INSTRUCTOR_HTML / page).read_text()
    n_exercises = student.count('class="exercise admonition"')
    assert n_exercises >= 3
    assert 'class="solution' not in student
    assert instructor.count('class="solution') == n_exercises


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_unrendered_directives(page):
    """Directive text in a page means a parser read it as prose (e.g. autodoc output in MyST)."""
    text = (HTML / page).read_text()
    assert not re.search(r"\.\. (py:|auto\w+::|\w+::)", text), f"raw directive text in {page}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_page_loads_only_what_it_uses(page):
    """No FontAwesome script anywhere; the widget manager and MathJax only where needed."""
    text = (HTML / page).read_text()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', text)
    assert not any("fontawesome" in s for s in scripts), "the 1.5 MB FontAwesome script"
    has_state = "application/vnd.jupyter.widget-state+json" in text
    assert any("embed-amd" in s for s in scripts) == has_state, "widget manager without widgets"
    has_math = 'class="math' in text
    assert any("mathjax" in s for s in scripts) == has_math, "MathJax on a page without math"
    if page.name != "search.html":  # search-as-you-type is off: only the search page searches
        assert not any("searchindex" in s for s in scripts), "the search index on every page"


def test_icon_fonts_hold_every_icon_the_pages_use(html_root):
    from fontTools.ttLib import TTFont

    css = (html_root / "_static" / "styles" / "pydata-sphinx-theme.css").read_text()
    codes = {}
    for selectors, code in re.findall(
        r"((?:\.fa-[a-z0-9-]+:{1,2}before,?)+)\{content:\"\\(\w+)\"", css
    ):
        for name in re.findall(r"\.(fa-[a-z0-9-]+)", selectors):
            codes[name] = int(code, 16)
    used = set()
    for page in PAGES:
        used |= {
            n for n in re.findall(r"\b(fa-[a-z0-9-]+)", (HTML / page).read_text()) if n in codes
        }
    assert used, "no icons found: the theme changed how it draws them"
    fonts = sorted((html_root / "_static" / "book-fonts").glob("fa-*.woff2"))
    held = set()
    for font in fonts:
        held |= set(TTFont(font).getBestCmap())
    missing = sorted(n for n in used if codes[n] not in held)
    assert missing == [], f"icons without a glyph in the cut-down fonts: {missing}"
    assert sum(f.stat().st_size for f in fonts) < 60_000


TEX = re.compile(r"\\[A-Za-z]+|[_^]\{")


class VisibleText(HTMLParser):
    """Text of <title> and of links, outside math elements (MathJax typesets those)."""

    def __init__(self):
        super().__init__()
        self.stack, self.title, self.links = [], [], []

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        self.stack.append((tag, "math" in classes.split()))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if any(math for _, math in self.stack) or any(
            t in ("script", "style") for t, _ in self.stack
        ):
            return
        tags = [t for t, _ in self.stack]
        if "title" in tags:
            self.title.append(data)
        elif "a" in tags:
            self.links.append(data)


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_raw_tex_in_titles_or_link_texts(page):
    parser = VisibleText()
    parser.feed((HTML / page).read_text())
    raw = [t for t in parser.title + parser.links if TEX.search(t)]
    assert raw == [], f"raw TeX where it cannot be typeset: {raw[:5]}"


def test_search_index_titles_are_plain_text(html_root):
    import json

    text = (html_root / "searchindex.js").read_text()
    data = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    titles = list(data["titles"]) + list(data["alltitles"])
    raw = [t for t in titles if TEX.search(re.sub(r"<[^>]+>", "", t))]
    assert raw == [], f"search titles with raw TeX: {raw[:5]}"

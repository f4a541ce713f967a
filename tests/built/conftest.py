"""Fixtures for tests on the built book in _build/html (run after the build)."""

import os
import re
from pathlib import Path

import pytest
from book_toc import chapter_docnames

from .pageload import QuietHandler, first_load, serve

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


# The Chinese edition's site inside the English one (book/_ext/languages.py). Its pages get
# one pass of their own (tests/built/test_chinese.py), not every English test again.
ZH = "zh"


def built_pages(language: str = "en") -> list[Path]:
    """Every HTML page of the built book (``language`` "zh": of its Chinese edition), relative
    to _build/html."""
    root = HTML if language == "en" else HTML / ZH
    if not (root / "index.html").is_file():
        return []
    return sorted(
        p.relative_to(HTML)
        for p in root.rglob("*.html")
        if "_static" not in p.parts
        and "_sources" not in p.parts
        and (language != "en" or p.relative_to(HTML).parts[0] != ZH)
    )


def chapter_pages() -> list[Path]:
    """The built chapter pages, relative to _build/html, in the order of _toc.yml."""
    return [Path(f"{docname}.html") for docname in chapter_docnames()]


def redirect_target(page: Path) -> str | None:
    """Where a page that only redirects (a meta refresh, like the root index) sends the reader."""
    head = (HTML / page).read_text()[:2000]
    found = re.search(r'http-equiv="Refresh"\s+content="\d+;\s*url=([^"]+)"', head, re.I)
    return found.group(1) if found else None


def browsed_pages(language: str = "en") -> list[Path]:
    """The pages a reader reads: every built page but the redirects (opened on their own)."""
    return [p for p in built_pages(language) if redirect_target(p) is None]


# The views the browser tests share: one first load per page and view, never more.
VIEWS = {
    "desktop": {"width": 1280, "color_scheme": "light"},
    "dark": {"width": 1280, "color_scheme": "dark"},
    "phone": {"width": 375, "color_scheme": "light"},
}


@pytest.fixture(scope="session")
def html_root() -> Path:
    if not (HTML / "index.html").is_file():
        pytest.fail("no built book in _build/html: run `make book` (or `make test`) first")
    return HTML


__all__ = ["QuietHandler", "built_pages", "CHROMIUM", "CHROMIUM_ARGS"]


@pytest.fixture(scope="session")
def server(html_root):
    """The built book served on 127.0.0.1, as `make serve` does."""
    with serve(html_root) as url:
        yield url


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).is_file():
        # Never a skip: a missing browser would silently drop the browser suite.
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def open_page(browser, server):
    """A page's first load in one of the views above, shared by every test that reads it: a
    load costs seconds of MathJax and waiting for the network to go quiet. A test that moves
    controls leaves the page as a reader would, and every later check must hold there too.

    Tests run page by page (see `pytest_collection_modifyitems`), so only the last few loads
    stay open: an open chapter holds a renderer of about 250 MB."""
    loaded = {}

    def load(page_path, view="desktop"):
        path = page_path if isinstance(page_path, str) else page_path.as_posix()
        key = (path, view)
        if key in loaded:
            loaded[key] = loaded.pop(key)  # most recently used last
        else:
            while len(loaded) >= len(VIEWS):
                loaded.pop(next(iter(loaded))).close()
            loaded[key] = first_load(browser, f"{server}/{path}", **VIEWS[view])
        return loaded[key]

    yield load
    for visit in loaded.values():
        visit.close()


def pytest_collection_modifyitems(items):
    """Run the tests of one page together, so each page is loaded once per view."""

    def page_of(item):
        callspec = getattr(item, "callspec", None)
        page = callspec.params.get("page_path") if callspec else None
        return "" if page is None else str(page)

    items.sort(key=page_of)  # stable: tests without a page, then page by page in file order

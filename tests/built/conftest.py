"""Fixtures for tests on the built book in _build/html (run after the build)."""

import os
from pathlib import Path

import pytest

from .pageload import QuietHandler, serve

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


def built_pages() -> list[Path]:
    """Every HTML page of the built book, relative to _build/html."""
    if not (HTML / "index.html").is_file():
        return []
    return sorted(
        p.relative_to(HTML)
        for p in HTML.rglob("*.html")
        if "_static" not in p.parts and "_sources" not in p.parts
    )


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

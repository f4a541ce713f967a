"""Each chapter in headless Chromium, served from 127.0.0.1: what a reader's first visit costs.

Bytes are everything the browser received (every request: page, scripts, styles, fonts,
figures) until the network is quiet, MathJax has typeset and the fonts are in, in a fresh
context with an empty cache. The local server sends files uncompressed, so this is an upper
bound on what a host that compresses would send.
"""

from __future__ import annotations

import sys
from pathlib import Path

from common import Result, percentile

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT))

from tests.built.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.built.pageload import BUDGET_MB, first_load, serve  # noqa: E402


def _chapters():
    if not (HTML / "index.html").is_file():
        raise SystemExit("no built book: run `make book` first")
    return sorted((HTML / "book").glob("q*.html"))


def bench_first_load():
    """Bytes of a chapter's first load, every request counted (budget 2.5 MB)."""
    from playwright.sync_api import sync_playwright

    rows = []
    with serve(HTML) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for page_path in _chapters():
            load = first_load(browser, f"{base}/book/{page_path.name}")
            load.close()
            note = f"{len(load.requests)} requests; largest: {load.largest(3)}"
            rows.append(
                Result(f"first load {page_path.stem}", load.total_mb, "MB", BUDGET_MB, note)
            )
        browser.close()
    return rows


def bench_first_render():
    """First contentful paint, five loads per chapter (median reported, budget on the slowest)."""
    from playwright.sync_api import sync_playwright

    rows = []
    with serve(HTML) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for page_path in _chapters():
            paints = []
            for _ in range(5):
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{base}/book/{page_path.name}", wait_until="load")
                paints.append(
                    page.evaluate(
                        "performance.getEntriesByName('first-contentful-paint')[0].startTime"
                    )
                )
                context.close()
            rows.append(
                Result(
                    f"first render {page_path.stem}",
                    percentile(paints, 50),
                    "ms",
                    1000.0,
                    "first contentful paint, median of 5 cold loads",
                )
            )
        browser.close()
    return rows

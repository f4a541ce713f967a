"""Time to first render of each chapter in headless Chromium, served from 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

from common import Result, percentile

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT))

from tests.built.conftest import CHROMIUM, CHROMIUM_ARGS, QuietHandler  # noqa: E402


def bench_first_render():
    """First contentful paint, five loads per chapter (median reported, budget on the slowest)."""
    if not (HTML / "index.html").is_file():
        raise SystemExit("no built book: run `make book` first")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for page_path in sorted((HTML / "book").glob("q*.html")):
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
    finally:
        httpd.shutdown()
    return rows

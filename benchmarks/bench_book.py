"""The whole book: clean build, cached rebuild after a prose-only edit, per-chapter execution."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import Result

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
JB = [str(Path(sys.executable).parent / "jupyter-book"), "build", ".", "-n", "-W", "--keep-going"]


def _build() -> float:
    start = time.perf_counter()
    # No MPLBACKEND here: notebooks need matplotlib's inline backend to put figures in pages.
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    subprocess.run(JB, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _execution_times() -> dict[str, float]:
    """Seconds each notebook took to execute, from jupyter-cache's records of the last build."""
    from jupyter_cache import get_cache

    cache = get_cache(BUILD / ".jupyter_cache")
    times = {}
    for record in cache.list_cache_records():
        data = record.data or {}
        if "execution_seconds" in data:
            times[Path(record.uri).stem] = data["execution_seconds"]
    return times


def _page_weights() -> list[Result]:
    """The HTML file alone; what a first visit downloads in all is bench_browser's first load."""
    html = BUILD / "html" / "book"
    return [
        Result(f"HTML file {page.stem} (text and explorer frames)", page.stat().st_size / 1e6,
               "MB", None, "one of the first load's requests")
        for page in sorted(html.glob("q*.html"))
    ]  # fmt: skip


def bench_book():
    # Clean: no HTML and no execution cache, as on a fresh clone.
    shutil.rmtree(BUILD, ignore_errors=True)
    clean = _build()
    rows = [Result("clean build (every notebook executed)", clean, "s", 150.0)]
    executions = _execution_times()
    for name, seconds in sorted(executions.items()):
        rows.append(Result(f"execution {name}", seconds, "s", 30.0, "inside the clean build"))
    # Cached: touch the prose of the intro page only; notebooks come from the cache.
    intro = ROOT / "book" / "intro.md"
    original = intro.read_text()
    try:
        intro.write_text(original + "\n<!-- benchmark edit -->\n")
        cached = _build()
    finally:
        intro.write_text(original)
    rows.append(Result("cached rebuild after a prose-only edit", cached, "s", 5.0))
    rows.extend(_page_weights())
    return rows

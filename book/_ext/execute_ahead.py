"""Execute the chapters side by side, before Sphinx reads them, into MyST-NB's own cache.

MyST-NB (``execute_notebooks: cache``) executes a notebook when Sphinx reads its page, one
page after another. The chapters set one thread for PyTorch, so on a machine with two cores
half of it waited while the book built. Before reading, this extension runs every chapter
that is about to be read and is not cached yet, as many at once as there are cores, exactly
as MyST-NB would (the same notebook, folder, timeout and error rule, the same
``single_nb_execution``) and caches each into the same execution cache. MyST-NB's read then
finds it there; nothing executes twice and the road from chapter to page stays one road.
Sphinx reads while they run: the pages that execute nothing first, then each chapter once its
run has finished, in the order they started (reading waits for it at ``source-read``).

A chapter that fails here is not cached: MyST-NB executes it again when it reads it, and
reports the error with its traceback as it always does. ``BOOK_EXECUTE_JOBS`` sets how many
run at once (default: the cores this process may use; 1 turns the extension off).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _jobs() -> int:
    text = os.environ.get("BOOK_EXECUTE_JOBS", "").strip()
    if not text:
        return len(os.sched_getaffinity(0))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"BOOK_EXECUTE_JOBS must be a whole number from 1; got {text!r}")
    return int(text)


def _uncached(cache, paths: list[Path]) -> list[tuple[Path, nbformat.NotebookNode]]:
    """The notebooks among ``paths`` whose code the cache has not executed yet."""
    todo = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)  # as MyST-NB reads an .ipynb page
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            todo.append((path, notebook))
    return todo


def execute_ahead(app, env, docnames):
    config = app.config
    jobs = _jobs()
    if config.nb_execution_mode != "cache" or jobs < 2:
        return
    paths = [Path(env.doc2path(name)) for name in docnames]
    cache = get_cache(config.nb_execution_cache_path or ".jupyter_cache")  # MyST-NB's default
    todo = _uncached(cache, [p for p in paths if p.suffix == ".ipynb"])
    if len(todo) < 2:
        return  # one notebook: MyST-NB's own execution is as fast
    # Longest first when an earlier build timed them (a chapter's record outlives its edit).
    timed = {r.uri: (r.data or {}).get("execution_seconds", 0) for r in cache.list_cache_records()}
    todo.sort(key=lambda item: -timed.get(str(item[0]), 0))
    logger.info("execute_ahead: %d notebooks, %d at a time", len(todo), min(jobs, len(todo)))

    def run(item):
        path, notebook = item
        return single_nb_execution(
            notebook,
            cwd=str(path.parent),
            timeout=config.nb_execution_timeout,
            allow_errors=config.nb_execution_allow_errors,
            meta_override=True,
        )

    # Threads suffice: each notebook runs in its own kernel process; a thread only waits on it.
    pool = ThreadPoolExecutor(max_workers=min(jobs, len(todo)))
    names = {path: name for name, path in zip(docnames, paths, strict=True)}
    running = {names[item[0]]: (*item, pool.submit(run, item)) for item in todo}
    pool.shutdown(wait=False)  # what was submitted runs on; nothing more will be
    app.execute_ahead_running = running  # on the app: the environment is pickled after reading
    # Sphinx reads in this list's order (the event may reorder it): pages that wait for nothing
    # first, then the chapters in the order they started, which is about the order they finish.
    docnames[:] = [name for name in docnames if name not in running] + list(running)


def why(err: BaseException) -> str:
    """One line on a failed run: the error and, for a cell's, the line it stopped at. A run that
    fails here and passes when MyST-NB runs it again is otherwise invisible in the log."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # the traceback, without its colours
    stopped = re.findall(r"^\s*-+>\s*\d*\s(.*)$", text, re.M)  # IPython's arrow: "----> 1 code"
    name = getattr(err, "ename", type(err).__name__)
    return name + (f" at `{stopped[-1].strip()}`" if stopped else "")


def cache_when_done(app, docname, source):
    """Before Sphinx reads a chapter that is running: wait for it, and cache it if it ran."""
    running = getattr(app, "execute_ahead_running", {})
    if docname not in running:
        return
    path, notebook, future = running.pop(docname)
    result = future.result()
    if result.err is not None:
        logger.info("execute_ahead: %s failed (%s); MyST-NB will run it and report", path.name,
                    why(result.err))  # fmt: skip
        return
    cache = get_cache(app.config.nb_execution_cache_path or ".jupyter_cache")
    cache.add_nb_to_project(str(path))
    bundle = CacheBundleIn(notebook, str(path), data={"execution_seconds": result.time})
    cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
    logger.info("execute_ahead: %s in %.1f s", path.name, result.time)


def setup(app):
    # After seeded_cache has chosen the execution cache (config-inited).
    app.connect("env-before-read-docs", execute_ahead)
    app.connect("source-read", cache_when_done)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""One execution cache per book seed, so a book built with BOOK_SEED=1 never shows seed 0's outputs.

jupyter-cache keys an executed notebook by its code alone; BOOK_SEED changes every random
draw without changing the code. Without this, `BOOK_SEED=1 make book` after `make book`
would serve the cached seed-0 results. The default seed keeps `_build/.jupyter_cache`
(from `_config.yml`); seed N uses `_build/.jupyter_cache-seedN`.

For the same reason a cache is emptied when tutorial_lib's source changes: a chapter whose code
is unchanged would otherwise show what the old library computed (a figure's old labels, old
numbers), until someone edits the chapter. The cache keeps the library's digest in a file, and
a build that finds another digest empties it; every build whose pages were read with another
library reads its chapters again.
"""

import hashlib
import importlib.util
import os
import re
import shutil
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def cache_path(default: str, seed: str) -> str:
    """The execution cache for ``seed`` (the raw BOOK_SEED text), next to the default one."""
    seed = seed.strip()
    if seed in ("", "0"):
        return default
    if not re.fullmatch(r"-?\d+", seed):
        raise ValueError(f"BOOK_SEED must be an integer; got BOOK_SEED={seed!r}")
    return f"{default.rstrip('/')}-seed{int(seed)}"


def choose_cache(app, config):
    seed = os.environ.get("BOOK_SEED", "")
    path = cache_path(config.nb_execution_cache_path, seed)
    if path != config.nb_execution_cache_path:
        config.nb_execution_cache_path = path
        logger.info("seeded_cache: BOOK_SEED=%s executes into %s", seed.strip(), path)


LIBRARY_STAMP = "tutorial_lib.sha256"


def library_digest(library: Path) -> str:
    """What the chapters' outputs depend on besides their own code: every source file of the
    library (its path and its bytes)."""
    digest = hashlib.sha256()
    for path in sorted(library.rglob("*.py")):
        digest.update(path.relative_to(library).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def forget_if_library_changed(cache_dir: Path, digest: str) -> bool:
    """Empty ``cache_dir`` if it was filled by another library (its stamp differs from
    ``digest``), then stamp it with ``digest``. A cache without a stamp is kept. Returns whether
    it was emptied. A cache already stamped with ``digest`` is not written to: builds that
    share it run side by side (`make test`), and one must never read another's half-written
    stamp as a different library."""
    stamp = cache_dir / LIBRARY_STAMP
    kept = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else None
    if kept == digest:
        return False
    if kept is not None:
        shutil.rmtree(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = stamp.with_suffix(f".{os.getpid()}.tmp")  # written whole, then renamed
    partial.write_text(digest + "\n", encoding="utf-8")
    partial.replace(stamp)
    return kept is not None


def check_library(app, config):
    spec = importlib.util.find_spec("tutorial_lib")
    if config.nb_execution_mode != "cache" or spec is None:
        return
    library = Path(spec.submodule_search_locations[0])
    cache_dir = Path(config.nb_execution_cache_path or ".jupyter_cache")  # as MyST-NB reads it
    app.library_digest = library_digest(library)
    if forget_if_library_changed(cache_dir, app.library_digest):
        logger.info("seeded_cache: tutorial_lib changed; %s emptied, every chapter runs again",
                    cache_dir)  # fmt: skip


def chapters_to_read_again(app, env, added, changed, removed):
    """Every notebook page, when this build's pages were read with another library: Sphinx sees
    their sources unchanged. Kept per environment, not per cache: the Chinese and instructor
    builds read a cache the English build has already refilled and stamped."""
    digest = getattr(app, "library_digest", None)
    read_with, env.book_library_digest = getattr(env, "book_library_digest", None), digest
    if digest is None or read_with == digest:
        return []
    return [name for name in env.found_docs if str(env.doc2path(name)).endswith(".ipynb")]


def setup(app):
    app.connect("config-inited", choose_cache, priority=100)
    app.connect("config-inited", check_library, priority=101)  # in the cache chosen above
    app.connect("env-get-outdated", chapters_to_read_again)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

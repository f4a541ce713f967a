"""One execution cache per book seed, so a book built with BOOK_SEED=1 never shows seed 0's outputs.

jupyter-cache keys an executed notebook by its code alone; BOOK_SEED changes every random
draw without changing the code. Without this, `BOOK_SEED=1 make book` after `make book`
would serve the cached seed-0 results. The default seed keeps `_build/.jupyter_cache`
(from `_config.yml`); seed N uses `_build/.jupyter_cache-seedN`.
"""

import os
import re

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


def setup(app):
    app.connect("config-inited", choose_cache, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Citations without the plugin search: pybtex's entry-point lookups answered once per build.

Every ``{footcite}`` makes sphinxcontrib-bibtex build a pybtex style, and every style asks
``pybtex.plugin`` for its plugins (names, labels, sorting, templates). pybtex 0.26 answers each
question by listing the entry points of every installed distribution, about 20 ms with the
book's environment (PyTorch, Jupyter, Sphinx). The book cites about 220 times, so a build spent
around 900 such searches, two fifths of reading the book's pages. The installed distributions do
not change during a build, so the answer to (group, name) is kept; plugins registered at run
time are still looked up first, by pybtex itself, exactly as before.
"""

from __future__ import annotations

import functools

import pybtex.plugin


def setup(app):
    search = pybtex.plugin.entry_points
    if not hasattr(search, "cache_info"):  # a second Sphinx app in one process: already kept

        @functools.cache
        def entry_points(*, group: str, name: str | None = None) -> tuple:
            found = search(group=group) if name is None else search(group=group, name=name)
            return tuple(found)

        pybtex.plugin.entry_points = entry_points
    return {"parallel_read_safe": True, "parallel_write_safe": True}

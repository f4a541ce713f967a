"""What a chapter needs to run anywhere: ``glue`` without the book's tools, and ``progress``.

The book's build (MyST-NB) stores values computed in a chapter so the prose can quote
them (``{glue:text}`name```). A learner's kernel on Colab, Binder or a laptop has no
MyST-NB, and does not need it: the learner notebooks already carry the built values in
their text. There :func:`glue` does nothing visible, unless asked to display the value.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["glue", "progress"]

Item = TypeVar("Item")


def glue(name: str, value: Any, display: bool = True) -> None:
    """Hand ``value`` to MyST-NB's ``glue`` under ``name`` when it is installed.

    Without MyST-NB, show the value when ``display`` is true and otherwise do nothing.
    """
    # Any name a {glue:text}`name:format` role can quote (Q2 glues "tau_0.5_top").
    if not isinstance(name, str) or not name or any(c in name for c in ":` \t\n"):
        raise ValueError(f"a glue name must be non-empty, without ':', '`' or spaces; got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            from IPython.display import display as show

            show(value)
        return
    myst_glue(name, value, display=display)


def progress(items: Iterable[Item], label: str, total: int | None = None) -> Iterator[Item]:
    """Yield ``items`` while one line reports how far a long cell has got.

    In a live kernel the line updates in place ("training 3/16 · 4 s") a few times a second,
    not at every item (each update is a message to the front end, which a fast loop would
    pay for at every step); when the loop ends it is replaced by a clean summary
    ("training: 16 of 16 in 12 s"), which is all the built page keeps (the book's build
    records only a display's last update). Outside IPython nothing is shown.
    """
    items = list(items) if total is None and not hasattr(items, "__len__") else items
    total = len(items) if total is None else total
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        yield from items
        return
    if get_ipython() is None:
        yield from items
        return
    start = time.perf_counter()
    handle = display({"text/plain": f"{label} 0/{total}"}, raw=True, display_id=True)
    done, shown = 0, start
    for item in items:
        yield item
        done += 1
        now = time.perf_counter()
        if now - shown >= 0.25:
            shown = now
            handle.update({"text/plain": f"{label} {done}/{total} · {now - start:.0f} s"}, raw=True)
    seconds = time.perf_counter() - start
    handle.update({"text/plain": f"{label}: {done} of {total} in {seconds:.0f} s"}, raw=True)

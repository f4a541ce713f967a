"""What a chapter needs to run anywhere: ``glue`` that works with or without the book's tools.

The book's build (MyST-NB) stores values computed in a chapter so the prose can quote
them (``{glue:text}`name```). A learner's kernel on Colab, Binder or a laptop has no
MyST-NB, and does not need it: the learner notebooks already carry the built values in
their text. There :func:`glue` does nothing visible, unless asked to display the value.
"""

from __future__ import annotations

from typing import Any

__all__ = ["glue"]


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

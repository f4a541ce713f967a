"""Explorers: a pure drawing function plus a small parameter grid.

One object, two faces:

* in a live kernel (Jupyter, Colab, Binder, a JupyterHub) it shows ipywidgets
  controls that redraw the figure;
* in the built HTML book, with no kernel, the same output shows plain HTML
  controls over frames rendered when the book was built, so a reader can
  still move them.

Both faces travel in one ``_repr_mimebundle_``. When the book is built (its
Sphinx extension sets ``BOOK_EXPLORERS=static`` for the kernels it starts) the
bundle carries the static face with every frame, and no widget: the page never
shows one, so it loads no widget manager. In a live kernel the bundle carries
the widget view and, for front-ends without widgets, the starting frame only:
frames are drawn when a control first asks for them, never all up front. Only where
ipywidgets is missing or fails does a live kernel draw every frame, under plain
controls and a line saying why.

Figure frames are PNGs drawn at twice their displayed size (sharp on 2x
screens); ``dpi`` is the displayed CSS pixels per inch, so at the default 72 a
font of 11 points reads as 11 CSS pixels.

A drawing function takes keyword arguments named like the grid's keys and
either draws on a matplotlib figure (``kind="figure"``: ``draw(fig, **params)``)
or returns an HTML fragment (``kind="html"``: ``draw(**params) -> str``).

Introduced in chapter Q1; every explorer in the book is one of these.

The static face (plain HTML controls, the frames and the small script that switches them)
is drawn by :mod:`tutorial_lib.figures.explorer_static`.
"""

from __future__ import annotations

import html
import io
import itertools
import os
from collections.abc import Callable, Sequence
from typing import Any

from . import explorer_static
from .explorer_static import on_white as _on_white
from .explorer_static import value_label as _label

__all__ = ["Explorer", "STATIC_ENV"]

# Set to "static" by the book's Sphinx extension (book/_ext/offline_web.py) for the kernels
# that execute the chapters: then, and only then, explorers render every frame.
STATIC_ENV = "BOOK_EXPLORERS"


def _grid_values(name: str, values: Any) -> list:
    """The values of one control, as a list; refuses what would silently go wrong."""
    if isinstance(values, (str, bytes)):
        raise ValueError(
            f"grid[{name!r}] must be a list of values, not the string {values!r} "
            f"(a string would give one value per character); write [{values!r}] for one value"
        )
    if isinstance(values, (dict, set, frozenset)) or not hasattr(values, "__iter__"):
        raise ValueError(
            f"grid[{name!r}] must be a list of values in order; got {type(values).__name__}"
        )
    values = list(values)
    if not values:
        raise ValueError(f"grid[{name!r}] is empty; give at least one value")
    for i, a in enumerate(values):
        for b in values[i + 1 :]:
            # True == 1 and 1 == 1.0: a control could not tell such values apart.
            if a == b or _label(a) == _label(b):
                raise ValueError(
                    f"grid[{name!r}] has repeated values: {a!r} and {b!r} compare equal; "
                    f"every value of a control must be different: {values}"
                )
    return values


def _min_text_points(fig) -> float:
    """The smallest font size (points) of any visible text on ``fig``."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    return min(sizes, default=0.0)


class Explorer:
    """An explorer over every combination of the values in ``grid``.

    Args:
        draw: the drawing function (see the module docstring).
        grid: parameter name -> the values a control offers, in order. Keep
            the product small (a few dozen frames): every frame is rendered
            once for the static book.
        kind: ``"figure"`` (matplotlib) or ``"html"``.
        labels: optional parameter name -> label shown beside its control.
        initial: optional parameter name -> starting value (default: the first).
        figsize, dpi: size of figure frames, in inches and displayed CSS pixels per inch
            (PNG frames are drawn at twice that, for 2x screens).
        alt: text alternative for the figure frames (defaults to the title).
        title: a line shown above the controls.
        keep_figure: pass the figure of the previous frame to ``draw`` as it is,
            not cleared, so a drawing function that keeps its axes and only
            updates its artists' data can redraw faster. Such a function must
            also draw correctly on a new, empty figure.
    """

    def __init__(
        self,
        draw: Callable[..., Any],
        grid: dict[str, Sequence[Any]],
        *,
        kind: str = "figure",
        labels: dict[str, str] | None = None,
        initial: dict[str, Any] | None = None,
        figsize: tuple[float, float] = (7.5, 3.2),
        dpi: int = 72,
        alt: str | None = None,
        title: str = "",
        keep_figure: bool = False,
    ):
        if kind not in ("figure", "html"):
            raise ValueError(f"kind must be 'figure' or 'html'; got {kind!r}")
        if not isinstance(grid, dict) or not grid:
            raise ValueError("grid must be a non-empty dict: parameter name -> list of values")
        self.grid = {name: _grid_values(name, values) for name, values in grid.items()}
        self.draw = draw
        self.kind = kind
        self.labels = {name: name for name in self.grid} | (labels or {})
        self.initial = {name: values[0] for name, values in self.grid.items()}
        for name, value in (initial or {}).items():
            if name not in self.grid or value not in self.grid[name]:
                raise ValueError(f"initial {name}={value!r} is not one of grid[{name!r}]")
            self.initial[name] = self.grid[name][self.grid[name].index(value)]
        self.figsize = figsize
        self.dpi = dpi
        self.title = title
        self.alt = alt or title or "figure drawn by an explorer"
        self.keep_figure = keep_figure
        self._frames: dict[tuple[int, ...], Any] = {}
        self._text_points: dict[tuple[int, ...], float] = {}  # figure frames: smallest font
        self._figure = None

    @property
    def n_frames(self) -> int:
        n = 1
        for values in self.grid.values():
            n *= len(values)
        return n

    def _index(self, params: dict[str, Any]) -> tuple[int, ...]:
        index = []
        for name, values in self.grid.items():
            if name not in params:
                raise ValueError(f"missing parameter {name!r}; the grid has {list(self.grid)}")
            if params[name] not in values:
                raise ValueError(f"{name}={params[name]!r} is not in the grid: {values}")
            index.append(values.index(params[name]))
        return tuple(index)

    def render(self, **params: Any) -> Any:
        """Draw one frame, uncached: PNG bytes for figures (at 2x), a string for HTML."""
        key = self._index(params)
        if self.kind == "html":
            return str(self.draw(**params))
        from matplotlib.figure import Figure

        # One kept figure, cleared between frames unless keep_figure: cheaper than a new one.
        if self._figure is None:
            self._figure = Figure(figsize=self.figsize, dpi=2 * self.dpi, facecolor="white")
        fig = self._figure
        if not self.keep_figure:
            fig.clear()
        self.draw(fig, **params)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=2 * self.dpi, facecolor="white")
        self._text_points[key] = _min_text_points(fig)  # after drawing: tick labels exist now
        return buffer.getvalue()

    @property
    def display_size(self) -> tuple[int, int]:
        """CSS pixels a figure frame is shown at (its PNG holds twice as many)."""
        return round(self.figsize[0] * self.dpi), round(self.figsize[1] * self.dpi)

    def frame(self, **params: Any) -> Any:
        """A frame, rendered once and then served from a cache."""
        key = self._index(params)
        if key not in self._frames:
            self._frames[key] = self.render(**params)
        return self._frames[key]

    def frames(self) -> dict[tuple[int, ...], Any]:
        """Every frame of the grid, keyed by the index of each parameter's value."""
        names = list(self.grid)
        for values in itertools.product(*self.grid.values()):
            self.frame(**dict(zip(names, values, strict=True)))
        return dict(self._frames)

    # The static face lives in .explorer_static: the same frames as plain HTML controls.

    def static_html(self, why: str | None = None) -> str:
        """Self-contained HTML: plain controls over every pre-rendered frame (``why``, when
        given, says why a live kernel shows these instead of widgets)."""
        return explorer_static.static_html(self, why)

    def preview_html(self) -> str:
        """The starting frame alone, for front-ends that show no widgets."""
        return explorer_static.preview_html(self)

    def widget(self):
        """ipywidgets controls that redraw the figure (frames are cached once drawn)."""
        import ipywidgets as w

        controls = {}
        for name, values in self.grid.items():
            options = [(_label(v), v) for v in values]
            if all(explorer_static.is_number(v) for v in values):
                control = w.SelectionSlider(
                    options=options,
                    value=self.initial[name],
                    description=self.labels[name],
                    continuous_update=True,
                    style={"description_width": "initial"},
                )
            else:
                control = w.Dropdown(
                    options=options,
                    value=self.initial[name],
                    description=self.labels[name],
                    style={"description_width": "initial"},
                )
            controls[name] = control
        if self.kind == "html":
            view = w.HTML(value=_on_white(self.frame(**self.initial)))
        else:
            # Shown at its CSS size, so the 2x PNG is sharp on 2x screens.
            width, height = self.display_size
            view = w.Image(
                value=self.frame(**self.initial),
                format="png",
                layout=w.Layout(width=f"{width}px", max_width="100%", height="auto"),
            )

        def redraw(_change=None):
            params = {name: control.value for name, control in controls.items()}
            frame = self.frame(**params)
            view.value = _on_white(frame) if self.kind == "html" else frame

        for control in controls.values():
            control.observe(redraw, names="value")
        children = [w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")), view]
        if self.title:
            children.insert(0, w.HTML(f"<strong>{html.escape(self.title)}</strong>"))
        box = w.VBox(children)
        box.controls = controls  # reachable for tests and for learners who want to script it
        box.view = view
        return box

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {"text/plain": f"<Explorer over {', '.join(self.grid)}: {self.n_frames} frames>"}
        if os.environ.get(STATIC_ENV) == "static":
            # The book's build: every frame, and no widget (the page would never show it).
            bundle["text/html"] = self.static_html()
            return bundle
        try:
            live, why = _widget_view(self.widget()), None
        except ImportError:
            live, why = {}, "ipywidgets is not installed (pip install ipywidgets)"
        except Exception as error:  # never silently: the frames say why they are there
            live, why = {}, f"ipywidgets failed ({type(error).__name__}: {error})"
        # With a widget, a front-end that shows no widgets gets the starting frame; without
        # one, every frame under plain controls, and a line saying why.
        bundle["text/html"] = self.preview_html() if live else self.static_html(why)
        return bundle | live


def _widget_view(box) -> dict:
    """The front-end's view of a widget, from ipywidgets 8 or 7 (Colab's default) alike."""
    if hasattr(box, "_repr_mimebundle_"):  # ipywidgets 8
        return {k: v for k, v in box._repr_mimebundle_().items() if k != "text/plain"}
    # ipywidgets 7 displays itself through _ipython_display_, which sends this same view.
    return {"application/vnd.jupyter.widget-view+json": box.get_view_spec()}

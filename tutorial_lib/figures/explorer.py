"""Explorers: a pure drawing function plus a small parameter grid.

One object, two faces:

* in a live kernel (Jupyter, Colab, Binder, a JupyterHub) it shows ipywidgets
  controls that redraw the figure;
* in the built HTML book, with no kernel, the same output shows plain HTML
  controls over frames rendered when the book was built, so a reader can
  still move them.

Both faces travel in one ``_repr_mimebundle_``: the widget view for
front-ends that run widgets, and ``text/html`` that the book's HTML builder
is told to prefer (``nb_mime_priority_overrides`` in ``_config.yml``).

A drawing function takes keyword arguments named like the grid's keys and
either draws on a matplotlib figure (``kind="figure"``: ``draw(fig, **params)``)
or returns an HTML fragment (``kind="html"``: ``draw(**params) -> str``).

Introduced in chapter Q1; every explorer in the book is one of these.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Explorer"]


def _label(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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
        figsize, dpi: size of figure frames.
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
        self.grid = {}
        for name, values in grid.items():
            values = list(values)
            if not values:
                raise ValueError(f"grid[{name!r}] is empty; give at least one value")
            if len({_label(v) for v in values}) != len(values):
                raise ValueError(f"grid[{name!r}] has repeated values: {values}")
            self.grid[name] = values
        self.draw = draw
        self.kind = kind
        self.labels = {name: name for name in self.grid} | (labels or {})
        self.initial = {name: values[0] for name, values in self.grid.items()}
        for name, value in (initial or {}).items():
            if name not in self.grid or value not in self.grid[name]:
                raise ValueError(f"initial {name}={value!r} is not one of grid[{name!r}]")
            self.initial[name] = value
        self.figsize = figsize
        self.dpi = dpi
        self.title = title
        self.alt = alt or title or "figure drawn by an explorer"
        self.keep_figure = keep_figure
        self._frames: dict[tuple[int, ...], Any] = {}
        self._figure = None

    # -- frames ---------------------------------------------------------------

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
        """Draw one frame, uncached: PNG bytes for figures, a string for HTML."""
        self._index(params)
        if self.kind == "html":
            return str(self.draw(**params))
        from matplotlib.figure import Figure

        # One kept figure, cleared between frames unless keep_figure: cheaper than a new one.
        if self._figure is None:
            self._figure = Figure(figsize=self.figsize, dpi=self.dpi, facecolor="white")
        fig = self._figure
        if not self.keep_figure:
            fig.clear()
        self.draw(fig, **params)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=self.dpi, facecolor="white")
        return buffer.getvalue()

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

    # -- the static face --------------------------------------------------------

    def _frame_source(self, frame: Any) -> str:
        if self.kind == "html":
            return frame
        return "data:image/png;base64," + base64.b64encode(frame).decode("ascii")

    def static_html(self, why: str | None = None) -> str:
        """Self-contained HTML: plain controls over every pre-rendered frame.

        ``why``, when given, says why a live kernel shows these frames instead of controls.
        """
        uid = "explorer-" + uuid.uuid4().hex[:10]
        frames = {
            "-".join(map(str, key)): self._frame_source(frame)
            for key, frame in self.frames().items()
        }
        start = "-".join(str(self.grid[name].index(self.initial[name])) for name in self.grid)
        controls = []
        for i, (name, values) in enumerate(self.grid.items()):
            label = html.escape(self.labels[name])
            pos = values.index(self.initial[name])
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                # A slider over the positions of the values, which may be on a log scale.
                options = html.escape(json.dumps([_label(v) for v in values]))
                controls.append(
                    f'<label class="explorer-control">{label} '
                    f'<input type="range" min="0" max="{len(values) - 1}" step="1" '
                    f'value="{pos}" data-index="{i}" data-values="{options}" '
                    f'aria-label="{label}"> '
                    f"<output>{html.escape(_label(values[pos]))}</output></label>"
                )
            else:
                opts = "".join(
                    f'<option value="{j}"{" selected" if j == pos else ""}>'
                    f"{html.escape(_label(v))}</option>"
                    for j, v in enumerate(values)
                )
                controls.append(
                    f'<label class="explorer-control">{label} '
                    f'<select data-index="{i}" aria-label="{label}">{opts}</select></label>'
                )
        if self.kind == "html":
            view = f'<div class="explorer-view">{frames[start]}</div>'
        else:
            view = (
                f'<img class="explorer-view" src="{frames[start]}" '
                f'alt="{html.escape(self.alt)}" style="max-width:100%;height:auto">'
            )
        title = f'<div class="explorer-title"><strong>{html.escape(self.title)}</strong></div>'
        note = (
            '<div class="explorer-note" style="font-size:0.8em;opacity:0.75">'
            + (
                f"{self.n_frames} frames drawn in advance. Live controls are off: "
                f"{html.escape(why)}."
                if why
                else f"{self.n_frames} frames drawn in advance; where the notebook runs with "
                "ipywidgets (Jupyter, Colab, VS Code) the controls redraw live."
            )
            + "</div>"
        )
        script = _STATIC_SCRIPT % {
            "uid": uid,
            "frames": json.dumps(frames).replace("</", "<\\/"),
            "kind": self.kind,
        }
        return (
            f'<div class="explorer" id="{uid}" data-kind="{self.kind}" '
            'style="border:1px solid #8884;border-radius:6px;padding:0.5em;'
            'background:#fff;color:#111;max-width:100%;overflow-x:auto">'
            f"{title if self.title else ''}"
            '<div class="explorer-controls" style="display:flex;flex-wrap:wrap;gap:0.4em 1.2em;'
            f'margin-bottom:0.4em">{"".join(controls)}</div>'
            f"{view}{note}</div>{script}"
        )

    # -- the live face ------------------------------------------------------------

    def widget(self):
        """ipywidgets controls that redraw the figure (frames are cached once drawn)."""
        import ipywidgets as w

        controls = {}
        for name, values in self.grid.items():
            options = [(_label(v), v) for v in values]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
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
            view = w.HTML(value=self.frame(**self.initial))
        else:
            view = w.Image(value=self.frame(**self.initial), format="png")

        def redraw(_change=None):
            params = {name: control.value for name, control in controls.items()}
            view.value = self.frame(**params)

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
        try:
            live, why = _widget_view(self.widget()), None
        except ImportError:
            live, why = {}, "ipywidgets is not installed (pip install ipywidgets)"
        except Exception as error:  # never silently: the frames say why they are there
            live, why = {}, f"ipywidgets failed ({type(error).__name__}: {error})"
        return {
            "text/plain": f"<Explorer over {', '.join(self.grid)}: {self.n_frames} frames>",
            "text/html": self.static_html(why),
            **live,
        }


def _widget_view(box) -> dict:
    """The front-end's view of a widget, from ipywidgets 8 or 7 (Colab's default) alike."""
    if hasattr(box, "_repr_mimebundle_"):  # ipywidgets 8
        return {k: v for k, v in box._repr_mimebundle_().items() if k != "text/plain"}
    # ipywidgets 7 displays itself through _ipython_display_, which sends this same view.
    return {"application/vnd.jupyter.widget-view+json": box.get_view_spec()}


_STATIC_SCRIPT = """<script>
(function () {
  var root = document.getElementById("%(uid)s");
  if (!root) { return; }
  var frames = %(frames)s;
  var kind = "%(kind)s";
  var view = root.querySelector(".explorer-view");
  var inputs = root.querySelectorAll("[data-index]");
  function update() {
    var key = [];
    inputs.forEach(function (el) {
      key[Number(el.getAttribute("data-index"))] = el.value;
      if (el.type === "range") {
        var values = JSON.parse(el.getAttribute("data-values"));
        el.parentNode.querySelector("output").textContent = values[Number(el.value)];
      }
    });
    var frame = frames[key.join("-")];
    if (frame === undefined) { return; }
    if (kind === "html") { view.innerHTML = frame; } else { view.src = frame; }
  }
  inputs.forEach(function (el) { el.addEventListener("input", update); });
})();
</script>"""

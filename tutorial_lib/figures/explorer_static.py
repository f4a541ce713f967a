"""The static face of an :class:`~tutorial_lib.figures.explorer.Explorer`: plain HTML
controls over frames drawn in advance, and the small script that switches them, for the
built book (no kernel) and for live kernels without ipywidgets.

Frames are stored as pieces (an HTML frame is cut before each opening tag), each distinct
piece once: neighbouring frames share most of their markup, so a page carries a fraction
of the frames' size.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .explorer import Explorer

__all__ = ["static_html", "preview_html"]


def value_label(value: Any) -> str:
    """How a control shows a value: floats without trailing zeros."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def on_white(frame: str) -> str:
    """An HTML frame on the white ground it is drawn for, whatever the notebook's theme."""
    return f'<div style="background:#fff;color:#1a1a1a;padding:4px">{frame}</div>'


def _frame_source(explorer: Explorer, frame: Any) -> str:
    if explorer.kind == "html":
        return frame
    # A 64-colour palette PNG: a third of the bytes of the RGB frame, and it looks the same.
    from PIL import Image

    image = Image.open(io.BytesIO(frame)).convert("RGB").quantize(colors=64)
    buffer = io.BytesIO()
    image.save(buffer, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _controls_html(explorer: Explorer) -> str:
    controls = []
    for i, (name, values) in enumerate(explorer.grid.items()):
        label = html.escape(explorer.labels[name])
        pos = values.index(explorer.initial[name])
        if all(is_number(v) for v in values):
            # A slider over the positions of the values, which may be on a log scale.
            options = html.escape(json.dumps([value_label(v) for v in values]))
            controls.append(
                f'<label class="explorer-control">{label} '
                f'<input type="range" min="0" max="{len(values) - 1}" step="1" '
                f'value="{pos}" data-index="{i}" data-values="{options}" '
                f'aria-label="{label}"> '
                f"<output>{html.escape(value_label(values[pos]))}</output></label>"
            )
        else:
            opts = "".join(
                f'<option value="{j}"{" selected" if j == pos else ""}>'
                f"{html.escape(value_label(v))}</option>"
                for j, v in enumerate(values)
            )
            controls.append(
                f'<label class="explorer-control">{label} '
                f'<select data-index="{i}" aria-label="{label}">{opts}</select></label>'
            )
    return (
        '<div class="explorer-controls" style="display:flex;flex-wrap:wrap;gap:0.4em 1.2em;'
        f'margin-bottom:0.4em">{"".join(controls)}</div>'
    )


def _view_html(explorer: Explorer, first: str) -> str:
    if explorer.kind == "html":
        return f'<div class="explorer-view" style="max-width:100%;overflow-x:auto">{first}</div>'
    width, height = explorer.display_size
    points = min(explorer._text_points.values(), default=0.0)
    return (
        f'<img class="explorer-view" src="{first}" width="{width}" height="{height}" '
        f'alt="{html.escape(explorer.alt)}" data-text-points="{points:g}" '
        f'data-px-per-point="{explorer.dpi / 72:g}" style="max-width:100%;height:auto">'
    )


def _box(explorer: Explorer, inner: str, uid: str = "") -> str:
    title = (
        f'<div class="explorer-title"><strong>{html.escape(explorer.title)}</strong></div>'
        if explorer.title
        else ""
    )
    ident = f' id="{uid}"' if uid else ""
    return (
        f'<div class="explorer"{ident} data-kind="{explorer.kind}" '
        'style="border:1px solid #8884;border-radius:6px;padding:0.5em;'
        'background:#fff;color:#1a1a1a;max-width:100%;overflow-x:auto">'
        f"{title}{inner}</div>"
    )


def static_html(explorer: Explorer, why: str | None = None) -> str:
    """Self-contained HTML: plain controls over every pre-rendered frame.

    ``why``, when given, says why a live kernel shows these frames instead of controls.

    Frames are stored as pieces (an HTML frame is cut before each opening tag), each
    distinct piece once: neighbouring frames share most of their markup, so the
    page carries a fraction of the frames' size.
    """
    uid = "explorer-" + uuid.uuid4().hex[:10]
    sources = {
        "-".join(map(str, key)): _frame_source(explorer, frame)
        for key, frame in explorer.frames().items()
    }
    pieces: dict[str, int] = {}
    frames = {}
    for key, source in sources.items():
        parts = re.split(r"(?=<[A-Za-z])", source) if explorer.kind == "html" else [source]
        frames[key] = [pieces.setdefault(p, len(pieces)) for p in parts if p]
    grid, initial = explorer.grid, explorer.initial
    start = "-".join(str(grid[name].index(initial[name])) for name in grid)
    note = (
        '<div class="explorer-note" style="font-size:0.8em;color:#555">'
        + (
            f"{explorer.n_frames} frames drawn in advance. Live controls are off: "
            f"{html.escape(why)}."
            if why
            else f"{explorer.n_frames} frames drawn in advance; where the notebook runs with "
            "ipywidgets (Jupyter, Colab, VS Code) the controls redraw live."
        )
        + "</div>"
    )
    data = {"pieces": list(pieces), "frames": frames}
    script = _STATIC_SCRIPT % {
        "uid": uid,
        "data": json.dumps(data, separators=(",", ":")).replace("</", "<\\/"),
        "kind": explorer.kind,
    }
    inner = _controls_html(explorer) + _view_html(explorer, sources[start]) + note
    return _box(explorer, inner, uid) + script


def preview_html(explorer: Explorer) -> str:
    """The starting frame alone, for front-ends that show no widgets: no frame drawn but it."""
    frame = _frame_source(explorer, explorer.frame(**explorer.initial))
    labels = explorer.labels
    values = ", ".join(f"{labels[n]} = {value_label(v)}" for n, v in explorer.initial.items())
    note = (
        '<div class="explorer-note" style="font-size:0.8em;color:#555">'
        f"Starting frame ({html.escape(values)}). The controls need a running kernel "
        "with ipywidgets.</div>"
    )
    return _box(explorer, _view_html(explorer, frame) + note)


_STATIC_SCRIPT = """<script>
(function () {
  var root = document.getElementById("%(uid)s");
  if (!root) { return; }
  var data = %(data)s;
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
    var parts = data.frames[key.join("-")];
    if (parts === undefined) { return; }
    var frame = parts.map(function (i) { return data.pieces[i]; }).join("");
    if (kind === "html") { view.innerHTML = frame; } else { view.src = frame; }
  }
  inputs.forEach(function (el) { el.addEventListener("input", update); });
})();
</script>"""

"""The ``{diagram}`` directive: the book's architecture diagrams on a Markdown page.

Markdown pages (the introduction) do not execute code, yet they should show the same
diagrams the chapters draw. This directive calls the library's own drawing functions
(:mod:`tutorial_lib.figures.diagrams`) while the page is read, so the picture is generated
at build time from the code, never committed as a file::

    ```{diagram} transformer
    :chapters:
    :caption: The Transformer, with the chapter that explains each part.
    ```

Arguments: ``transformer`` or ``multihead``. Options: ``chapters`` (tag each part with its
chapter; the Transformer only) and ``caption``. A page using it is read again whenever
the drawing code changes.

Drawing runs the library's modules, so it imports PyTorch: three seconds of a rebuild after a
prose edit to the page. The drawing is a pure function of the directive's arguments, the
library's source and PyTorch's version, so the HTML is kept beside the doctrees under a key
made of those, and drawn again only when one of them changes.
"""

import hashlib
import importlib.metadata
import importlib.util
import json
import os
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

KINDS = ("transformer", "multihead")


def diagram_html(kind: str, chapters: bool = False, caption: str = "") -> str:
    """The HTML a ``{diagram}`` directive writes: the SVG at its natural size, and a caption."""
    from tutorial_lib.figures.diagrams import figure_html, multihead_svg, transformer_svg

    if kind not in KINDS:
        raise ValueError(f"a diagram is one of {KINDS}; got {kind!r}")
    if chapters and kind != "transformer":
        raise ValueError("only the transformer diagram has chapter tags")
    svg = transformer_svg(chapters=chapters) if kind == "transformer" else multihead_svg()
    return figure_html(svg, caption)


def _library() -> Path:
    """tutorial_lib's folder, found without importing it (its modules import PyTorch)."""
    spec = importlib.util.find_spec("tutorial_lib")
    if spec is None:  # else an AttributeError on None, which names neither the cause nor the fix
        raise RuntimeError("tutorial_lib is not installed in this environment: run `make setup`")
    return Path(spec.submodule_search_locations[0])


def drawing_sources() -> list[Path]:
    """The library files a diagram depends on: a change to any of them redraws the page."""
    library = _library()
    return [
        *sorted((library / "figures" / "diagrams").glob("*.py")),
        library / "model.py",
        library / "attention.py",
    ]


def drawing_key(kind: str, chapters: bool, caption: str) -> str:
    """What the drawn HTML depends on: the arguments, every source file of the library (the
    drawing runs its modules at probe sizes, not only the files above) and PyTorch's version."""
    digest = hashlib.sha256(json.dumps([kind, chapters, caption]).encode())
    digest.update(importlib.metadata.version("torch").encode())
    library = _library()
    for path in sorted(library.rglob("*.py")):
        digest.update(path.relative_to(library).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cached_diagram_html(folder: Path, kind: str, chapters: bool, caption: str) -> str:
    """``diagram_html``, kept in ``folder``: one file per directive (kind, tags, caption),
    replaced when its key changes, so the folder does not grow with the library's history."""
    key = drawing_key(kind, chapters, caption)
    name = hashlib.sha256(json.dumps([kind, chapters, caption]).encode()).hexdigest()[:16]
    path = folder / f"{kind}-{name}.json"
    if path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept["key"] == key:
            return kept["html"]
    html = diagram_html(kind, chapters, caption)
    folder.mkdir(parents=True, exist_ok=True)
    # Written whole, then renamed: a parallel reader of another page never sees half a file.
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"key": key, "html": html}), encoding="utf-8")
    partial.replace(path)
    return html


class DiagramDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"chapters": directives.flag, "caption": directives.unchanged}

    def run(self):
        kind = self.arguments[0].strip()
        try:
            html = cached_diagram_html(
                Path(self.env.doctreedir) / "diagrams",
                kind,
                "chapters" in self.options,
                self.options.get("caption", ""),
            )
        except ValueError as error:
            raise self.error(str(error)) from None
        for source in drawing_sources():
            self.env.note_dependency(str(source))
        # The class lets the Chinese build translate the drawn text (figure_text.DIAGRAM_CLASS).
        return [nodes.raw("", html, format="html", classes=["book-diagram"])]


def setup(app):
    app.add_directive("diagram", DiagramDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

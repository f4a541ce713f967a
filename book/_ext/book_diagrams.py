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
"""

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


def drawing_sources() -> list[Path]:
    """The library files a diagram depends on: a change to any of them redraws the page."""
    import tutorial_lib.attention
    import tutorial_lib.figures.diagrams
    import tutorial_lib.model

    package = Path(tutorial_lib.figures.diagrams.__file__).parent
    return [
        *sorted(package.glob("*.py")),
        Path(tutorial_lib.model.__file__),
        Path(tutorial_lib.attention.__file__),
    ]


class DiagramDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"chapters": directives.flag, "caption": directives.unchanged}

    def run(self):
        kind = self.arguments[0].strip()
        try:
            html = diagram_html(kind, "chapters" in self.options, self.options.get("caption", ""))
        except ValueError as error:
            raise self.error(str(error)) from None
        for source in drawing_sources():
            self.env.note_dependency(str(source))
        return [nodes.raw("", html, format="html")]


def setup(app):
    app.add_directive("diagram", DiagramDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

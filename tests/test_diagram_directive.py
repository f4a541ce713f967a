"""The {diagram} directive: Markdown pages show the library's own diagrams, drawn at build time."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import book_diagrams  # noqa: E402

from tutorial_lib.figures.diagrams import figure_html, multihead_svg, transformer_svg  # noqa: E402


def test_the_directive_writes_the_librarys_drawing():
    assert book_diagrams.diagram_html("multihead") == figure_html(multihead_svg())
    tagged = book_diagrams.diagram_html("transformer", chapters=True, caption="The map")
    assert tagged == figure_html(transformer_svg(chapters=True), "The map")


@pytest.mark.parametrize(
    "kind,chapters,message",
    [("encoder", False, "one of"), ("multihead", True, "only the transformer")],
)
def test_a_wrong_diagram_is_named(kind, chapters, message):
    with pytest.raises(ValueError, match=message):
        book_diagrams.diagram_html(kind, chapters)


def test_pages_are_redrawn_when_the_drawing_code_changes():
    sources = book_diagrams.drawing_sources()
    names = {path.name for path in sources}
    assert {"transformer.py", "multihead.py", "shapes.py", "svg.py", "model.py"} <= names
    assert all(path.is_file() for path in sources)


def test_the_book_loads_the_extension():
    config = (Path(__file__).resolve().parents[1] / "_config.yml").read_text()
    assert "book_diagrams: book/_ext" in config

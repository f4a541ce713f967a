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


def test_a_kept_drawing_is_reused_until_its_key_changes(tmp_path, monkeypatch):
    drawn = book_diagrams.cached_diagram_html(tmp_path, "multihead", False, "")
    assert drawn == book_diagrams.diagram_html("multihead")
    calls = []

    def draw(*args):
        calls.append(args)
        return "<svg>redrawn</svg>"

    monkeypatch.setattr(book_diagrams, "diagram_html", draw)
    assert book_diagrams.cached_diagram_html(tmp_path, "multihead", False, "") == drawn
    assert calls == []
    # Another caption is another drawing; a changed library (another key) redraws.
    assert book_diagrams.cached_diagram_html(tmp_path, "multihead", False, "A caption") == (
        "<svg>redrawn</svg>"
    )
    monkeypatch.setattr(book_diagrams, "drawing_key", lambda *args: "the library changed")
    assert book_diagrams.cached_diagram_html(tmp_path, "multihead", False, "") == (
        "<svg>redrawn</svg>"
    )
    assert len(calls) == 2
    assert len(list(tmp_path.iterdir())) == 2  # one file per directive, replaced in place


def test_the_key_follows_every_library_file(tmp_path, monkeypatch):
    library = tmp_path / "tutorial_lib"
    (library / "labs").mkdir(parents=True)
    (library / "__init__.py").write_text("")
    (library / "labs" / "norms.py").write_text("EPS = 1e-5\n")
    monkeypatch.setattr(book_diagrams, "_library", lambda: library)
    before = book_diagrams.drawing_key("transformer", True, "")
    (library / "labs" / "norms.py").write_text("EPS = 1e-6\n")
    assert book_diagrams.drawing_key("transformer", True, "") != before

"""tutorial_lib.notebook: glue without the book's tools, and progress that leaves a summary."""

import sys

import pytest

from tutorial_lib.notebook import glue, progress


def test_glue_without_myst_nb_shows_only_what_is_asked(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # as on Colab: importing it fails
    glue("quiet", 1.5, display=False)
    assert capsys.readouterr().out == ""
    glue("shown", 2.5)
    assert "2.5" in capsys.readouterr().out


def test_glue_hands_over_to_myst_nb_when_installed(monkeypatch):
    seen = {}

    class FakeMystNb:
        @staticmethod
        def glue(name, value, display=True):
            seen[name] = (value, display)

    monkeypatch.setitem(sys.modules, "myst_nb", FakeMystNb)
    glue("x", 3, display=False)
    assert seen == {"x": (3, False)}


def test_glue_names_must_be_strings():
    with pytest.raises(ValueError, match="non-empty"):
        glue("", 1)


def test_progress_outside_ipython_yields_every_item_unchanged():
    assert list(progress(iter(range(4)), "runs")) == [0, 1, 2, 3]
    assert list(progress([5, 6], "runs", total=2)) == [5, 6]

"""The book's two small Sphinx extensions: offline web assets and student/instructor editions."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import editions  # noqa: E402
import offline_web  # noqa: E402
import plain_math  # noqa: E402


def fake_config(**values):
    defaults = {
        "html_static_path": [],
        "html_css_files": ["book.css"],
        "mathjax_path": "https://cdn.example/mathjax.js",
        "nb_ipywidgets_js": {"https://cdn.example/require.js": {}},
        "mathjax3_config": {"options": {"processHtmlClass": "math"}},
        "templates_path": [],
        "hide_solutions": False,
        "html_context": {},
        "html_theme_options": {"launch_buttons": {"colab_url": "https://colab"}},
    }
    return SimpleNamespace(**(defaults | values))


def test_offline_assets_replace_every_cdn_script(tmp_path):
    (tmp_path / "webassets" / "mathjax").mkdir(parents=True)
    (tmp_path / "webassets" / "mathjax" / "startup.js").write_text("")
    config = fake_config()
    offline_web.configure_offline_assets(SimpleNamespace(srcdir=str(tmp_path)), config)
    assert config.html_static_path == ["webassets"]
    # MathJax's parts without its contextual menu; the page's own options are kept.
    assert config.mathjax_path == "mathjax/startup.js"
    assert config.mathjax3_config["loader"]["load"] == offline_web.MATHJAX_COMPONENTS
    assert config.mathjax3_config["options"] == {"processHtmlClass": "math"}
    assert not any("://" in url for url in config.nb_ipywidgets_js)
    assert config.html_css_files == ["book.css", offline_web.FONTS_CSS]
    assert config.templates_path[-1].endswith("templates")  # the head without FontAwesome's script


def test_without_assets_the_cdn_defaults_stay(tmp_path):
    config = fake_config()
    offline_web.configure_offline_assets(SimpleNamespace(srcdir=str(tmp_path)), config)
    assert config.mathjax_path.startswith("https://")
    assert config.html_static_path == []


def test_book_kernels_are_told_to_draw_static_explorers(monkeypatch):
    monkeypatch.delenv("BOOK_EXPLORERS", raising=False)
    offline_web.static_explorers(None)
    import os

    from tutorial_lib.figures.explorer import STATIC_ENV

    assert os.environ[STATIC_ENV] == "static"


@pytest.mark.parametrize(
    "tex,plain",
    [
        (r"\sqrt{d_{model}}", "√d_model"),
        (r"\frac{QK^\top}{\sqrt{d_k}}", "QKᵀ/√d_k"),
        (r"\mathrm{softmax}\left(\frac{q \cdot k}{\sqrt{d_k}}\right)", "softmax((q · k)/√d_k)"),
        (r"O(T^2 D)", "O(T² D)"),
        (r"\lVert J \rVert_F \le \tfrac{1}{2}", "‖ J ‖_F ≤ 1/2"),
    ],
)
def test_math_reads_as_plain_text_where_it_cannot_be_typeset(tex, plain):
    assert plain_math.tex_to_text(tex) == plain


@pytest.mark.parametrize("edition,hidden", [(None, True), ("student", True), ("instructor", False)])
def test_editions_choose_whether_solutions_are_hidden(monkeypatch, edition, hidden):
    if edition is None:
        monkeypatch.delenv("BOOK_EDITION", raising=False)
    else:
        monkeypatch.setenv("BOOK_EDITION", edition)
    monkeypatch.delenv("BOOK_JUPYTERHUB_URL", raising=False)
    config = fake_config()
    editions.choose_edition(None, config)
    assert config.hide_solutions is hidden
    assert "jupyterhub_url" not in config.html_theme_options["launch_buttons"]


def test_unknown_edition_is_refused(monkeypatch):
    monkeypatch.setenv("BOOK_EDITION", "teacher")
    with pytest.raises(ValueError, match="one of"):
        editions.choose_edition(None, fake_config())


def test_jupyterhub_button_only_for_a_named_hub(monkeypatch):
    monkeypatch.setenv("BOOK_JUPYTERHUB_URL", "https://hub.school.example")
    config = fake_config()
    editions.choose_edition(None, config)
    buttons = config.html_theme_options["launch_buttons"]
    assert buttons == {"colab_url": "https://colab", "jupyterhub_url": "https://hub.school.example"}


def test_student_edition_removes_gated_solutions_too():
    from docutils import nodes
    from docutils.utils import new_document
    from sphinx_exercise.nodes import solution_node

    document = new_document("page")
    kept = nodes.paragraph(text="the exercise")
    document += kept
    solution = solution_node()
    solution += nodes.literal_block(text="answer = 42")
    document += solution
    assert editions.remove_solutions(document) == 1
    assert list(document.findall(solution_node)) == [] and kept.parent is document

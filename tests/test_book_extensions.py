"""The book's two small Sphinx extensions: offline web assets and student/instructor editions."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import editions  # noqa: E402
import offline_web  # noqa: E402
import seeded_cache  # noqa: E402


def fake_config(**values):
    defaults = {
        "html_static_path": [],
        "html_css_files": ["book.css"],
        "mathjax_path": "https://cdn.example/mathjax.js",
        "nb_ipywidgets_js": {"https://cdn.example/require.js": {}},
        "hide_solutions": False,
        "html_context": {},
        "html_theme_options": {"launch_buttons": {"colab_url": "https://colab"}},
    }
    return SimpleNamespace(**(defaults | values))


def test_offline_assets_replace_every_cdn_script(tmp_path):
    (tmp_path / "webassets" / "mathjax").mkdir(parents=True)
    (tmp_path / "webassets" / "mathjax" / "tex-chtml.js").write_text("")
    config = fake_config()
    offline_web.configure_offline_assets(SimpleNamespace(srcdir=str(tmp_path)), config)
    assert config.html_static_path == ["webassets"]
    assert config.mathjax_path == "mathjax/tex-chtml.js"
    assert not any("://" in url for url in config.nb_ipywidgets_js)
    assert config.html_css_files == ["book.css", "noto-sans-sc/400.css", "noto-sans-sc/700.css"]


def test_without_assets_the_cdn_defaults_stay(tmp_path):
    config = fake_config()
    offline_web.configure_offline_assets(SimpleNamespace(srcdir=str(tmp_path)), config)
    assert config.mathjax_path.startswith("https://")
    assert config.html_static_path == []
    assert config.html_css_files == ["book.css"]


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


@pytest.mark.parametrize(
    "seed, path",
    [
        ("", "_build/.jupyter_cache"),
        ("0", "_build/.jupyter_cache"),
        (" 2 ", "_build/.jupyter_cache-seed2"),
    ],
)
def test_each_book_seed_has_its_own_execution_cache(seed, path):
    assert seeded_cache.cache_path("_build/.jupyter_cache", seed) == path


def test_a_bad_book_seed_stops_the_build():
    with pytest.raises(ValueError, match="BOOK_SEED must be an integer"):
        seeded_cache.cache_path("_build/.jupyter_cache", "one")

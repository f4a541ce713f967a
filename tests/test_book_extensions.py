"""The book's two small Sphinx extensions: offline web assets and student/instructor editions."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import editions  # noqa: E402
import learner  # noqa: E402
import offline_web  # noqa: E402
import plain_math  # noqa: E402
import seeded_cache  # noqa: E402


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


def test_fonts_are_cut_again_only_when_the_pages_characters_change(tmp_path, monkeypatch):
    cuts = []

    def cut(srcdir, outdir, chars):
        cuts.append(set(chars))
        (outdir / "_static" / "book-fonts").mkdir(parents=True, exist_ok=True)
        (outdir / "_static" / "book-fonts" / "slice.woff").write_bytes(b"font")
        return ["@font-face{src:url(book-fonts/slice.woff)}"]

    monkeypatch.setattr(offline_web, "_chinese_fonts", cut)
    monkeypatch.setattr(offline_web, "_icon_fonts", lambda outdir, theme, used: [])
    (tmp_path / "_static").mkdir()
    page = tmp_path / "q1.html"
    app = SimpleNamespace(outdir=str(tmp_path), srcdir=str(tmp_path))
    app.builder = SimpleNamespace(format="html")
    css = tmp_path / "_static" / offline_web.FONTS_CSS

    page.write_text("<p>为什么</p>", encoding="utf-8")
    offline_web.write_fonts(app, None)
    first = css.read_text(encoding="utf-8")
    page.write_text("<p>为什么 again, in other words</p>", encoding="utf-8")
    offline_web.write_fonts(app, None)
    assert len(cuts) == 1 and css.read_text(encoding="utf-8") == first
    page.write_text("<p>为什么要</p>", encoding="utf-8")
    offline_web.write_fonts(app, None)
    assert len(cuts) == 2 and ord("要") in cuts[1]
    (tmp_path / "_static" / "book-fonts" / "slice.woff").unlink()
    offline_web.write_fonts(app, None)
    assert len(cuts) == 3, "a cut font that went missing is cut again"


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
    assert editions.is_student_edition(config) is hidden
    # sphinx-exercise must build every solution, or a gated one has no start to merge from.
    assert config.hide_solutions is False
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
    "edition, kept", [("student", ["cite-1"]), ("instructor", ["cite-1", "cite-2"])]
)
def test_a_footnote_cited_only_in_a_removed_solution_links_back_to_nothing_gone(edition, kept):
    from docutils import nodes
    from docutils.utils import new_document
    from sphinx_exercise.nodes import solution_node

    document = new_document("page")
    text = nodes.paragraph()
    text += nodes.footnote_reference(ids=["cite-1"], refid="fn")
    document += text
    solution = solution_node()
    solution += nodes.footnote_reference(ids=["cite-2"], refid="fn")
    document += solution
    footnote = nodes.footnote(ids=["fn"], backrefs=["cite-1", "cite-2"])
    document += footnote
    app = SimpleNamespace(config=fake_config(html_context={"book_edition": edition}))
    if edition == "student":
        editions.remove_solutions(document)
    editions.drop_dangling_backrefs(app, document, "page")
    assert footnote["backrefs"] == kept


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


class FakeConfig(dict):
    """Sphinx's config answers both config["name"] and config.name."""

    __getattr__ = dict.__getitem__


def theme_buttons(monkeypatch, pagename="book/q1_heads"):
    """A chapter page's header buttons, made by sphinx-book-theme's own functions."""
    from sphinx_book_theme.header_buttons import add_header_buttons
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    options = {
        "path_to_docs": "",
        "repository_url": "https://github.com/org/repo",
        "repository_branch": "main",
        "launch_buttons": {
            "binderhub_url": "https://mybinder.org",
            "colab_url": "https://colab.research.google.com",
            "jupyterhub_url": "https://hub.school.example",
            "notebook_interface": "jupyterlab",
        },
    }
    env = SimpleNamespace(
        doc2path=lambda name: f"/src/{name}.ipynb",
        metadata={pagename: {"kernelspec": {"name": "python3"}}},
        all_docs={pagename: 0},
    )
    app = SimpleNamespace(env=env, config=FakeConfig(html_theme_options=options))
    app.config["html_theme_options"] = options
    context = {
        "pagename": pagename,
        "header_buttons": [],
        "sourcename": f"{pagename}.ipynb",
        "page_source_suffix": ".ipynb",
        "pathto": lambda target, resource=0: f"../{target}",
        "github_url": "https://github.com",
        "github_user": "org",
        "github_repo": "repo",
    }
    add_launch_buttons(app, pagename, "page.html", context, object())
    import sphinx_book_theme.header_buttons as header_buttons

    monkeypatch.setattr(header_buttons, "get_theme_options_dict", lambda app: options)
    add_header_buttons(app, pagename, "page.html", context, object())
    return app, context


def urls(context):
    return [b.get("url") for g in context["header_buttons"] for b in g.get("buttons", [])]


def test_launch_and_download_buttons_open_the_learner_notebook(monkeypatch):
    app, context = theme_buttons(monkeypatch)
    before = [u for u in urls(context) if u and "q1_heads" in u]
    assert len(before) == 4 and all("book/q1_heads.ipynb" in u for u in before)
    learner.point_buttons_at_learner_notebook(app, "book/q1_heads", "page.html", context, object())
    after = {u.split("/")[2] if "://" in u else "download": u for u in urls(context) if u}
    assert after["mybinder.org"].endswith("?urlpath=lab/tree/notebooks/q1_heads.ipynb")
    assert after["colab.research.google.com"] == (
        "https://colab.research.google.com/github/org/repo/blob/main/notebooks/q1_heads.ipynb"
    )
    assert "urlpath=lab/tree/repo/notebooks/q1_heads.ipynb" in after["hub.school.example"]
    assert after["download"] == "../notebooks/q1_heads.ipynb"
    assert not any("book/q1_heads" in u for u in after.values())
    assert context["sourcename"] == ""  # Sphinx copies no MyST source into _sources


def test_pages_that_are_not_notebooks_keep_their_buttons(monkeypatch):
    app, context = theme_buttons(monkeypatch)
    app.env.doc2path = lambda name: f"/src/{name}.md"
    before = urls(context)
    learner.point_buttons_at_learner_notebook(app, "book/q1_heads", "page.html", context, object())
    assert urls(context) == before and context["sourcename"] == "book/q1_heads.ipynb"

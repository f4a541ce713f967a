"""The book's small Sphinx extensions: offline web assets, student/instructor editions, the
answers page and the others in book/_ext."""

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import answers  # noqa: E402
import chinese  # noqa: E402
import citations  # noqa: E402
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
    # setenv first, so that the variable static_explorers sets is removed again afterwards:
    # left set, it turned the live explorers of later tests in this process static.
    monkeypatch.setenv("BOOK_EXPLORERS", "")
    monkeypatch.delenv("BOOK_EXPLORERS")
    offline_web.static_explorers(None)
    import os

    from tutorial_lib.figures.explorer import STATIC_ENV

    assert os.environ[STATIC_ENV] == "static"


def test_fonts_are_cut_again_only_when_the_pages_characters_change(tmp_path, monkeypatch):
    cuts = []

    def cut(srcdir, outdir, pages):
        cuts.append(set().union(*pages.values()))
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


def test_the_book_numbers_nothing_so_numfig_can_stay_off():
    """editions.no_numbers turns numfig off: right only while no exercise is numbered and no
    page refers to a number. A numbered exercise would lose its number without a warning."""
    book = Path(__file__).resolve().parents[1] / "book"
    sources = {p.name: p.read_text() for p in [*book.glob("*.ipynb"), *book.glob("*.md")]}
    exercises = 0
    for name, text in sources.items():
        text = text.replace('\\n",\n    "', "\n")  # a notebook's source lines, joined
        for directive in re.finditer(r"\{exercise\}[^\n]*\n((?::[^\n]*\n)*)", text):
            exercises += 1
            assert ":nonumber:" in directive.group(1), f"{name}: a numbered exercise"
        assert "{numref}" not in text, f"{name} refers to a number"
    assert exercises >= 40  # the book's exercises were read
    config = SimpleNamespace(numfig=True)
    editions.no_numbers(None, config)
    assert config.numfig is False


def test_pybtex_searches_the_installed_plugins_once_per_question(monkeypatch):
    import pybtex.plugin

    searched = []

    def search(*, group, name=None):
        searched.append((group, name))
        return original(group=group) if name is None else original(group=group, name=name)

    original = pybtex.plugin.entry_points
    monkeypatch.setattr(pybtex.plugin, "entry_points", search)
    citations.setup(None)
    styles = [pybtex.plugin.find_plugin("pybtex.style.formatting", "unsrt") for _ in range(3)]
    labels = pybtex.plugin.find_plugin("pybtex.style.labels")  # the group's default
    names = pybtex.plugin.enumerate_plugin_names("pybtex.style.formatting")

    assert styles[0].__name__ == "Style" and styles[0] is styles[1] is styles[2]
    assert labels.__module__ == "pybtex.style.labels.number" and "unsrt" in names
    assert searched.count(("pybtex.style.formatting", "unsrt")) == 1
    kept = pybtex.plugin.entry_points
    citations.setup(None)  # a second build in the same process keeps the one cache
    assert pybtex.plugin.entry_points is kept


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


def test_a_changed_library_empties_the_execution_cache(tmp_path):
    """jupyter-cache keys an execution by the notebook's code alone: after a change to
    tutorial_lib, an unchanged chapter would show the old library's outputs."""
    library, cache = tmp_path / "tutorial_lib", tmp_path / "cache"
    library.mkdir()
    (library / "figures.py").write_text("LABEL = 'old'\n")
    (cache / "records").mkdir(parents=True)  # a cache filled before any stamp: kept
    old = seeded_cache.library_digest(library)
    assert not seeded_cache.forget_if_library_changed(cache, old)
    assert (cache / "records").is_dir()
    assert not seeded_cache.forget_if_library_changed(cache, old)  # the same library: kept
    (library / "figures.py").write_text("LABEL = 'new'\n")
    new = seeded_cache.library_digest(library)
    assert new != old
    assert seeded_cache.forget_if_library_changed(cache, new)
    assert not (cache / "records").exists()
    assert (cache / seeded_cache.LIBRARY_STAMP).read_text().strip() == new


def test_every_build_reads_its_chapters_again_after_a_library_change():
    """The Chinese and instructor builds find the cache refilled and stamped by the English
    build; their own pages, read with the old library, must still be read again."""
    env = SimpleNamespace(found_docs={"book/intro", "book/q0_lookup"})
    env.doc2path = lambda name: Path(f"/book/{name}.{'md' if name.endswith('intro') else 'ipynb'}")
    app = SimpleNamespace(library_digest="old")
    assert seeded_cache.chapters_to_read_again(app, env, set(), set(), set()) == [
        "book/q0_lookup"
    ]  # an environment from before the digest was kept: read again once
    assert seeded_cache.chapters_to_read_again(app, env, set(), set(), set()) == []
    app.library_digest = "new"
    assert seeded_cache.chapters_to_read_again(app, env, set(), set(), set()) == ["book/q0_lookup"]
    assert seeded_cache.chapters_to_read_again(app, env, set(), set(), set()) == []


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
    app = SimpleNamespace(env=env, config=FakeConfig(html_theme_options=options, language=None))
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


def test_the_chinese_pages_buttons_open_the_chinese_learner_notebook(monkeypatch):
    app, context = theme_buttons(monkeypatch)
    app.config.language = "zh_CN"
    learner.point_buttons_at_learner_notebook(app, "book/q1_heads", "page.html", context, object())
    after = {u.split("/")[2] if "://" in u else "download": u for u in urls(context) if u}
    assert after["colab.research.google.com"].endswith("/main/notebooks/zh/q1_heads.ipynb")
    assert after["mybinder.org"].endswith("?urlpath=lab/tree/notebooks/zh/q1_heads.ipynb")
    # The Chinese site serves its own notebooks: notebooks/ under zh/.
    assert after["download"] == "../notebooks/q1_heads.ipynb"


def test_fonts_are_cut_again_by_the_pages_that_use_each_character():
    pages = {"a.html": {1, 2, 3}, "b.html": {1, 2}, "c.html": {1, 9}}
    chars = {1, 2, 3, 9}
    slices = offline_web._slices(chars, pages)
    assert sorted(c for s in slices for c in s) == sorted(chars)
    # Used everywhere first, then by the same pages together.
    assert [c for s in slices for c in s] == [1, 2, 3, 9]
    many = {f"p{i}.html": {i} for i in range(100)}
    sizes = [len(s) for s in offline_web._slices(set(range(100)), many)]
    assert max(sizes) <= offline_web.SLICE_CHARS and sum(sizes) == 100


def test_a_font_cut_twice_is_the_same_bytes(tmp_path, monkeypatch):
    import pydata_sphinx_theme

    webfonts = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    source = webfonts / "static" / "vendor" / "fontawesome" / "webfonts" / "fa-solid-900.ttf"
    first, second = tmp_path / "first.woff2", tmp_path / "second.woff2"
    assert offline_web._subset(source, {0xF00C}, first)  # the check mark
    # A save stamps the font's head table with the time, unless told to keep the source's.
    monkeypatch.setattr("fontTools.ttLib.tables._h_e_a_d.timestampNow", lambda: 2**31)
    assert offline_web._subset(source, {0xF00C}, second)  # "a day later"
    assert first.read_bytes() == second.read_bytes()


def test_unused_icon_rules_leave_the_theme_stylesheet(tmp_path):
    styles = tmp_path / "_static" / "styles"
    styles.mkdir(parents=True)
    css = '.x{a:b}.fa-sun:before{content:"\\f185"}.fa-a:before,.fa-b:before{content:"\\f111"}'
    (styles / "pydata-sphinx-theme.css").write_text(css)
    offline_web._prune_icon_rules(tmp_path, {0xF185})
    assert (
        styles / "pydata-sphinx-theme.css"
    ).read_text() == '.x{a:b}.fa-sun:before{content:"\\f185"}'


def test_pages_that_are_not_notebooks_keep_their_buttons(monkeypatch):
    app, context = theme_buttons(monkeypatch)
    app.env.doc2path = lambda name: f"/src/{name}.md"
    before = urls(context)
    learner.point_buttons_at_learner_notebook(app, "book/q1_heads", "page.html", context, object())
    assert urls(context) == before and context["sourcename"] == "book/q1_heads.ipynb"


def chapter(title="# Q3a · Why add positions? (为什么?)", remember=None, *more):
    """A chapter notebook as JSON: a title cell, its 'What to remember' cell, more cells."""
    cells = [{"cell_type": "markdown", "source": [title, "\n\nIntro."]}]
    if remember is not None:
        cells.append({"cell_type": "markdown", "source": remember.splitlines(True)})
    cells += [{"cell_type": "markdown", "source": text} for text in more]
    return {"cells": cells, "metadata": {}}


REMEMBER = "(q3a-remember)=\n## What to remember\n\nPositions are added. Attention is $f$.\n"


def test_the_answer_is_the_remember_cell_without_its_label_and_heading():
    answer = answers.read_answer(chapter(remember=REMEMBER), "book/q3a_absolute_positions")
    assert answer.prefix == "q3a" and answer.name == "Q3a"
    assert answer.title == "Q3a · Why add positions? (为什么?)"
    assert answer.body == "Positions are added. Attention is $f$."


@pytest.mark.parametrize(
    "remember, complaint",
    [
        (None, "no 'What to remember' cell"),
        ("(q3a-remember)=\n## The short answer\n\nText.", "must be '## What to remember'"),
        (REMEMBER + "It is {glue:text}`acc:.2f` accurate.", "a glue role"),
        (REMEMBER + "As measured {footcite:p}`vaswani2017attention`.", "a footnote citation"),
        (REMEMBER + "\n## Experiments\n\nMore.", "a heading of its own"),
        ("(q3a-remember)=\n## What to remember\n", "is empty"),
    ],
)
def test_a_missing_or_unportable_answer_is_refused_with_a_reason(remember, complaint):
    with pytest.raises(ValueError, match=re.escape(complaint)):
        answers.read_answer(chapter(remember=remember), "book/q3a_absolute_positions")


def test_two_remember_cells_are_refused():
    with pytest.raises(ValueError, match="needs one"):
        answers.read_answer(chapter("# Q0 · T", REMEMBER, REMEMBER), "book/q0")


def answers_book(root, chapters):
    """A tiny book: _toc.yml with a Questions part in the given order, and its notebooks."""
    (root / "book").mkdir()
    entries = "\n".join(f"      - file: book/{name}" for name in chapters)
    (root / "_toc.yml").write_text(
        f"format: jb-book\nroot: book/intro\nparts:\n  - caption: Questions\n    chapters:\n"
        f"{entries}\n  - caption: Reference\n    chapters:\n      - file: book/answers\n"
    )
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "book" / "answers.md").write_text("# All the answers\n\n```{answers}\n```\n")
    for name, notebook in chapters.items():
        (root / "book" / f"{name}.ipynb").write_text(json.dumps(notebook))


def test_answers_come_in_the_order_of_the_table_of_contents(tmp_path):
    q1 = chapter("# Q1 · Why heads?", REMEMBER.replace("q3a", "q1"))
    q0 = chapter("# Q0 · What is it?", REMEMBER.replace("q3a", "q0"))
    answers_book(tmp_path, {"q1_heads": q1, "q0_lookup": q0, "q2_scaling": chapter("# Q2 · √")})
    found = answers.chapter_answers(tmp_path)
    assert [docname for docname, _, _ in found] == [
        "book/q1_heads",
        "book/q0_lookup",
        "book/q2_scaling",
    ]
    assert [a.prefix for _, _, a in found[:2]] == ["q1", "q0"]
    assert isinstance(found[2][2], ValueError)


def test_the_answers_page_builds_from_the_chapters_and_warns_for_one_without(tmp_path):
    from io import StringIO

    from sphinx.application import Sphinx

    q0 = chapter(
        "# Q0 · What does attention do? (注意力到底在做什么?)",
        "(q0-remember)=\n## What to remember\n\nIt is a soft lookup with $\\sqrt{d_k}$.\n",
    )
    answers_book(tmp_path, {"q0_lookup": q0, "q1_heads": chapter("# Q1 · Heads")})
    for name in ("q0_lookup", "q1_heads"):  # pages for the links (this Sphinx reads no notebooks)
        (tmp_path / "book" / f"{name}.md").write_text(f"# {name}\n")
    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_parser', 'answers']\nmyst_enable_extensions = ['dollarmath']\n"
        "exclude_patterns = ['_build']\nroot_doc = 'book/answers'\n"
    )
    warnings = StringIO()
    app = Sphinx(
        str(tmp_path), str(tmp_path), str(tmp_path / "_build"), str(tmp_path / "_build/.doctrees"),
        "html", status=None, warning=warnings, freshenv=True,
    )  # fmt: skip
    app.build()
    page = (tmp_path / "_build" / "book" / "answers.html").read_text()
    assert 'id="answer-q0"' in page and "注意力到底在做什么" in page
    assert "It is a soft lookup" in page and 'class="math' in page
    assert 'href="q0_lookup.html"' in page  # the link to the chapter
    assert "book/q1_heads has no 'What to remember' cell" in warnings.getvalue()


def _notebook(path, *sources):
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["kernelspec"] = kernel
    nbformat.write(notebook, path)
    return nbformat.read(path, as_version=4)


def test_chapters_execute_side_by_side_into_myst_nbs_cache(tmp_path, monkeypatch):
    """The waiting notebook finishes only if the other one runs while it waits; MyST-NB then
    finds both in the cache by its own match, outputs included; a failing one is left to
    MyST-NB, which executes it again and reports its traceback."""
    import execute_ahead
    from jupyter_cache import get_cache

    waits = _notebook(
        tmp_path / "waits.ipynb",
        "import pathlib, time\nfor _ in range(600):\n"
        "    if pathlib.Path('started').exists(): break\n    time.sleep(0.05)\n"
        "else:\n    raise RuntimeError('ran alone')",
        "print('saw the other')",
    )
    starts = _notebook(tmp_path / "starts.ipynb", "import pathlib; pathlib.Path('started').touch()")
    fails = _notebook(tmp_path / "fails.ipynb", "1 / 0")
    cache_dir = tmp_path / "cache"
    config = SimpleNamespace(
        nb_execution_mode="cache", nb_execution_cache_path=str(cache_dir),
        nb_execution_timeout=60, nb_execution_allow_errors=False,
    )  # fmt: skip
    (tmp_path / "page.md").write_text("# A page that executes nothing\n")
    suffix = {"page": ".md"}
    env = SimpleNamespace(
        doc2path=lambda name: str(tmp_path / f"{name}{suffix.get(name, '.ipynb')}")
    )
    monkeypatch.setenv("BOOK_EXECUTE_JOBS", "3")
    app, docnames = SimpleNamespace(config=config), ["fails", "page", "starts", "waits"]
    execute_ahead.execute_ahead(app, env, docnames)
    # Sphinx reads in the list's order: the page that waits for nothing first.
    assert docnames[0] == "page" and sorted(docnames[1:]) == ["fails", "starts", "waits"]
    for name in docnames:  # as Sphinx reads each: a chapter is waited for, then cached
        execute_ahead.cache_when_done(app, name, None)
    assert not app.execute_ahead_running

    cache = get_cache(str(cache_dir))
    _, executed = cache.merge_match_into_notebook(waits)
    assert executed.cells[1].outputs[0]["text"] == "saw the other\n"
    assert cache.match_cache_notebook(starts)
    with pytest.raises(KeyError):
        cache.match_cache_notebook(fails)


def test_a_translated_paragraph_belongs_to_its_page_not_to_the_translation():
    """Sphinx parses a translation as a document of its own, whose settings hold the build
    environment; a page pickled with a node still pointing there would carry all of it."""
    import pickle

    from docutils import nodes
    from docutils.utils import new_document

    page = new_document("book/intro.md")
    translation = new_document("book/intro.md:3:<translated>")
    translation.settings.env = "the whole build environment"
    emphasis = nodes.emphasis("", "", nodes.Text("一次一个问题"))
    emphasis.document = translation
    paragraph = nodes.paragraph("", "", emphasis)
    paragraph.document = translation
    page += paragraph  # moved into the page, as Sphinx's Locale transform moves it
    assert emphasis.document is translation
    chinese.own_translated_nodes(None, page)
    assert all(node.document is page for node in page.findall())
    assert b"the whole build environment" not in pickle.dumps(page)


def test_the_chinese_search_keeps_short_stemmed_latin_words_whole_as_before(monkeypatch):
    from sphinx.search.zh import SearchChinese

    monkeypatch.setattr(SearchChinese, "latin_terms", [])
    chinese.setup(SimpleNamespace(connect=lambda *args, **kwargs: None))
    search = SearchChinese({})
    search.split("注意力 abs ones")  # Latin words, remembered as such
    # "abs" stems to "ab", too short: kept whole, because it was split as a Latin word.
    assert search.stem("abs") == "abs" and search.stem("ones") == "one"
    assert search.stem("ies") == "ie"  # never split as a Latin word: stemmed
    assert isinstance(SearchChinese.latin_terms, chinese.LatinTerms)


def test_execute_ahead_says_why_a_chapter_failed():
    import execute_ahead

    traceback = (
        "An error occurred while executing the following cell:\n------------------\n"
        "assert x > 5\n------------------\n\n\x1b[0;31mAssertionError\x1b[0m  Traceback\n"
        "Cell \x1b[0;32mIn[3], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m assert x > 5\n"
    )
    err = RuntimeError(traceback)
    err.ename = "AssertionError"
    assert execute_ahead.why(err) == "AssertionError at `assert x > 5`"
    assert execute_ahead.why(TimeoutError("kernel did not start")) == "TimeoutError"

"""A chapter's launch and download buttons open its learner notebook, never its MyST source.

sphinx-book-theme 1.3.0 builds the Binder, JupyterHub and Colab links from the page's
own path (``book/q1_heads.ipynb``) and offers the source file itself, copied by Sphinx
into ``_sources/``, as the ".ipynb" download. That source is the book's MyST notebook,
solutions included. This extension, after the theme has made its buttons:

* points every launch link at the committed learner notebook, ``notebooks/<chapter>.ipynb``,
  in the same repository and branch (Colab reads it from there);
* points the download button at the learner notebook of this edition, which it writes
  into the site as ``notebooks/<chapter>.ipynb`` when the build finishes (student
  edition: no solutions; instructor edition: with them);
* stops Sphinx from copying the chapter's source into ``_sources/``.

The Chinese edition's buttons open the Chinese learner notebooks, ``notebooks/zh/``.
"""

from pathlib import Path

import learner_notebooks
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

NOTEBOOKS = "notebooks"


def _is_chapter(app, pagename: str) -> bool:
    return pagename in app.env.all_docs and Path(app.env.doc2path(pagename)).suffix == ".ipynb"


def point_buttons_at_learner_notebook(app, pagename, templatename, context, doctree):
    if doctree is None or not _is_chapter(app, pagename):
        return
    name = Path(pagename).name
    book_path = app.config.html_theme_options.get("path_to_docs", "").strip("/")
    source = f"{book_path}/{pagename}.ipynb" if book_path else f"{pagename}.ipynb"
    learner = f"{NOTEBOOKS}/{name}.ipynb"  # in this edition's own site
    chinese = (app.config.language or "en").startswith("zh")
    committed = f"{NOTEBOOKS}/zh/{name}.ipynb" if chinese else learner  # in the repository
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            url = button.get("url", "")
            if group.get("label") == "launch-buttons" and url:
                if url.count(source) != 1:
                    raise ExtensionError(f"learner: cannot find {source} in the launch link {url}")
                button["url"] = url.replace(source, committed)
            if button.get("label") == "download-source-button":
                button["url"] = context["pathto"](learner, 1)
                button["tooltip"] = "下载 notebook" if chinese else "Download the notebook"
    # Without a source name Sphinx copies nothing into _sources: the MyST source holds solutions.
    context["sourcename"] = ""


def write_learner_notebooks(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    root = Path(app.srcdir)
    outdir = Path(app.outdir)
    # The edition book/_ext/editions.py chose (hide_solutions is always off, see there).
    edition = app.config.html_context.get("book_edition", "student")
    try:
        learner_notebooks.write_learner_notebooks(
            root,
            outdir,
            outdir / NOTEBOOKS,
            edition,
            cache_path=root / app.config.nb_execution_cache_path,
            url=app.config.html_baseurl,
            language="zh" if (app.config.language or "en").startswith("zh") else "en",
            # Beside the doctrees: what each notebook was last written from (see there).
            keys=Path(app.doctreedir) / "learner_notebooks.json",
        )
    except learner_notebooks.LearnerError as error:
        raise ExtensionError(f"learner notebooks: {error}") from error
    # A site built before this extension kept the sources; leave none behind.
    for docname in app.env.all_docs:
        if _is_chapter(app, docname):
            (outdir / "_sources" / f"{docname}.ipynb").unlink(missing_ok=True)
    logger.info("learner: wrote the %s edition's notebooks into %s/", edition, NOTEBOOKS)


def setup(app):
    # After sphinx-book-theme's own html-page-context handlers (priority 501).
    app.connect("html-page-context", point_buttons_at_learner_notebook, priority=600)
    app.connect("build-finished", write_learner_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

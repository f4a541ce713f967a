"""One site, two languages: what the English and the Chinese editions share.

The English book is the site's root (``_build/html``), the Chinese edition its folder
``zh/`` (``_build/html/zh``), built from the same sources and execution cache with
``_config.zh.yml`` (book/_ext/translations.py, book/_ext/chinese.py). This extension, in both:

* puts a language switch in every page's header, a link to the same page in the other
  language;
* gives each edition its own address, ``html_baseurl`` (the Chinese one ends in ``zh/``);
* makes each exercise's title translatable: sphinx-exercise parses it without a source, so
  Sphinx would neither extract it into the catalogs nor translate it;
* makes each table cell translatable, for the same reason: MyST gives a Markdown table's
  cells no source (only the table has one).
"""

from __future__ import annotations

import figure_text
import translations
from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx_exercise.directive import ExerciseDirective
from sphinx_exercise.nodes import exercise_subtitle

# What the switch says, in the language it leads to (a reader of the other language reads it).
SWITCH = {
    "en": {"text": "English", "title": "Read this page in English", "hreflang": "en"},
    "zh": {"text": "中文", "title": "阅读本页的中文版", "hreflang": "zh-CN"},
}


def is_chinese(config) -> bool:
    return (config.language or "en").startswith("zh")


def edition_address(app, config):
    """The Chinese edition's pages live under ``zh/`` of the English book's address."""
    language = "zh" if is_chinese(config) else "en"
    config.html_context = {**config.html_context, "book_language": language}
    base = config.html_baseurl.rstrip("/")
    if language == "zh" and not base.endswith(f"/{translations.SITE_FOLDER}"):
        config.html_baseurl = f"{base}/{translations.SITE_FOLDER}/"
    options = dict(config.html_theme_options)
    end = list(options.get("article_header_end") or ["article-header-buttons.html"])
    if "language-switch.html" not in end:
        options["article_header_end"] = ["language-switch.html", *end]
    config.html_theme_options = options


def language_switch(app, pagename, templatename, context, doctree):
    """A link to this page in the other edition, relative, so it works offline too."""
    root = context["pathto"]("index", 1).rpartition("/")[0]  # "" at the top, ".." below
    root = f"{root}/" if root else ""
    if is_chinese(app.config):
        url, to = f"{root}../{pagename}.html", "en"
    else:
        url, to = f"{root}{translations.SITE_FOLDER}/{pagename}.html", "zh"
    context["book_language_switch"] = {"url": url, **SWITCH[to]}


class TranslatableExercise(ExerciseDirective):
    """sphinx-exercise's exercise, whose title Sphinx can extract and translate."""

    def run(self):
        found = super().run()
        if self.arguments:
            source, line = self.state_machine.get_source_and_line(self.lineno)
            for node in found:
                for subtitle in node.findall(exercise_subtitle):
                    subtitle.rawsource = self.arguments[0]
                    subtitle.source, subtitle.line = source, line
        return found


class TranslatableTableCells(SphinxTransform):
    """A Markdown table's cells with their table's source and line, so that Sphinx extracts
    them into the catalogs and translates them (it skips a text without a source as built-in)."""

    default_priority = 15  # before Sphinx's Locale transform (20), which translates

    def apply(self, **kwargs):
        for table in self.document.findall(nodes.table):
            for cell in table.findall(nodes.paragraph):
                if not cell.source and table.source:
                    cell.source, cell.line = table.source, table.line


def setup(app):
    app.add_transform(TranslatableTableCells)
    app.connect("config-inited", edition_address, priority=200)
    app.connect("html-page-context", language_switch)
    app.add_directive("exercise", TranslatableExercise, override=True)
    app.add_directive("exercise-start", TranslatableExercise, override=True)
    figure_text.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

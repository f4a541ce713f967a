"""The Chinese edition's own build steps (loaded by ``_config.zh.yml`` alone).

``_config.zh.yml`` sets ``language: zh_CN`` and reads the catalogs from ``_build/locales``;
this extension writes those from the committed ones in ``locales/`` before Sphinx reads a
page (book/_ext/translations.py says how they differ), so an edited translation is picked up
by the next build, which re-reads only the pages whose catalog changed.

It also records, page by page, every message the build showed in English because its catalog
had no translation for it (untranslated, fuzzy, or a catalog older than the English text:
``make pot`` not run after an edit), in ``untranslated.json`` beside the built site, which
``tests/built/test_chinese.py`` reads.
"""

import json
import re
from pathlib import Path

import translations
from docutils import nodes
from sphinx.search.zh import SearchChinese
from sphinx.util import logging
from sphinx.util.nodes import extract_messages
from sphinx_exercise.nodes import exercise_title

logger = logging.getLogger(__name__)
REPORT = "untranslated.json"


def prepare_catalogs(app, config):
    changed = translations.build_catalogs(Path(app.srcdir))
    if changed:
        logger.info("chinese: catalogs changed for %s", ", ".join(changed))


def search_words(app, config):
    """The glossary's Chinese terms as words of the search index: jieba would split 软查找
    into 软 and 查找, and a reader's search for the term would miss the chapters using it."""
    glossary = (Path(app.srcdir) / "book" / "glossary.md").read_text(encoding="utf-8")
    terms = set()
    for line in glossary.splitlines():
        # A term line: short, unindented, Chinese (the page's prose lines are longer).
        if 0 < len(line) <= 20 and not line[0].isspace() and re.search(r"[\u4e00-\u9fff]", line):
            terms |= {t.strip() for t in re.split(r"[、，,]", line) if t.strip()}
    words = Path(app.srcdir) / "_build" / "search-words.zh.txt"
    words.parent.mkdir(parents=True, exist_ok=True)
    words.write_text("".join(f"{t} 1000\n" for t in sorted(terms) if " " not in t), "utf-8")
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(words)}


class LatinTerms(set):
    """Sphinx 7's Chinese search index keeps every Latin word it has split, repeats included,
    in one list, and looks each word up in that list before stemming it: time that grows with
    the square of the book's English words, about 20 s of the Chinese edition's build. A set
    answers the same question (was the word split as Latin?) at once; the index is the same."""

    def extend(self, words):
        self.update(words)


def note_untranslated(app, doctree):
    """After Sphinx's Locale transform: the messages it left in English."""
    left = [
        msg
        for node, msg in extract_messages(doctree)
        # An exercise's title holds its label and its subtitle, translated on their own.
        if not node.get("translated")
        and not isinstance(node, exercise_title)
        # A figure's alt text is translated in place, without the node's "translated" flag.
        and not (isinstance(node, nodes.image) and re.search(r"[\u4e00-\u9fff]", msg))
        # A message without a Latin letter needs none (the toc's captions come translated).
        and re.search("[A-Za-z]", msg)
    ]
    if not hasattr(app.env, "book_untranslated"):
        app.env.book_untranslated = {}
    app.env.book_untranslated[app.env.docname] = left


def own_translated_nodes(app, doctree):
    """Point every node of a page at the page. Sphinx's Locale transform parses each
    translation as a document of its own and moves its nodes into the page; they kept pointing
    at that throwaway document, whose settings hold the whole build environment, so each
    pickled Chinese page carried a copy of it (6 MB a page, 43 MB of doctrees, which a rebuild
    loads whole to number figures: 6 s of a rebuild after a prose edit). A node read from the
    English source points at its page already; the HTML is the same."""
    for node in doctree.findall():
        if node.document is not doctree:
            node.document = doctree


def purge(app, env, docname):
    getattr(env, "book_untranslated", {}).pop(docname, None)


def write_report(app, exception):
    if exception is None and app.builder.format == "html":
        report = dict(sorted(getattr(app.env, "book_untranslated", {}).items()))
        text = json.dumps(report, indent=1, ensure_ascii=False)
        (Path(app.outdir).parent / REPORT).write_text(text, encoding="utf-8")


def setup(app):
    if not isinstance(SearchChinese.latin_terms, LatinTerms):
        SearchChinese.latin_terms = LatinTerms(SearchChinese.latin_terms)
    app.connect("config-inited", prepare_catalogs, priority=100)
    app.connect("config-inited", search_words, priority=100)
    app.connect("doctree-read", note_untranslated)
    app.connect("doctree-read", own_translated_nodes)
    app.connect("env-purge-doc", purge)
    app.connect("build-finished", write_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 5}

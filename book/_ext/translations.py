"""The Chinese edition's catalogs: one source, one execution, two languages.

The prose of every page is translated with Sphinx's gettext machinery: ``make pot`` extracts
every message of the instructor edition (so solutions are translated too) and updates one
catalog per page in ``locales/zh_CN/LC_MESSAGES/`` (``book/q0_lookup.po`` for
``book/q0_lookup.ipynb``); the Chinese build reads them. This module is what both steps share,
and the command line behind ``make pot`` and ``make book``:

``python book/_ext/translations.py pot``
    after the gettext build: add what Sphinx cannot extract (the book's title and the table of
    contents' part captions, the text drawn in each chapter's SVG figures), then update the
    catalogs with sphinx-intl.
``python book/_ext/translations.py config``
    write ``_config.zh.yml`` and ``_toc.zh.yml`` from the English ones (never kept as copies:
    they are generated before every Chinese build, and git ignores them), and the catalogs
    the build reads (``_build/locales``).

The catalogs the build reads differ from the committed ones in two ways. A translated
paragraph is parsed again after MyST-NB has filled the page's glue values, so a plain
``{glue:text}`key:fmt``` would render empty there; it is rewritten to MyST-NB's
cross-notebook form, ``{glue:text}`<chapter>.ipynb::key:fmt```, which reads the value the
chapter's execution wrote (always with a format: myst-nb 1.4.0 mis-splits the form without
one). And *All the answers* copies each chapter's "What to remember", so its catalog also
holds the chapters' translations of those paragraphs, which ``make pot`` leaves out of
``book/answers.po``.
"""

from __future__ import annotations

import argparse
import copy
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import figure_text
import yaml

ROOT = Path(__file__).resolve().parents[2]
LANGUAGE = "zh_CN"
# Where the Chinese edition lives in the site, and in the published book's address.
SITE_FOLDER = "zh"
CATALOGS = Path("locales") / LANGUAGE / "LC_MESSAGES"
BUILD_LOCALES = Path("_build") / "locales"
POT = Path("_build") / "pot" / "_build" / "gettext"
TEMPLATES = Path("_build") / "pot" / "templates"
# Messages that are not a page's: the book's title and the part captions of _toc.yml.
BOOK_DOMAIN = "book-title-and-parts"
ANSWERS = "book/answers"
API = "book/api"

GLUE_TEXT = re.compile(r"\{glue(?::text)?\}`(?P<content>[^`]+)`")


def rewrite_glue(text: str, notebook: str) -> str:
    """``{glue:text}`key:fmt``` -> ``{glue:text}`notebook::key:fmt```, the form a translated
    paragraph can resolve (see the module docstring); other roles are left alone."""

    def cross_notebook(match: re.Match) -> str:
        content = match.group("content")
        if "::" in content:
            return match.group(0)
        key, _, spec = content.partition(":")
        return f"{{glue:text}}`{notebook}::{key}:{spec or 's'}`"

    return GLUE_TEXT.sub(cross_notebook, text)


# Where a message starts in a Markdown cell: a line's start after block markers (heading, list
# item, quote, a directive's line with its argument), or a table cell's bar.
_LEAD = (
    r"(^(?:[ \t]*(?:#{1,6}|[*+-]|\d+[.)]|>)[ \t]+)*[ \t]*|^[ \t]*:{3,}\{[\w-]+\}[ \t]+|\|[ \t]*)"
)
_END = r"(?=[ \t]*(?:\||$))"


def translate_markdown(source: str, messages: dict[str, str]) -> str:
    """A Markdown cell with each message that fills a whole block replaced by its translation.

    Sphinx extracts a block (paragraph, heading, list item, table cell, title) with its line
    breaks as spaces; in the cell they may be line breaks and indentation. Longer messages go
    first, so a short one never replaces part of a longer one. A message can match only where
    each of its words stands in the cell as written, so most of a page's messages are skipped
    before a pattern is made (10 s of the Chinese build went to patterns that could not match)."""
    for message in sorted(messages, key=len, reverse=True):
        words = message.split()
        if not words or not all(word in source for word in words):
            continue
        body = r"\s+".join(re.escape(word) for word in words)
        pattern = re.compile(_LEAD + body + _END, re.M)
        replacement = messages[message]
        source = pattern.sub(lambda m, r=replacement: m.group(1) + r, source)
    return source


def read_po(path: Path):
    from babel.messages.pofile import read_po as babel_read_po

    with open(path, "rb") as stream:
        return babel_read_po(stream, locale=LANGUAGE, abort_invalid=True)


def po_text(catalog) -> bytes:
    from babel.messages.pofile import write_po

    out = io.BytesIO()
    write_po(out, catalog, width=0, omit_header=False, include_previous=False)
    return out.getvalue()


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write only a change: Sphinx re-reads a page whose catalog is newer than its build."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def translated(message) -> bool:
    """A message the build shows in Chinese: not empty, not fuzzy (Sphinx skips fuzzy ones)."""
    return bool(message.id) and bool(message.string) and not message.fuzzy


def catalog_paths(root: Path = ROOT) -> dict[str, Path]:
    """Every committed catalog, by domain (``book/q0_lookup``)."""
    folder = root / CATALOGS
    return {p.relative_to(folder).with_suffix("").as_posix(): p for p in folder.rglob("*.po")}


def build_catalogs(root: Path = ROOT) -> list[str]:
    """Write the catalogs the Chinese build reads into ``_build/locales``; return the domains
    whose catalog changed."""
    paths = catalog_paths(root)
    catalogs = {domain: read_po(path) for domain, path in paths.items()}
    changed = []
    chapters = {d for d in catalogs if (root / f"{d}.ipynb").is_file()}
    for domain, catalog in catalogs.items():
        catalog = copy.deepcopy(catalog)
        if domain == ANSWERS:
            # The answers page shows every chapter's "What to remember" and title.
            for chapter in sorted(chapters):
                for message in catalogs[chapter]:
                    if message.id and message.id not in catalog:
                        catalog[message.id] = copy.copy(message)
        for message in catalog:
            if message.id and message.string:
                notebook = None
                if domain in chapters:
                    notebook = Path(domain).name + ".ipynb"
                if notebook:
                    message.string = rewrite_glue(message.string, notebook)
        target = root / BUILD_LOCALES / LANGUAGE / "LC_MESSAGES" / f"{domain}.po"
        if write_if_changed(target, po_text(catalog)):
            changed.append(domain)
    return changed


def book_strings(root: Path = ROOT) -> list[str]:
    """The book's title and the part captions of ``_toc.yml``: Sphinx extracts neither."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [config["title"], *(part["caption"] for part in toc.get("parts", []))]


def book_translations(root: Path = ROOT) -> dict[str, str]:
    path = root / CATALOGS / f"{BOOK_DOMAIN}.po"
    if not path.is_file():
        return {}
    return {m.id: m.string for m in read_po(path) if translated(m)}


def write_config(root: Path = ROOT) -> None:
    """``_config.zh.yml`` and ``_toc.zh.yml``, made from the English ones (see the docstring)."""
    names = book_translations(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    config["title"] = names.get(config["title"], config["title"])
    sphinx = config.setdefault("sphinx", {})
    settings = sphinx.setdefault("config", {})
    settings["language"] = LANGUAGE
    settings["locale_dirs"] = [BUILD_LOCALES.as_posix()]
    sphinx.setdefault("local_extensions", {})["chinese"] = "book/_ext"
    for part in toc.get("parts", []):
        part["caption"] = names.get(part["caption"], part["caption"])
    header = "# Made from _config.yml and _toc.yml by book/_ext/translations.py: do not edit.\n"
    for name, data in (("_config.zh.yml", config), ("_toc.zh.yml", toc)):
        text = header + yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
        write_if_changed(root / name, text.encode("utf-8"))
    build_catalogs(root)


def doctree_messages(doctree: Path) -> list[str]:
    """What Sphinx translates but its gettext build does not extract: exercise titles
    (sphinx-exercise rebuilds them before extraction; book/_ext/languages.py gave them a
    source) and the alt text of figures (the gettext build shows outputs as plain text)."""
    import pickle

    from docutils import nodes
    from sphinx_exercise.nodes import exercise_subtitle

    if not doctree.is_file():
        return []
    with open(doctree, "rb") as stream:
        document = pickle.load(stream)
    found = [n.rawsource for n in document.findall(exercise_subtitle) if n.rawsource]
    found += [n["alt"] for n in document.findall(nodes.image) if n.get("alt")]
    return list(dict.fromkeys(found))


def update_catalogs(root: Path = ROOT) -> None:
    """After the gettext build: complete the templates, then update the committed catalogs."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    pot = root / POT
    if not (pot / "book" / "intro.pot").is_file():
        raise SystemExit(f"no templates in {POT}: `make pot` runs the gettext build first")
    # The completed templates go beside Sphinx's, which stay as the gettext build wrote them.
    out = root / TEMPLATES
    shutil.rmtree(out, ignore_errors=True)
    templates = {
        p.relative_to(pot).with_suffix("").as_posix(): read_po(p) for p in pot.rglob("*.pot")
    }
    # Sphinx's own and the theme's template strings come translated with them.
    templates.pop("sphinx", None)
    extra = Catalog(project="book", locale=None)
    for text in book_strings(root):
        extra.add(text)
    templates[BOOK_DOMAIN] = extra
    cache = root / "_build" / ".jupyter_cache"
    chapter_ids = set()
    for domain, template in templates.items():
        for text in doctree_messages(pot.parent / ".doctrees" / f"{domain}.doctree"):
            if text not in template:
                template.add(text)
        if (root / f"{domain}.ipynb").is_file():
            chapter_ids |= {m.id for m in template if m.id}
            # The text drawn in the chapter's figures and explorer frames, as the build drew it.
            for text in figure_text.chapter_strings(root / f"{domain}.ipynb", cache):
                if text not in template:
                    template.add(text, auto_comments=[figure_text.COMMENT])
                elif figure_text.COMMENT not in template[text].auto_comments:
                    template[text].auto_comments.append(figure_text.COMMENT)  # drawn and written
    for message in list(templates[ANSWERS]):
        if message.id and message.id in chapter_ids:
            del templates[ANSWERS][message.id]
    for domain, template in templates.items():
        target = out / f"{domain}.pot"
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as stream:
            write_po(stream, template, width=0)
    subprocess.run(
        [
            sys.executable, "-m", "sphinx_intl", "update", "--pot-dir", str(out),
            "--locale-dir", str(root / "locales"), "--language", LANGUAGE, "--line-width", "-1",
        ],
        check=True,
    )  # fmt: skip
    # sphinx-intl leaves a catalog whose ids did not change as it was, comments included: a text
    # written in prose and also drawn (a table's "method") needs the figure mark there too,
    # since the Chinese build translates drawn text only from marked messages.
    for domain, template in templates.items():
        drawn = {m.id for m in template if figure_text.COMMENT in m.auto_comments}
        path = root / CATALOGS / f"{domain}.po"
        catalog = read_po(path) if drawn and path.is_file() else []
        unmarked = [
            m for m in catalog if m.id in drawn and figure_text.COMMENT not in m.auto_comments
        ]
        for message in unmarked:
            message.auto_comments.append(figure_text.COMMENT)
        if unmarked:
            path.write_bytes(po_text(catalog))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("pot", "config"))
    args = parser.parse_args(argv)
    if args.step == "pot":
        update_catalogs()
    else:
        write_config()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())

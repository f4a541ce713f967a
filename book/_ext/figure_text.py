"""The text drawn in figures and explorer frames, extracted for the catalogs and translated
in the Chinese build, so the book still executes once.

A chapter's figures are drawn when the book executes: SVG images (matplotlib with
``svg.fonttype: none``, so text stays text) and explorers, whose every frame is HTML with SVG
panels, kept in a ``<script>`` as JSON pieces. Both languages share that one execution:

* ``make pot`` reads each chapter's drawn text from the execution cache (its HTML and SVG
  outputs, as the English build shows them) and adds it to the chapter's catalog, marked
  "drawn in a figure";
* in the Chinese build, it replaces each drawn text by its translation while the page is
  written: in the pages' HTML outputs (explorers, diagrams), and in the SVG figures, which it
  then puts in the page itself, where the Chinese font the site serves reaches their text.
  Raster frames (PNG) keep their English.

Numbers in drawn text change with the parameters of a frame and with the seed, so a message
stands for every text that differs from it only in its numbers: each number is written
``{n}`` in the message and put back, in order, into the translation. Text without two
letters in a row (ticks, numbers, single letters) is left alone.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from docutils import nodes

COMMENT = "drawn in a figure"
NUMBER = re.compile(r"(?<![A-Za-z_\d])[+\-−]?\d+(?:\.\d+)?(?:e[+\-−]?\d+)?")
WORDS = re.compile(r"[A-Za-z]{2}")
# A text run between two tags, an SVG <text>'s words, a label's, a title's.
RUN = re.compile(r"(?<=>)([^<>]+)(?=<|$)")
ARIA = re.compile(r'(aria-label=")([^"]*)(")')
SCRIPT_DATA = re.compile(r"(var data = )(\{.*?\})(;\n)", re.S)
SKIPPED_TAGS = re.compile(r"<(style|code|pre|script|metadata)\b.*?</\1>", re.S)


def template(text: str) -> tuple[str, list[str]] | None:
    """The message a drawn text belongs to and its numbers; None for text that stays."""
    text = " ".join(unescape(text).split())
    if not WORDS.search(text):
        return None
    numbers = NUMBER.findall(text)
    return NUMBER.sub("{n}", text), numbers


def fill(translation: str, numbers: list[str]) -> str | None:
    """The translation with the text's numbers put back; None when the counts differ."""
    if translation.count("{n}") != len(numbers):
        return None
    parts = translation.split("{n}")
    out = parts[0]
    for number, part in zip(numbers, parts[1:], strict=True):
        out += number + part
    return out


def _runs(markup: str):
    """The runs of drawn text in a piece of HTML or SVG, outside styles, scripts and code."""
    kept = SKIPPED_TAGS.sub("", markup)
    for match in RUN.finditer(kept):
        yield match.group(1)
    for match in ARIA.finditer(kept):
        yield match.group(2)


def strings(markup: str) -> list[str]:
    """Every message in a piece of HTML or SVG, frames of an explorer included."""
    found = []
    texts = list(_runs(markup))
    for data in SCRIPT_DATA.finditer(markup):
        for piece in json.loads(data.group(2)).get("pieces", []):
            texts += list(_runs(piece))
    for text in texts:
        shape = template(text)
        if shape and shape[0] not in found:
            found.append(shape[0])
    return found


def translate(markup: str, table: dict[str, str]) -> str:
    """``markup`` with every drawn text that has a translation in ``table`` translated."""
    from html import escape

    def one(text: str) -> str:
        shape = template(text)
        if shape is None or not table.get(shape[0]):
            return text
        done = fill(table[shape[0]], shape[1])
        if done is None:
            return text
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        return lead + escape(done, quote=False) + trail

    def runs(part: str) -> str:
        spans, last, out = [m.span() for m in SKIPPED_TAGS.finditer(part)], 0, []
        for start, end in [*spans, (len(part), len(part))]:
            chunk = part[last:start]
            chunk = RUN.sub(lambda m: one(m.group(1)), chunk)
            chunk = ARIA.sub(lambda m: m[1] + one(m[2]).replace('"', "&quot;") + m[3], chunk)
            out += [chunk, part[start:end]]
            last = end
        return "".join(out)

    def data(match: re.Match) -> str:
        value = json.loads(match.group(2))
        value["pieces"] = [runs(piece) for piece in value.get("pieces", [])]
        dumped = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return match.group(1) + dumped.replace("</", "<\\/") + match.group(3)

    # The explorer's frames first (inside its script, which the runs skip), then the rest.
    return runs(SCRIPT_DATA.sub(data, markup))


def chapter_strings(source: Path, cache_path: Path) -> list[str]:
    """Every message drawn in one chapter's outputs, from the book's execution cache."""
    import nbformat
    from jupyter_cache import get_cache

    notebook = nbformat.read(source, as_version=4)
    try:
        _, executed = get_cache(str(cache_path)).merge_match_into_notebook(notebook)
    except KeyError:
        message = f"{source.name} has changed since the book was built: run `make book`"
        raise SystemExit(message) from None
    found = []
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for mime in ("text/html", "image/svg+xml"):
                if mime in data:
                    text = data[mime]
                    found += strings("".join(text) if isinstance(text, list) else text)
                    break
    return list(dict.fromkeys(found))


# -- the Sphinx side ----------------------------------------------------------------------------

DIAGRAM_CLASS = "book-diagram"  # the class book_diagrams.py gives the HTML it writes


def _outputs(doctree):
    """The raw HTML outputs and the SVG images of a chapter's executed cells, and the diagrams
    a Markdown page draws with the ``{diagram}`` directive (book_diagrams.py)."""
    for raw in doctree.findall(nodes.raw):
        if DIAGRAM_CLASS in raw.get("classes", []):
            yield raw
    for node in doctree.findall(nodes.container):
        if "cell_output" not in node.get("classes", []):
            continue
        for raw in node.findall(nodes.raw):
            if "html" in raw.get("format", "").split():
                yield raw
        for image in node.findall(nodes.image):
            if image["uri"].endswith(".svg"):
                yield image


def _table(app) -> dict[str, str]:
    if not hasattr(app, "_figure_text_table"):
        import translations

        table = {}
        for path in translations.catalog_paths(Path(app.srcdir)).values():
            for message in translations.read_po(path):
                if translations.translated(message) and COMMENT in message.auto_comments:
                    table[message.id] = message.string
        app._figure_text_table = table
    return app._figure_text_table


def with_book_font(markup: str) -> str:
    """Drawn text that names its fonts names the site's Noto Sans SC first. Its faces cover
    only Chinese characters (unicode-range), so the rest keeps the fonts it was drawn with."""
    markup = re.sub(r"font-family: ?(?!'Noto)", "font-family: 'Noto Sans SC', ", markup)
    # As an attribute; inside an explorer's frames (JSON) its quote is escaped.
    attribute = re.compile(r'font-family=(\\?)"(?!\'Noto)')
    return attribute.sub(lambda m: f"font-family={m[1]}\"'Noto Sans SC', ", markup)


def _readable(colour: str) -> str:
    """The colour, darkened just enough to read at 4.5:1 on white."""

    def luminance(rgb):
        lin = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    while 1.05 / (luminance(rgb) + 0.05) < 4.5:
        rgb = [max(0, c - 4) for c in rgb]
    return "#" + "".join(f"{c:02x}" for c in rgb)


PATH_TOKEN = re.compile(r"[A-Za-z]|-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def compact_path(d: str) -> str:
    """Path data to a tenth of a point (under a seventh of a CSS pixel), with no space it does not
    need: matplotlib writes "L 131.26 -225.12 " per point, this "L131.3-225.1" (a third less)."""
    out = []
    for token in PATH_TOKEN.findall(d):
        if not token[0].isalpha():
            token = f"{float(token):.1f}".rstrip("0").rstrip(".")
            token = "0" if token == "-0" else token
            if out and not out[-1].isalpha() and not token.startswith("-"):
                out.append(" ")
        out.append(token)
    return "".join(out)


def inline_svg(svg: str, alt: str, uid: str) -> str:
    """A translated SVG image as markup in the page: an image file cannot use the page's web
    fonts, so its Chinese would need a font on the reader's system. Its style is scoped to it."""
    from html import escape

    svg = re.sub(
        r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<metadata>.*?</metadata>|<!--.*?-->", "", svg, flags=re.S
    )
    # In the page it counts towards the page's weight: no indentation, and coordinates to a
    # hundredth of a point (tags only: drawn text such as a tick label keeps every digit).
    svg = re.sub(r"\n\s+", "\n", svg)
    svg = re.sub(r' d="([^"]*)"', lambda m: f' d="{compact_path(m[1])}"', svg)
    svg = re.sub(r"<[^>]+>", lambda tag: re.sub(r"(\d\.\d\d)\d+", r"\1", tag[0]), svg)
    # Text in the page meets the site's contrast bar (4.5:1 on white), as its own text does.
    svg = re.sub(r"(<text\b[^>]*?fill: ?)(#[0-9a-fA-F]{6})", lambda m: m[1] + _readable(m[2]), svg)
    svg = re.sub(r"(<style[^>]*>)\s*\*\s*\{", rf"\1#{uid} *{{", svg)
    svg = svg.replace("<svg ", f'<svg id="{uid}" style="max-width:100%;height:auto" ', 1)
    label = escape(alt, quote=True)
    return f'<div class="book-figure" role="img" aria-label="{label}">{svg.strip()}</div>'


def handle_outputs(app, doctree, docname):
    """Chinese build: translate the pages' HTML outputs and SVG figures while they are written."""
    if not (app.config.language or "en").startswith("zh") or app.builder.format != "html":
        return
    table = _table(app)
    for index, node in enumerate(list(_outputs(doctree))):
        if isinstance(node, nodes.raw):
            text = translate(node.astext(), table)
            if text != node.astext():
                node.children = [nodes.Text(with_book_font(text))]
            continue
        source = Path(app.srcdir) / node["uri"]
        if not source.is_file():
            continue
        svg = source.read_text(encoding="utf-8")
        done = translate(svg, table)
        if done != svg:
            uid = f"figure-{Path(docname).name}-{index}"
            node.replace_self(
                nodes.raw(
                    "", inline_svg(with_book_font(done), node.get("alt", ""), uid), format="html"
                )
            )


def setup(app):
    app.connect("doctree-resolved", handle_outputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

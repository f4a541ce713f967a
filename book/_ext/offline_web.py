"""Serve the book's web assets from the site itself, and only what a page uses.

By default a Jupyter Book page loads MathJax and the ipywidgets manager from CDNs, so
offline the math shows raw TeX and saved widgets stay blank. `make web` copies them from
the npm registry's packages into ``webassets/``; when that folder is there, this extension
points Sphinx and MyST-NB at the copies, which Sphinx writes into ``_build/html/_static``.
Without it (no npm on the machine) the book still builds, with the CDN defaults.

It also keeps every page light:

* MathJax is loaded as its parts (startup, TeX input, CHTML output, the assistive MathML),
  without the 0.4 MB contextual menu of the combined ``tex-chtml.js``; Sphinx adds it only
  to pages that have math.
* Explorers show their static face in the book, so the kernels that execute the chapters
  are told so (``BOOK_EXPLORERS=static``): they then create no widget, the pages carry no
  widget state, and MyST-NB adds no 3.6 MB widget manager to them.
* The theme's 1.5 MB FontAwesome script is left out (``templates/layout.html``); its icon
  fonts, cut to the glyphs the built pages use, draw the icons instead.
* The Chinese font (Noto Sans SC) is cut to the CJK characters the book contains, in the
  unicode-range slices they fall in, so a page fetches only the slices its text needs.

The cut fonts and their CSS, ``_static/book-fonts.css``, are written when the build ends,
from the pages as built, and cut again only when the pages' characters or icons change.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

ASSETS = "webassets"
FONTS_CSS = "book-fonts.css"
NOTO = Path("node_modules") / "@fontsource" / "noto-sans-sc"
MATHJAX_COMPONENTS = ["input/tex", "output/chtml", "a11y/assistive-mml"]


def static_explorers(app):
    """The kernels that execute the chapters inherit this: explorers draw every frame and
    create no widget (see tutorial_lib.figures.explorer)."""
    os.environ["BOOK_EXPLORERS"] = "static"


def configure_offline_assets(app, config):
    config.templates_path = [*config.templates_path, str(Path(__file__).parent / "templates")]
    config.html_css_files = [*config.html_css_files, FONTS_CSS]
    assets = Path(app.srcdir) / ASSETS
    if not (assets / "mathjax" / "startup.js").is_file():
        logger.info(
            "offline_web: no %s/ folder, so pages load MathJax and widget "
            "scripts from CDNs (run `make web` to serve them from the site)",
            ASSETS,
        )
        return
    config.html_static_path = [*config.html_static_path, ASSETS]
    # Relative paths are read relative to _static by both Sphinx and MyST-NB.
    config.mathjax_path = "mathjax/startup.js"
    mathjax = dict(config.mathjax3_config or {})
    mathjax["loader"] = {"load": MATHJAX_COMPONENTS}
    config.mathjax3_config = mathjax
    # Only pages whose notebook saved widget state load these; the book's explorers save none.
    config.nb_ipywidgets_js = {
        "require.min.js": {},
        "widgets-offline.js": {},
        "html-manager/embed-amd.js": {},
    }


def _built_pages(outdir: Path):
    """This site's pages; not those of a site inside it (the Chinese edition in ``zh/``, which
    has its own ``_static`` and cuts its own fonts)."""
    nested = {d.name for d in outdir.iterdir() if (d / "_static").is_dir()}
    return [
        p
        for p in outdir.rglob("*.html")
        if "_static" not in p.parts and p.relative_to(outdir).parts[0] not in nested
    ]


# An icon class, as r"\bfa-[a-z0-9-]+" finds it, but written to start with its letters: the
# regex engine then jumps from one "fa-" to the next instead of trying every position of the
# pages' 4 MB (twenty times faster). The lookbehind is the word boundary.
ICON_CLASS = re.compile(r"fa-(?<!\wfa-)[a-z0-9-]+")


def _icon_codepoints(outdir: Path, theme_css: str) -> set[int]:
    """Private-use codepoints the site uses: icon classes in pages and scripts, CSS icons."""
    icon = {}
    rule = r"((?:\.fa-[a-z0-9-]+:{1,2}before,?)+)\{content:\"\\(\w+)\"\}"
    for selectors, code in re.findall(rule, theme_css):
        for name in re.findall(r"\.(fa-[a-z0-9-]+)", selectors):
            icon[name] = int(code, 16)
    used = set()
    texts, scripts = [], set()
    for page in _built_pages(outdir):
        text = page.read_text(encoding="utf-8", errors="ignore")
        texts.append(text)
        for src in re.findall(r'<script[^>]*src="([^"?#]+)', text):
            if "://" not in src and "fontawesome" not in src:
                scripts.add((page.parent / src).resolve())
    # The scripts pages load may add icons of their own (the theme's, the launch buttons').
    texts += [p.read_text(encoding="utf-8", errors="ignore") for p in scripts if p.is_file()]
    for text in texts:
        used |= {icon[name] for name in ICON_CLASS.findall(text) if name in icon}
    # Icons CSS draws itself (admonition titles, toggles): PUA characters outside icon classes.
    for css in (outdir / "_static").rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="ignore")
        text = re.sub(r"(?:\.fa-[a-z0-9-]+:{1,2}before,?)+\{content:\"\\\w+\"\}", "", text)
        used |= {int(c, 16) for c in re.findall(r"\\(f[0-9a-f]{3}|e[0-9a-f]{3})\b", text)}
        used |= {ord(c) for c in text if 0xE000 <= ord(c) <= 0xF8FF}
    return used


def _subset(source: Path, codepoints: set[int], target: Path) -> bool:
    """Write the glyphs of ``codepoints`` that ``source`` has as a WOFF font; False if none."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    # The source's own date, not today's: two builds of the same pages give the same bytes.
    font = TTFont(source, recalcTimestamp=False)
    present = codepoints & set(font.getBestCmap())
    if not present:
        return False
    options = subset.Options()
    options.flavor = "woff2"  # brotli: about a third smaller than WOFF's zlib for CJK glyphs
    options.layout_features = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=present)
    subsetter.subset(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    font.save(target)
    return True


def _icon_fonts(outdir: Path, theme: Path, used: set[int]) -> list[str]:
    """@font-face rules that replace the theme's icon fonts with cut-down copies."""
    rules = []
    for family, weight, name in (
        ("Font Awesome 6 Free", 900, "fa-solid-900"),
        ("Font Awesome 6 Free", 400, "fa-regular-400"),
        ("Font Awesome 6 Brands", 400, "fa-brands-400"),
    ):
        source = theme / "vendor" / "fontawesome" / "webfonts" / f"{name}.ttf"
        target = outdir / "_static" / "book-fonts" / f"{name}.woff2"
        if source.is_file() and _subset(source, used, target):
            rules.append(
                f'@font-face{{font-family:"{family}";font-style:normal;font-weight:{weight};'
                f'font-display:block;src:url(book-fonts/{name}.woff2) format("woff2")}}'
            )
    return rules


def _ranges(spec: str) -> list[tuple[int, int]]:
    out = []
    for part in spec.split(","):
        part = part.strip().removeprefix("U+").removeprefix("u+")
        lo, _, hi = part.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return out


# CJK radicals to CJK compatibility ideographs, CJK compatibility forms, full-width forms and
# the supplementary ideographs. Not general punctuation (U+2000-U+206F: curly quotes, dashes)
# or symbols: those stay with the system fonts, so English text keeps its own quotes.
CJK_RANGES = [(0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF),
              (0x20000, 0x3FFFF)]  # fmt: skip
CJK_CHARACTER = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "]")


def _page_characters(outdir: Path) -> dict[str, set[int]]:
    """The CJK characters of each built page: what the book's Chinese font must cover."""
    found = {}
    for page in _built_pages(outdir):
        text = page.read_text(encoding="utf-8", errors="ignore")
        found[page.relative_to(outdir).as_posix()] = set(map(ord, CJK_CHARACTER.findall(text)))
    return found


# Characters per cut slice: small enough that a page with little Chinese (an English chapter's
# navigation) fetches little more than it shows, large enough to keep the requests few.
SLICE_CHARS = 40


def _slices(wanted: set[int], pages: dict[str, set[int]]) -> list[list[int]]:
    """``wanted`` (the site's characters in one of Noto's slices) cut again by where they are
    used: characters that the same pages use go together, most widely used first, so a page
    fetches slices that are mostly its own characters."""
    names = sorted(pages)
    signature = {c: tuple(i for i, n in enumerate(names) if c in pages[n]) for c in wanted}
    ordered = sorted(wanted, key=lambda c: (-len(signature[c]), signature[c], c))
    return [ordered[i : i + SLICE_CHARS] for i in range(0, len(ordered), SLICE_CHARS)]


def _chinese_fonts(srcdir: Path, outdir: Path, pages: dict[str, set[int]]) -> list[str]:
    """@font-face rules for Noto Sans SC: each of its slices cut to the characters the pages
    hold, then cut again by the pages that use them (``_slices``)."""
    noto = srcdir / NOTO
    if not noto.is_dir():
        return []
    ordered = sorted(set().union(*pages.values()))
    rules = []
    # One weight: the browser draws bold Chinese from it (font synthesis), so a page fetches
    # each slice once, not twice (a Chinese chapter's slices are most of its font bytes).
    weight = 400
    css = (noto / f"{weight}.css").read_text(encoding="utf-8")
    for block in re.findall(r"@font-face\s*\{[^}]*\}", css):
        woff = re.search(r"url\(\./files/([^)]+\.woff)\)", block)
        spec = re.search(r"unicode-range:\s*([^;]+);", block)
        if not woff or not spec:
            continue
        wanted = set()
        for lo, hi in _ranges(spec.group(1)):
            wanted.update(
                ordered[bisect.bisect_left(ordered, lo) : bisect.bisect_right(ordered, hi)]
            )
        name = woff.group(1)
        for i, group in enumerate(_slices(wanted, pages)):
            cut = f"{name.removesuffix('.woff')}-{i}.woff2"
            if not _subset(
                noto / "files" / name, set(group), outdir / "_static" / "book-fonts" / cut
            ):
                continue
            used = ",".join(f"U+{c:x}" for c in sorted(group))
            rules.append(
                f'@font-face{{font-family:"Noto Sans SC";font-style:normal;font-weight:{weight};'
                f'font-display:swap;src:url(book-fonts/{cut}) format("woff2");'
                f"unicode-range:{used}}}"
            )
    return rules


ICON_RULE = re.compile(r"(?:\.fa-[a-z0-9-]+:{1,2}before,?)+\{content:\"\\(\w+)\"\}")


def _prune_icon_rules(outdir: Path, used: set[int]) -> None:
    """The theme's stylesheet without the rules of icons no page uses: 1,800 of them, 85 kB
    of every page's first load (a Chinese chapter needs that room for its font)."""
    path = outdir / "_static" / "styles" / "pydata-sphinx-theme.css"
    if path.is_file():
        css = path.read_text(encoding="utf-8")
        kept = ICON_RULE.sub(lambda m: m.group(0) if int(m.group(1), 16) in used else "", css)
        if kept != css:
            path.write_text(kept, encoding="utf-8")


def _font_key(pages: dict[str, set[int]], icons: set[int]) -> str:
    """What the cut fonts depend on: each page's characters, the icons, and this file."""
    text = ";".join(f"{p}:" + ",".join(map(str, sorted(c))) for p, c in sorted(pages.items()))
    text += "|" + ",".join(map(str, sorted(icons)))
    text += "|" + Path(__file__).read_text(encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()


def write_fonts(app, exception):
    """Cut the fonts when the pages' characters or icons changed; otherwise keep the last cut.

    Cutting reads every Noto Sans SC slice (seconds); a prose edit rarely adds a character.
    """
    if exception is not None or app.builder.format != "html":
        return
    import pydata_sphinx_theme

    outdir = Path(app.outdir)
    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    css = (theme / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    icons = _icon_codepoints(outdir, css)
    _prune_icon_rules(outdir, icons)
    pages = _page_characters(outdir)
    key = _font_key(pages, icons)
    fonts = outdir / "_static" / "book-fonts"
    manifest = fonts / "manifest.json"
    if manifest.is_file():
        last = json.loads(manifest.read_text(encoding="utf-8"))
        if last.get("key") == key and all((fonts / f).is_file() for f in last["files"]):
            (outdir / "_static" / FONTS_CSS).write_text(last["css"], encoding="utf-8")
            return
    rules = ["/* Written by book/_ext/offline_web.py when the build ends. */"]
    rules += _icon_fonts(outdir, theme, icons)
    rules += _chinese_fonts(Path(app.srcdir), outdir, pages)
    text = "\n".join(rules) + "\n"
    (outdir / "_static" / FONTS_CSS).write_text(text, encoding="utf-8")
    files = sorted(re.findall(r"url\(book-fonts/([^)]+)\)", text))
    fonts.mkdir(parents=True, exist_ok=True)
    for old in fonts.glob("*.woff*"):  # cuts of characters the pages no longer use
        if old.name not in files:
            old.unlink()
    manifest.write_text(json.dumps({"key": key, "files": files, "css": text}), encoding="utf-8")


def setup(app):
    app.connect("config-inited", configure_offline_assets, priority=100)
    app.connect("builder-inited", static_explorers)
    app.connect("build-finished", write_fonts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The Chinese edition's catalogs (locales/zh_CN/LC_MESSAGES, one .po per page).

Every entry outside the API page's docstrings is translated and not fuzzy (a fuzzy entry
falls back to English), and every translation keeps what its source carries: its roles
(glossary terms, cross-references, page links, citations) with their targets, its glued
values with their formats, its math, its inline code and its links. Figure text keeps its
numbers ({n}). tests/built/test_chinese.py checks the built Chinese pages themselves.
"""

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import figure_text  # noqa: E402
import translations  # noqa: E402

# Pages whose translation has not landed yet: their Chinese pages show English until it does.
# Each entry says why; the lead empties this list as translations land. Any other page with an
# untranslated or fuzzy entry fails.
NOT_YET_TRANSLATED = {}

CATALOGS = translations.catalog_paths(ROOT)
API_SOURCE = " ".join((ROOT / "book" / "api.md").read_text(encoding="utf-8").split())

ROLE = re.compile(r"\{(?P<name>[a-z]+(?::[a-z]+)?)\}`(?P<content>[^`]*)`")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)
CODE = re.compile(r"(?<![`}])`([^`]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>|(https?://[^\s)>\]]+)")


def messages(domain: str):
    return [m for m in translations.read_po(CATALOGS[domain]) if m.id]


def api_page_text(message) -> bool:
    """An entry of the API page's own text (book/api.md), not of a docstring autodoc read."""
    return " ".join(message.id.split()) in API_SOURCE


def required(domain: str) -> list:
    """The entries a reader of the Chinese edition must see in Chinese."""
    found = messages(domain)
    if domain == translations.API:
        found = [m for m in found if api_page_text(m)]
    return found


def carried(text: str) -> Counter:
    """What a translation must keep of its source, as countable pieces."""
    pieces = Counter()
    for match in ROLE.finditer(text):
        name, content = match.group("name"), match.group("content")
        explicit = EXPLICIT.match(content)
        if name.startswith("glue"):
            # {glue:md} has no cross-notebook form: a translation may reword it as glue:text.
            pieces[("glue", content)] += 1
        elif name in ("term", "ref", "doc", "numref"):
            target = explicit.group("target") if explicit else content
            pieces[(name, target.strip().lower() if name == "term" else target.strip())] += 1
        else:
            pieces[(name, content)] += 1
    plain = ROLE.sub(" ", text)
    for match in MATH.finditer(plain):
        pieces[("math", " ".join(match.group(0).split()))] += 1
    plain = MATH.sub(" ", plain)
    for match in CODE.finditer(plain):
        pieces[("code", match.group(1))] += 1
    for match in LINK.finditer(plain):
        pieces[("link", next(g for g in match.groups() if g))] += 1
    if "{n}" in text:
        pieces[("numbers", text.count("{n}"))] += 1
    return pieces


def test_every_page_has_a_catalog_and_the_list_names_real_pages():
    from book_toc import toc_entries

    assert set(toc_entries(ROOT)) <= set(CATALOGS), "run `make pot`: a page has no catalog"
    assert set(NOT_YET_TRANSLATED) <= set(CATALOGS)
    assert all(reason.strip() for reason in NOT_YET_TRANSLATED.values())


@pytest.mark.parametrize("domain", sorted(CATALOGS))
def test_every_entry_is_translated_and_none_is_fuzzy(domain):
    if domain in NOT_YET_TRANSLATED:
        # Not a skip: a listed page whose translation is complete must leave the list.
        left = [m for m in required(domain) if not translations.translated(m)]
        assert left, f"{domain} is fully translated: remove it from NOT_YET_TRANSLATED"
        return
    untranslated = [m.id for m in required(domain) if not m.string]
    fuzzy = [m.id for m in required(domain) if m.string and m.fuzzy]
    assert untranslated == [], f"{len(untranslated)} untranslated in {domain}: {untranslated[:3]}"
    assert fuzzy == [], f"{len(fuzzy)} fuzzy (shown in English) in {domain}: {fuzzy[:3]}"


@pytest.mark.parametrize("domain", sorted(CATALOGS))
def test_translations_keep_roles_glue_math_code_and_links(domain):
    lost = []
    for message in messages(domain):
        if not translations.translated(message):  # a fuzzy one is not shown: it awaits a new one
            continue
        source, target = carried(message.id), carried(message.string)
        glue_md = [k for k in source if k[0] == "glue" and "glue:md" in message.id]
        if glue_md:  # reworded: the glue:md value may go, another glued value must come
            source = Counter({k: v for k, v in source.items() if k[0] != "glue"})
            target = Counter({k: v for k, v in target.items() if k[0] != "glue"})
        # A translation may repeat a name in code; it may not drop or change anything.
        missing = source - target
        if "{glue:md}" in message.string:  # no cross-notebook form: the build warns, shows nothing
            missing["{glue:md} kept: say it with {glue:text} values"] = 1
        if missing:
            lost.append(f"{message.id[:70]!r}: lost {dict(missing)}")
    assert lost == [], "\n".join(lost[:10])


def test_the_check_sees_a_lost_role_glue_math_and_link():
    source = "See {term}`heads <head>`, {glue:text}`n:.2f` of $x^2$ in `f()` ([a](https://a.b))."
    kept = "见{term}`注意力头 <head>`：$x^2$ 的 {glue:text}`n:.2f`，`f()`（[甲](https://a.b)）。"
    assert carried(source) == carried(kept)
    assert carried(source) - carried(kept + " `f()` again") == Counter()
    for broken in (
        kept.replace("<head>", "<heads>"),
        kept.replace(":.2f", ":.1f"),
        kept.replace("$x^2$", "x²"),
        kept.replace("`f()`", "f()"),
        kept.replace("https://a.b", "https://a.c"),
    ):
        assert carried(source) - carried(broken), broken


def test_glue_roles_become_cross_notebook_roles_in_the_build():
    text = "{glue:text}`a:.2f`, {glue:text}`b`, {glue}`c`, {term}`x`, {glue:text}`q.ipynb::d:,`"
    assert translations.rewrite_glue(text, "q0_lookup.ipynb") == (
        "{glue:text}`q0_lookup.ipynb::a:.2f`, {glue:text}`q0_lookup.ipynb::b:s`, "
        "{glue:text}`q0_lookup.ipynb::c:s`, {term}`x`, {glue:text}`q.ipynb::d:,`"
    )


def test_figure_text_keeps_its_numbers_and_only_words_are_messages():
    assert figure_text.template("output = Σ weight × value = 10.4") == (
        "output = Σ weight × value = {n}",
        ["10.4"],
    )
    assert figure_text.template("−4.44") is None and figure_text.template("k1") is None
    assert figure_text.fill("输出 = {n}", ["10.4"]) == "输出 = 10.4"
    assert figure_text.fill("输出", ["10.4"]) is None  # a lost number keeps the English
    svg = '<svg><text x="1">scores (τ = 0.25)</text><style>.a{}</style><text>q</text></svg>'
    done = figure_text.translate(svg, {"scores (τ = {n})": "得分（τ = {n}）"})
    assert done == '<svg><text x="1">得分（τ = 0.25）</text><style>.a{}</style><text>q</text></svg>'


# "T = 16": a number named in a drawn text. Its place among the {n}s must not move.
NAMED_NUMBER = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\s*=\s*$")


def named_numbers(text: str) -> list[tuple[int, str]]:
    """(i, name) for each i-th {n} of a drawn text written as `name = {n}`."""
    before = text.split("{n}")[:-1]
    return [(i, m.group(1)) for i, part in enumerate(before) if (m := NAMED_NUMBER.search(part))]


def test_drawn_numbers_keep_their_names_in_translation():
    """The build puts a drawn text's numbers back into its translation in their English order
    (figure_text.fill), so a translation that reorders a clause moves the numbers, not their
    names: Q3b's caption once read "queries past 64 at T = 16". Every `name = {n}` the
    translation keeps (a symbol such as T or d_k; a word such as "peak" is translated) must be
    the same {n}, by position, as in the English."""
    moved = {}
    for domain in CATALOGS:
        for message in messages(domain):
            if message.string and figure_text.COMMENT in message.auto_comments:
                english, chinese = named_numbers(message.id), named_numbers(message.string)
                kept = {name for _, name in english} & {name for _, name in chinese}
                if [x for x in english if x[1] in kept] != [x for x in chinese if x[1] in kept]:
                    moved[message.id] = message.string
    assert not moved, f"numbers moved against their names: {moved}"


def test_the_named_number_check_sees_a_reordered_clause():
    english = "weight (T = {n}, then queries past {n} at T = {n})"
    kept = "权重（先是 T = {n}，然后是位置 {n} 之后的查询，T = {n}）"
    moved = "权重（T = {n}，然后是 T = {n} 时位置 {n} 之后的查询）"  # the caption's old translation
    assert named_numbers(english) == named_numbers(kept) == [(0, "T"), (2, "T")]
    assert named_numbers(moved) == [(0, "T"), (1, "T")]


def test_figure_text_shared_by_chapters_has_one_translation():
    """The build translates figure text from one table for the whole book (figure_text._table),
    so a string drawn in several chapters must read the same in each: one wins otherwise."""
    seen: dict[str, dict[str, str]] = {}
    for domain in CATALOGS:
        for message in messages(domain):
            if message.string and figure_text.COMMENT in message.auto_comments:
                seen.setdefault(message.id, {})[domain] = message.string
    differing = {i: d for i, d in seen.items() if len(set(d.values())) > 1}
    assert not differing, "figure text translated differently per chapter: " + repr(differing)


def test_explorer_frames_are_translated_inside_their_script():
    markup = (
        '<div class="explorer"><label>temperature τ <input aria-label="temperature τ"></label>'
        '<script>\nvar data = {"pieces":["<text>weight 0.5","</text>"]};\n</script></div>'
    )
    table = {"temperature τ": "温度 τ", "weight {n}": "权重 {n}"}
    assert figure_text.strings(markup) == ["temperature τ", "weight {n}"]
    done = figure_text.translate(markup, table)
    assert '<label>温度 τ <input aria-label="温度 τ">' in done
    assert '"<text>权重 0.5"' in done


def test_learner_notebook_text_is_translated_block_by_block():
    source = (
        "## The question\n\n* **Bold** item that\n  wraps.\n\n| a cell | b |\n|---|---|\n"
        ":::{admonition} The evidence\nA longer line with a cell inside it.\n:::"
    )
    done = translations.translate_markdown(
        source,
        {
            "The question": "问题",
            "**Bold** item that wraps.": "**粗体**条目。",
            "a cell": "一格",
            "The evidence": "证据",
        },
    )
    assert done == (
        "## 问题\n\n* **粗体**条目。\n\n| 一格 | b |\n|---|---|\n"
        ":::{admonition} 证据\nA longer line with a cell inside it.\n:::"
    )


def table_cells(domain: str) -> list[str]:
    """The cells of the page's Markdown tables (the line of a table, split at its bars)."""
    path = ROOT / f"{domain}.ipynb"
    if path.exists():
        import nbformat

        cells = nbformat.read(path, as_version=4).cells
        text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    else:
        text = (ROOT / f"{domain}.md").read_text(encoding="utf-8")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and not set(line) <= set("|-: "):
            found += [cell.strip() for cell in line[1:-1].split("|") if cell.strip()]
    return found


PAGES = sorted(d for d in CATALOGS if d.startswith("book/") and d != translations.API)


@pytest.mark.parametrize("domain", PAGES)
def test_every_table_cell_is_in_the_catalog(domain):
    """MyST gives a table's cells no source, and Sphinx then neither extracts nor translates
    them (book/_ext/languages.py gives them their table's): the Chinese pages showed their
    tables' headers in English."""
    ids = {m.id for m in messages(domain)}
    missing = [cell for cell in table_cells(domain) if cell not in ids]
    assert missing == [], f"table cells of {domain} missing from its catalog: {missing[:5]}"


def test_an_inlined_figure_path_keeps_its_shape_in_fewer_bytes():
    """Chinese pages inline their translated SVG figures; the path data is most of their weight."""
    d = "M 0 3.5 C 0.93 3.5 1.82 3.13 2.47 2.47 \nL 131.26 -225.12 \nL 0.04 -0.04 L 1e-05 100 z"
    short = figure_text.compact_path(d)
    assert short == "M0 3.5C0.9 3.5 1.8 3.1 2.5 2.5L131.3-225.1L0 0L0 100z"
    numbers = [float(t) for t in figure_text.PATH_TOKEN.findall(d) if not t.isalpha()]
    again = [float(t) for t in figure_text.PATH_TOKEN.findall(short) if not t.isalpha()]
    assert max(abs(a - b) for a, b in zip(numbers, again, strict=True)) <= 0.05

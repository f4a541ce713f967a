"""Math as plain text wherever a page cannot typeset it: titles, link texts, search.

MathJax typesets math in a page's body, but a section title with math also becomes the
text of every link to it ({ref}), the browser tab's title and a search result's title,
and Sphinx takes those from the TeX source ("Why \\sqrt{d_{model}}?"). The search page
also builds its snippets from each page's text, TeX included. This extension gives every
math element a plain-text reading ("√d_model") and uses it in those places:

* every inline and display math element carries it as ``data-plain``;
* link texts to sections whose title holds math, and the page's <title>, use it;
* search results' titles use it, and a small script makes the snippets use it too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ",
    "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ",
    "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ",
    "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ",
    "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
_SYMBOLS = {
    "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠",
    "neq": "≠", "approx": "≈", "sim": "~", "to": "→", "rightarrow": "→", "leftarrow": "←",
    "mapsto": "↦", "infty": "∞", "sum": "Σ", "prod": "Π", "in": "∈", "pm": "±",
    "ldots": "…", "dots": "…", "cdots": "…", "lVert": "‖", "rVert": "‖", "|": "‖",
    "top": "ᵀ", "partial": "∂", "nabla": "∇", "log": "log", "exp": "exp", "max": "max",
    "min": "min", "odot": "⊙", "otimes": "⊗", "propto": "∝", "langle": "⟨", "rangle": "⟩",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "neg": "¬", "land": "∧",
    "wedge": "∧", "lor": "∨", "mid": "|", "ell": "ℓ",
}  # fmt: skip
_SUPERSCRIPT = str.maketrans("0123456789+-()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ")
_DROPPED = {"left", "right", "big", "Big", "bigg", "Bigg", "displaystyle", "textstyle",
            "scriptstyle", "limits", "nolimits"}  # fmt: skip
_SPACES = {",": " ", ";": " ", ":": " ", "!": "", "quad": " ", "qquad": " ", " ": " "}


def _group(tex: str, i: int) -> tuple[str, int]:
    """The argument starting at tex[i]: a {braced group} or one token. Returns (text, next i)."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex):
        return "", i
    if tex[i] == "{":
        depth = 0
        for j in range(i, len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return tex[i + 1 : j], j + 1
        return tex[i + 1 :], len(tex)
    if tex[i] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
        return m.group(0), i + len(m.group(0))
    return tex[i], i + 1


def _atom(text: str) -> str:
    """Text that reads as one unit after √, /, ^ or _: parenthesised unless it already is."""
    if re.fullmatch(r"[\wᵀ√.′]+", text) or re.fullmatch(r"\(.*\)", text):
        return text
    return f"({text})"


def tex_to_text(tex: str) -> str:
    """TeX math as readable plain text: ``\\sqrt{d_{model}}`` -> ``√d_model``."""
    out, i = [], 0
    tex = tex.strip()
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            name, i = m.group(1), i + len(m.group(0))
            if name == "sqrt":
                arg, i = _group(tex, i)
                inner = tex_to_text(arg)
                out.append("√" + _atom(inner))
            elif name in ("frac", "dfrac", "tfrac"):
                a, i = _group(tex, i)
                b, i = _group(tex, i)
                a, b = tex_to_text(a), tex_to_text(b)
                out.append(f"{_atom(a)}/{_atom(b)}")
            elif name in ("text", "mathrm", "operatorname", "mathbf", "mathit", "mathcal",
                          "boldsymbol", "mathbb", "textrm", "textit", "textbf", "mathsf",
                          "mathtt", "bm", "hat", "tilde", "bar", "vec", "overline"):  # fmt: skip
                arg, i = _group(tex, i)
                out.append(tex_to_text(arg) if not name.startswith("text") else arg)
            elif name in ("begin", "end"):
                _, i = _group(tex, i)  # the environment's name: its lines speak for it
            elif name in ("underbrace", "overbrace"):
                arg, i = _group(tex, i)
                out.append(tex_to_text(arg))
            elif name == "\\":
                out.append("; ")
            elif name in _GREEK:
                out.append(_GREEK[name])
            elif name in _SYMBOLS:
                out.append(_SYMBOLS[name])
            elif name in _SPACES:
                out.append(_SPACES[name])
            elif name in ("{", "}", "_", "%", "$", "#", "&"):
                out.append(name)
            elif name not in _DROPPED:
                out.append(name)
        elif c in "^_":
            arg, i = _group(tex, i + 1)
            text = tex_to_text(arg)
            if c == "^" and text == "ᵀ":
                out.append("ᵀ")
            elif c == "^" and text and all(ch in "0123456789+-()n" for ch in text):
                out.append(text.translate(_SUPERSCRIPT))
            else:
                out.append(c + _atom(text))
        elif c in "{}":
            i += 1
        elif c == "&":
            out.append(" ")
            i += 1
        else:
            out.append(c)
            i += 1
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _plain(node: nodes.Node) -> str:
    """A node's text with every math element replaced by its plain reading."""
    parts = []
    for child in node.findall(lambda n: isinstance(n, (nodes.Text, nodes.math))):
        if isinstance(child, nodes.math):
            parts.append(tex_to_text(child.astext()))
        elif not any(isinstance(a, nodes.math) for a in _ancestors(child)):
            parts.append(child.astext())
    return "".join(parts)


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


def record_plain_titles(app, doctree):
    """Remember the plain text of every section title that holds math, by (page, section id);
    the page's main title also under (page, "")."""
    docname = app.env.docname
    store = {k: v for k, v in getattr(app.env, "plain_math_titles", {}).items() if k[0] != docname}
    for n, section in enumerate(doctree.findall(nodes.section)):
        title = section.next_node(nodes.title)
        if title is None or not any(True for _ in title.findall(nodes.math)):
            continue
        text = _plain(title)
        for ident in section["ids"]:
            store[docname, ident] = text
        if n == 0:
            store[docname, ""] = text
    app.env.plain_math_titles = store


def purge(app, env, docname):
    store = getattr(env, "plain_math_titles", {})
    env.plain_math_titles = {k: v for k, v in store.items() if k[0] != docname}


def merge(app, env, docnames, other):
    env.plain_math_titles = getattr(env, "plain_math_titles", {}) | getattr(
        other, "plain_math_titles", {}
    )


def fix_reference_texts(app, env):
    """{ref} link texts come from the std domain's labels: give them the plain titles."""
    store = getattr(env, "plain_math_titles", {})
    labels = env.domaindata["std"]["labels"]
    for name, (docname, labelid, _) in list(labels.items()):
        if (docname, labelid) in store:
            labels[name] = (docname, labelid, store[docname, labelid])


def _wrap_math_visitor(app):
    """Give every math element a data-plain attribute with its plain reading."""
    registry = app.registry
    for table in (registry.html_inline_math_renderers, registry.html_block_math_renderers):
        for name, (visit, depart) in list(table.items()):
            table[name] = (_with_plain(visit), depart)


def _with_plain(visit):
    def visit_with_plain(self, node):
        start = len(self.body)
        try:
            visit(self, node)
        finally:
            if len(self.body) > start:
                plain = self.attval(tex_to_text(node.astext()))
                self.body[start] = re.sub(
                    r'^(\s*<(span|div) class="math)',
                    rf'<\2 data-plain="{plain}" class="math',
                    self.body[start],
                    count=1,
                )

    return visit_with_plain


_MATH_SPAN = re.compile(
    r'<(span|div) data-plain="([^"]*)" class="math[^"]*">.*?</\1>', flags=re.DOTALL
)


def plain_page_title(app, pagename, templatename, context, doctree):
    """The browser tab shows the title as text: use math's plain reading there."""
    for key in ("title", "pagetitle"):
        if isinstance(context.get(key), str):
            context[key] = _MATH_SPAN.sub(lambda m: m.group(2), context[key])


def plain_search_index(app, exception):
    """Search results show titles from searchindex.js: plain math there too."""
    if exception is not None or app.builder.format != "html":
        return
    index = Path(app.outdir) / "searchindex.js"
    if not index.is_file():
        return
    text = index.read_text(encoding="utf-8")
    prefix, body = "Search.setIndex(", text.strip()
    if not body.startswith(prefix):
        return
    data = json.loads(body[len(prefix) : -1])
    data["titles"] = [_MATH_SPAN.sub(lambda m: m.group(2), t) for t in data.get("titles", [])]
    store = getattr(app.env, "plain_math_titles", {})
    docnames = data.get("docnames", [])
    alltitles = {}
    for title, places in data.get("alltitles", {}).items():
        for doc, anchor in places:
            plain = store.get((docnames[doc], anchor or ""), title)
            alltitles.setdefault(plain, []).append([doc, anchor])
    data["alltitles"] = alltitles
    index.write_text(prefix + json.dumps(data, separators=(",", ":")) + ")", encoding="utf-8")


def setup(app):
    app.connect("builder-inited", _wrap_math_visitor)
    app.connect("doctree-read", record_plain_titles)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("env-updated", fix_reference_texts)
    app.connect("html-page-context", plain_page_title)
    app.connect("build-finished", plain_search_index)
    app.add_js_file("plain-search.js")
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}

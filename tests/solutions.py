"""The text of every solution in the chapter sources, as fragments a leak would contain.

A solution leaks if any of its distinctive pieces shows up where students look. The
pieces are its code lines and its stretches of prose of at least 40 characters between
MyST roles and math (those are rewritten on the way to HTML or to a learner notebook),
leaving out any piece that also appears in the chapter outside its solutions.
"""

import functools
import html
import json
import re
from pathlib import Path

from book_toc import chapters

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapters()
SOLUTION = re.compile(r"^(:{3,})\{solution\}[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
MIN_PROSE = 40
QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def markdown_of(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def normalize(text: str) -> str:
    """Text compared as a reader reads it: straight quotes, no emphasis marks, one space."""
    text = text.translate(QUOTES)
    text = re.sub(r"^\s*>+", " ", text, flags=re.M)  # Markdown block quotes
    text = text.replace("*", "")  # Markdown emphasis
    return re.sub(r"\s+", " ", text)


def solutions(path: Path) -> list[str]:
    """The body of every {solution} directive of one chapter, options removed."""
    bodies = []
    for match in SOLUTION.finditer(markdown_of(path)):
        body = re.sub(r"^:[\w-]+:.*\n", "", match.group(2), flags=re.M)
        bodies.append(body)
    return bodies


def fragments(body: str) -> list[str]:
    """Distinctive pieces of one solution: code lines, and prose runs of 40+ characters."""
    pieces = []
    prose = body
    for code in re.findall(r"```[^\n]*\n(.*?)```", body, flags=re.S):
        prose = prose.replace(code, " ")
        for line in code.splitlines():
            line = line.strip()
            if len(line) >= 12 and not line.startswith("#"):
                pieces.append(line)
    prose = re.sub(r"```[^\n]*", " ", prose)
    # Roles, inline code and math are rendered differently in each output: split on them.
    for run in re.split(r"\{[\w:]+\}`[^`]*`|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", prose, flags=re.S):
        for sentence in re.split(r"(?<=[.;:!?])\s+", normalize(run)):
            sentence = sentence.strip(" .,;:()")
            # Sphinx turns "--" and "..." into typographic dashes and ellipses: skip those.
            if len(sentence) >= MIN_PROSE and "--" not in sentence and "..." not in sentence:
                pieces.append(sentence)
    return pieces


@functools.cache
def chapter_fragments(path: Path) -> dict[int, list[str]]:
    """Solution number -> its fragments that do not also appear elsewhere in the chapter."""
    text = markdown_of(path)
    outside = normalize(SOLUTION.sub("", text))
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    found = {}
    for i, body in enumerate(solutions(path)):
        found[i] = [f for f in fragments(body) if normalize(f) not in outside and f not in code]
    return found


def readable(path: Path) -> str:
    """A file's text as a reader meets it: a notebook's cells and outputs, joined."""
    raw = path.read_text(errors="replace")
    if path.suffix == ".html":
        # Highlighted code is split into spans with its own spaces between them.
        return html.unescape(re.sub(r"<[^>]+>", "", raw))
    if path.suffix != ".ipynb":
        return raw
    nb = json.loads(raw)
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.extend(
                "".join(v) for v in output.get("data", {}).values() if isinstance(v, (str, list))
            )
    return "\n\n".join(parts)


def leaks(text: str, path: Path, *, normalized: bool = False) -> list[str]:
    """The fragments of ``path``'s solutions that occur in ``text``.

    Pass ``normalized=True`` with ``normalize(text)`` to search one text for many chapters.
    """
    seen = text if normalized else normalize(text)
    return [original for original, plain in _fragments(path) if plain in seen]


@functools.cache
def _fragments(path: Path) -> tuple[tuple[str, str], ...]:
    pieces = chapter_fragments(path).values()
    return tuple((f, normalize(f)) for fragments in pieces for f in fragments)

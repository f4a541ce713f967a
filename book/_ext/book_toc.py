"""The book's chapters, in reading order, read from ``_toc.yml``: the one list of them.

A chapter is a notebook of the table of contents (``book/<name>.ipynb``); the other pages
(intro, glossary, ...) are Markdown. Tests, benchmarks and the book's own extensions take
the list from here, so a chapter added to ``_toc.yml`` is checked everywhere at once.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def toc_entries(root: Path = ROOT) -> list[str]:
    """Every page of ``_toc.yml`` in reading order, as docnames (``book/q1_heads``)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    entries = [toc["root"]]
    for part in toc.get("parts", []):
        entries += [chapter["file"] for chapter in part.get("chapters", [])]
    return entries


def chapter_docnames(root: Path = ROOT) -> list[str]:
    """The chapters' docnames (``book/q1_heads``), in the order a reader meets them."""
    return [entry for entry in toc_entries(root) if (root / f"{entry}.ipynb").is_file()]


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, in the order a reader meets them."""
    return [root / f"{entry}.ipynb" for entry in chapter_docnames(root)]

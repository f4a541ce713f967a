"""The instructors' chapter table (book/instructors.md, which README links) says what each
chapter says of itself."""

import json
import re
from pathlib import Path

from book_toc import chapters

ROOT = Path(__file__).resolve().parents[1]
WORDS = {"an hour": 60, "half an hour": 30}


def minutes(text: str) -> int:
    return WORDS[text] if text in WORDS else int(text)


def chapter_times() -> dict[str, tuple[int, int]]:
    """Reading and exercise minutes from each chapter's 'Time needed' line."""
    found = {}
    for path in chapters():
        text = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
        match = re.search(
            r"Time needed:\*\*\s+about\s+(\d+|an hour|half an hour)\s+minutes?\s+to\s+read,"
            r"\s+(\d+|an hour)\s+",
            text,
        )
        assert match, f"{path.name} has no 'Time needed' line"
        found[path.stem.split("_")[0].upper()] = (minutes(match[1]), minutes(match[2]))
    return found


def table_times() -> dict[str, tuple[int, int]]:
    rows = re.findall(
        r"^\| (Q\d+[a-z]?) · [^|]+\| (\d+) / (\d+) min \|",
        (ROOT / "book" / "instructors.md").read_text(),
        re.M,
    )
    return {name.upper(): (int(a), int(b)) for name, a, b in rows}


def test_instructors_table_matches_every_chapters_time_needed():
    times = chapter_times()
    assert len(times) == len(chapters()), "every chapter of _toc.yml has a Time needed line"
    assert table_times() == times


def test_readme_sends_instructors_to_the_page():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## For instructors", 1)[1].split("\n## ", 1)[0]
    assert "(book/instructors.md)" in section and "book/instructors.html" in section


def test_the_intro_lists_every_chapter():
    """The landing page's chapter table is the first list a reader sees: none may be missing."""
    intro = (ROOT / "book" / "intro.md").read_text()
    listed = re.findall(r"^\| \{doc\}`Q\d+[a-z]? <(\w+)>` \|", intro, re.M)
    assert listed == [path.stem for path in chapters()]

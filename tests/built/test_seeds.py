"""The robustness builds (`make test-seeds`): other seeds draw other numbers, and the book holds.

`make test` builds the book with BOOK_SEED=0 (two threads) and again with BOOK_SEED=1 and 2
(one thread). Zero warnings and every assert in every chapter is checked by those builds
themselves; this checks that the seed really reached the chapters: the numbers glued into
the prose of every chapter that trains or draws at random differ between seeds.
"""

import json
from pathlib import Path

import pytest
from book_toc import chapters

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = [p.stem for p in chapters()]
BUILDS = {
    0: ROOT / "_build" / "jupyter_execute" / "book",
    1: ROOT / "_build" / "seed1" / "_build" / "jupyter_execute" / "book",
    2: ROOT / "_build" / "seed2" / "_build" / "jupyter_execute" / "book",
}


def glued(seed: int, chapter: str) -> dict[str, str]:
    path = BUILDS[seed] / f"{chapter}.glue.json"
    if not path.is_file():
        pytest.fail(f"no glued values for {chapter} with BOOK_SEED={seed}: run `make test-seeds`")
    values = json.loads(path.read_text())
    return {name: out["data"].get("text/plain", "") for name, out in values.items()}


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_chapter_glues_the_same_names_and_other_numbers(chapter, seed):
    base, other = glued(0, chapter), glued(seed, chapter)
    assert set(base) == set(other), "the same prose needs the same glued names for every seed"
    changed = [name for name in base if base[name] != other[name]]
    assert changed, f"no glued number of {chapter} changed with BOOK_SEED={seed}"

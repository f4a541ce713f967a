"""The book's tests. The book's own extensions (book/_ext) are importable from every test."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

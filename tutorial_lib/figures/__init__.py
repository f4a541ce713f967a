"""Figures and explorers: the only part of tutorial_lib that imports matplotlib or PIL.

* :mod:`.explorer`: the :class:`Explorer` contract (a drawing function over a small grid).
* :mod:`.trace`: records every tensor a forward pass makes, for the shape explorers.
* :mod:`.common`: what every figure shares (the palette).
* one module per concept: :mod:`.attention` (Q1), :mod:`.softmax` (Q2), :mod:`.positional`
  (Q3a, Q3b), :mod:`.norms` (Q4), :mod:`.model` (Q5).
"""

from .common import use_book_style
from .explorer import Explorer

__all__ = ["Explorer", "use_book_style"]

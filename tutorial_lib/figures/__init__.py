"""Figures and explorers: the only part of tutorial_lib that imports matplotlib or PIL.

* ``explorer``: the :class:`Explorer` contract (a drawing function over a small grid).
* ``trace``: records every tensor a forward pass makes, for the shape explorers.
* ``common``: what every figure shares (palette, heatmap PNGs, HTML tables, the book style).
* ``svg``: small SVG plots written as text, the frames of the explorers.
* ``diagrams``: the layer and model diagrams (SVG, shapes read from a run of the model),
  used by the introduction, Q1 and Q5.
* one module per concept: ``lookup`` (Q0), ``attention`` (Q1), ``softmax`` (Q2),
  ``positional`` (Q3a) and ``relative`` (Q3b), ``norms`` (Q4), ``model`` and ``decoding`` (Q5),
  ``kv_heads`` (Q6).
"""

from .common import use_book_style
from .explorer import Explorer

__all__ = ["Explorer", "use_book_style"]

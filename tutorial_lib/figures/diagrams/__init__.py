"""Architecture diagrams drawn from the library as SVG: the Transformer, multi-head attention.

Dimension letters as in :mod:`tutorial_lib.model`: B batch, T_src and T_tgt (T_q and T_k
inside one attention call), D = d_model, H = n_head, d_k and d_v per head, d_ff, V, N.

* :mod:`.svg`: the canvas every diagram draws on (text >= 11 px, an opaque light panel, a
  ``<title>`` and ``<desc>``), and :func:`figure_html`, which shows one at its natural size
  and lets it scroll sideways on a narrow screen instead of shrinking its text.
* :mod:`.shapes`: every shape on an arrow, read from the library (the real modules run at
  tiny probe sizes), never typed.
* :mod:`.multihead` and :mod:`.transformer`: the two diagrams, pure functions returning SVG.
  The sizes in their legends are :class:`tutorial_lib.model.TransformerConfig`'s (the
  paper's base model unless another config is given).

Introduced in chapter Q0 (the map of the book); shown again in Q1, Q5 and the introduction.
"""

from .multihead import multihead_svg
from .shapes import multihead_shapes, transformer_shapes
from .svg import FILL, MIN_FONT_PX, MUTED, PAPER, Canvas, figure_html
from .transformer import CHAPTER_TAGS, transformer_svg

__all__ = [
    "CHAPTER_TAGS",
    "FILL",
    "MIN_FONT_PX",
    "MUTED",
    "PAPER",
    "Canvas",
    "figure_html",
    "multihead_shapes",
    "multihead_svg",
    "transformer_shapes",
    "transformer_svg",
]

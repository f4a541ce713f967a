"""tutorial_lib: the small shared library behind the notebook book on Transformer attention.

Four parts, so a newcomer knows where a line belongs and what it may import:

* **concepts**, at the top level, import only torch (and each other, downward):
  :mod:`.attention`, :mod:`.softmax`, :mod:`.positional`, :mod:`.norms`, :mod:`.model`,
  :mod:`.data`, :mod:`.training`, :mod:`.decoding`, and the helpers every chapter uses,
  :mod:`.seeds` (the ``BOOK_SEED`` knob) and :mod:`.notebook` (``glue``);
* **labs** (:mod:`.labs`): experiments that chapters and ``make bench`` share;
* **figures** (:mod:`.figures`): explorers and drawing, the only part that imports matplotlib;
* **checks** (:mod:`.checks`): self-checks for learners' own implementations.

Chapters build each concept in visible cells, check it against this library, then import it.
"""

__version__ = "0.1.0"

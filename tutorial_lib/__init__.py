"""tutorial_lib: the small shared library behind the notebook book on Transformer attention.

Four parts, so a newcomer knows where a line belongs and what it may import:

* **concepts**, at the top level, import only torch (and each other, downward):
  :mod:`.attention` (with :mod:`.masks`), :mod:`.latent` (MLA), :mod:`.softmax`,
  :mod:`.positional`, :mod:`.norms`, :mod:`.model` (with :mod:`.layers`), :mod:`.data`,
  :mod:`.training`, :mod:`.decoding`, and the helpers every chapter uses, :mod:`.seeds`
  (the ``BOOK_SEED`` knob) and :mod:`.notebook` (``glue``); :mod:`.validate` holds the
  validators the labs use;
* **labs** (:mod:`.labs`): experiments that chapters and ``make bench`` share;
* **figures** (:mod:`.figures`): explorers and drawing, the only part that imports matplotlib;
* **checks** (:mod:`.checks`): self-checks for learners' own implementations (the only
  ``check_*`` names; the library's own validators are ``require_*``).

Chapters build each concept in visible cells, check it against this library, then import it.
"""

__version__ = "0.2.0"

"""Experiments that chapters and ``make bench`` share: the book and the benchmark run one code.

* :mod:`.embedding_scale`: chapter Q3a, the sqrt(d_model) factor and the balance of tokens
  and positions.
* :mod:`.extrapolation`: chapter Q3b, every position variant trained at one length and tested
  at longer ones.
* :mod:`.kv_heads`: chapter Q6, what sharing keys and values (MQA, GQA, MLA) costs for the
  cache it saves, and uptraining a multi-head model into a grouped one.
* :mod:`.norms`: chapter Q4, tiny encoders whose norm and its placement can be swapped.
* :mod:`.reverse`: chapter Q5, a tiny encoder-decoder that learns to reverse digits.

Labs import the concept modules; nothing in a concept module imports a lab.
"""

# The labs are used as modules (``from tutorial_lib.labs.norms import TinyEncoder``).
__all__: list[str] = []

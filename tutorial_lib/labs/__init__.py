"""Experiments that chapters and ``make bench`` share: the book and the benchmark run one code.

* :mod:`.seed_ensemble`: the one ensemble engine. Every lab that trains over seeds stacks its
  runs into an ``Ensemble`` and trains it with :func:`tutorial_lib.training.fit`.
* :mod:`.heads`: chapter Q1, one head or two on a task that needs two offsets at once.
* :mod:`.embedding_scale`: chapter Q3a, the sqrt(d_model) factor and the balance of tokens
  and positions.
* :mod:`.extrapolation` (with :mod:`.position_model` and :mod:`.extrapolation_tasks`):
  chapter Q3b, every position variant trained at one length and tested at longer ones.
* :mod:`.norms` and :mod:`.norms_runs`: chapter Q4, tiny encoders whose norm and its
  placement can be swapped, and their runs over seeds.
* :mod:`.reverse_model` and :mod:`.reverse`: chapter Q5, a tiny encoder-decoder that learns
  to reverse digits, alone and over seeds.
* :mod:`.kv_heads`: chapter Q6, what sharing keys and values (MQA, GQA, MLA) costs for the
  cache it saves, and uptraining a multi-head model into a grouped one.
* :mod:`.long_context` and :mod:`.long_context_reading`: chapter Q7, one RoPE model trained
  once and read every way past its training length.

Labs import the concept modules; nothing in a concept module imports a lab.
"""

# The labs are used as modules (``from tutorial_lib.labs.norms import TinyEncoder``).
__all__: list[str] = []

"""tutorial_lib: the small shared library behind the notebook book on Transformer attention.

One module per concept; chapters build each concept in visible cells, check it
against this library, then import it.
"""

__version__ = "0.1.0"

"""Student and instructor editions from the same sources.

The student edition (the default, `make book`) leaves every exercise's solution out of
the pages, gated solutions (whose code cells execute) included; the instructor edition
(`make book-instructor`, which sets BOOK_EDITION=instructor) shows them.
BOOK_JUPYTERHUB_URL, when set, adds a JupyterHub launch button for that hub to every
chapter. Sphinx keeps one environment per output folder, so the two editions build into
different folders.
"""

import os

from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx_exercise.nodes import solution_node
from sphinx_exercise.transforms import MergeGatedSolutions

logger = logging.getLogger(__name__)

EDITIONS = ("student", "instructor")


def choose_edition(app, config):
    edition = os.environ.get("BOOK_EDITION", "student")
    if edition not in EDITIONS:
        raise ValueError(f"BOOK_EDITION must be one of {EDITIONS}; got {edition!r}")
    config.hide_solutions = edition == "student"
    config.html_context = {**config.html_context, "book_edition": edition}
    hub = os.environ.get("BOOK_JUPYTERHUB_URL", "").strip()
    if hub:
        # The JupyterHub launch button (nbgitpuller) for a class's own hub.
        options = dict(config.html_theme_options)
        options["launch_buttons"] = {**options.get("launch_buttons", {}), "jupyterhub_url": hub}
        config.html_theme_options = options
    logger.info("editions: building the %s edition", edition)


class RemoveGatedSolutions(SphinxTransform):
    """Drop every solution from the student edition, the gated ones too.

    sphinx-exercise's ``hide_solutions`` drops a ``{solution}`` directive, but a gated
    solution (``{solution-start}`` ... ``{solution-end}``, whose code cells execute in the
    build) is assembled later, by ``MergeGatedSolutions``, and would be shown. This runs
    right after that merge and removes what it made.
    """

    default_priority = MergeGatedSolutions.default_priority + 1

    def apply(self):
        if self.config.hide_solutions:
            remove_solutions(self.document)


def remove_solutions(document) -> int:
    """Remove every solution node from a doctree; returns how many were removed."""
    found = list(document.findall(solution_node))
    for node in found:
        node.parent.remove(node)
    return len(found)


def setup(app):
    app.connect("config-inited", choose_edition, priority=100)
    app.add_transform(RemoveGatedSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

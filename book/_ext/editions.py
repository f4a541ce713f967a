"""Student and instructor editions from the same sources.

The student edition (the default, `make book`) leaves every exercise's solution out of
the pages, gated solutions (whose code cells execute) included; the instructor edition
(`make book-instructor`, which sets BOOK_EDITION=instructor) shows them.

sphinx-exercise's own ``hide_solutions`` cannot do this: with it set, a ``{solution-start}``
directive returns nothing, so nothing marks where a gated solution begins, its code cells
stay on the page and the leftover ``{solution-end}`` node stops the HTML writer. So every
solution is always built, and the student edition removes the finished solution nodes,
gated or not, right after sphinx-exercise has merged the gated ones.
BOOK_JUPYTERHUB_URL, when set, adds a JupyterHub launch button for that hub to every
chapter. Sphinx keeps one environment per output folder, so the two editions build into
different folders.
"""

import os

from docutils import nodes
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
    # Always build solutions (see the module docstring); RemoveGatedSolutions drops them.
    config.hide_solutions = False
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

    A gated solution (``{solution-start}`` ... ``{solution-end}``, whose code cells execute
    in the build) is assembled by ``MergeGatedSolutions``; this runs right after that merge
    and removes every solution node, gated or plain.
    """

    default_priority = MergeGatedSolutions.default_priority + 1

    def apply(self):
        if is_student_edition(self.config):
            remove_solutions(self.document)


def is_student_edition(config) -> bool:
    return config.html_context.get("book_edition", "student") == "student"


def remove_solutions(document) -> int:
    """Remove every solution node from a doctree; returns how many were removed."""
    found = list(document.findall(solution_node))
    for node in found:
        node.parent.remove(node)
    return len(found)


def drop_dangling_backrefs(app, doctree, docname) -> None:
    """A paper cited inside a removed solution keeps its footnote, but not a back-link to a
    citation that is no longer on the page."""
    if not is_student_edition(app.config):
        return
    ids = {i for node in doctree.findall(nodes.Element) for i in node["ids"]}
    for node in doctree.findall(nodes.Element):
        if node.get("backrefs"):
            node["backrefs"] = [ref for ref in node["backrefs"] if ref in ids]


def no_numbers(app, config):
    """Every exercise of the book is ``:nonumber:`` and no page uses ``{numref}``, so there is
    nothing to number. sphinx-exercise turns ``numfig`` on all the same, and with it on every
    rebuild unpickles every page's doctree to number figures: about 1 s of the 6 s a rebuild
    after a one-page edit takes. (Runs after sphinx-exercise's own handler, priority 500.)"""
    config.numfig = False


def setup(app):
    app.connect("config-inited", choose_edition, priority=100)
    app.connect("config-inited", no_numbers, priority=900)
    app.add_transform(RemoveGatedSolutions)
    app.connect("doctree-resolved", drop_dangling_backrefs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

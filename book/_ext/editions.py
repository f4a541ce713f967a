"""Student and instructor editions from the same sources.

The student edition (the default, `make book`) leaves every exercise's
solution out of the pages; the instructor edition (`make book-instructor`,
which sets BOOK_EDITION=instructor) shows them. BOOK_JUPYTERHUB_URL, when
set, adds a JupyterHub launch button for that hub to every chapter. Sphinx keeps one environment
per output folder, so the two editions build into different folders.
"""

import os

from sphinx.util import logging

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


def setup(app):
    app.connect("config-inited", choose_edition, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Serve MathJax, require.js, the ipywidgets HTML manager and a CJK font from the built site.

By default a Jupyter Book page loads all three from CDNs, so offline the math
shows raw TeX and saved widgets stay blank. `make web` copies them from the
npm registry's packages into ``webassets/``; when that folder is there, this
extension points Sphinx and MyST-NB at the copies, which Sphinx then writes
into ``_build/html/_static``. Without it (no npm on the machine) the book
still builds, with the CDN defaults.
"""

from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

ASSETS = "webassets"


def configure_offline_assets(app, config):
    assets = Path(app.srcdir) / ASSETS
    if not (assets / "mathjax" / "tex-chtml.js").is_file():
        logger.info(
            "offline_web: no %s/ folder, so pages load MathJax and widget "
            "scripts from CDNs (run `make web` to serve them from the site)",
            ASSETS,
        )
        return
    config.html_static_path = [*config.html_static_path, ASSETS]
    # Relative paths are read relative to _static by both Sphinx and MyST-NB.
    config.mathjax_path = "mathjax/tex-chtml.js"
    # A Chinese font for readers whose system has none (the chapter titles carry the
    # original questions in Chinese); book.css names it last in the font stack.
    config.html_css_files = [
        *config.html_css_files,
        "noto-sans-sc/400.css",
        "noto-sans-sc/700.css",
    ]
    config.nb_ipywidgets_js = {
        "require.min.js": {},
        "widgets-offline.js": {},
        "html-manager/embed-amd.js": {},
    }


def setup(app):
    app.connect("config-inited", configure_offline_assets, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The Chinese edition's own build steps (loaded by ``_config.zh.yml`` alone).

``_config.zh.yml`` sets ``language: zh_CN`` and reads the catalogs from ``_build/locales``;
this extension writes those from the committed ones in ``locales/`` before Sphinx reads a
page (book/_ext/translations.py says how they differ), so an edited translation is picked up
by the next build, which re-reads only the pages whose catalog changed.
"""

from pathlib import Path

import translations
from sphinx.util import logging

logger = logging.getLogger(__name__)


def prepare_catalogs(app, config):
    changed = translations.build_catalogs(Path(app.srcdir))
    if changed:
        logger.info("chinese: catalogs changed for %s", ", ".join(changed))


def setup(app):
    app.connect("config-inited", prepare_catalogs, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Each chapter's first code cell installs tutorial_lib where it is missing (Colab), only there."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("q*.ipynb"))


def first_code_cell(path):
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    return "".join(cell["source"]), cell["metadata"].get("tags", [])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_install_cell_is_first_and_points_to_this_book(path):
    source, tags = first_code_cell(path)
    assert 'find_spec("tutorial_lib") is None' in source
    assert "hide-cell" in tags
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    url = re.search(r'"git\+(\S+)@v([\d.]+)"', source)
    assert url, "the install cell must name the repository and a version tag"
    assert url.group(1) == config["repository"]["url"]
    assert url.group(2) == version


def test_install_cells_are_identical():
    sources = {first_code_cell(p)[0] for p in CHAPTERS}
    assert len(sources) == 1


def test_install_cell_does_nothing_where_tutorial_lib_is_installed():
    source, _ = first_code_cell(CHAPTERS[0])
    # A source that cannot be installed: if the cell tried, pip would fail and so would this run.
    env = os.environ | {"TUTORIAL_LIB_SOURCE": str(ROOT / "no-such-folder")}
    subprocess.run([sys.executable, "-c", source], check=True, env=env, cwd=ROOT)


def test_install_cell_installs_into_a_clean_environment(tmp_path):
    """A new virtual environment without tutorial_lib, as on Colab: the cell installs it."""
    source, _ = first_code_cell(CHAPTERS[0])
    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    # Borrow the book's heavy dependencies (torch ...) without its editable tutorial_lib:
    # .pth files inside a folder added this way are not read, so tutorial_lib stays missing.
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "book_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    work = tmp_path / "work"
    work.mkdir()
    check = "import importlib.util; print(importlib.util.find_spec('tutorial_lib') is None)"
    missing = subprocess.run([python, "-c", check], cwd=work, capture_output=True, text=True)
    assert missing.stdout.strip() == "True", missing.stderr
    # Install from a copy: building in the checkout would leave build/ behind in it.
    checkout = tmp_path / "checkout"
    shutil.copytree(
        ROOT / "tutorial_lib",
        checkout / "tutorial_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, checkout / name)
    env = os.environ | {"TUTORIAL_LIB_SOURCE": str(checkout), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([python, "-c", source], check=True, env=env, cwd=work)
    done = subprocess.run(
        [
            python,
            "-c",
            "import tutorial_lib, tutorial_lib.attention; print(tutorial_lib.__version__)",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert done.stdout.strip() == version


def test_binder_builds_the_pinned_environment_with_cpu_torch():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert "-r ../requirements.txt" in lines
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins
    post_build = (ROOT / "binder" / "postBuild").read_text()
    assert "pip install --no-deps -e ." in post_build
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK)

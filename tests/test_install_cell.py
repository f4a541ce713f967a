"""Each chapter's first code cell installs what a bare kernel (Colab) lacks, and only that.

What the cell does is checked here with pip replaced by a recorder; that it really
installs a working tutorial_lib into a Colab-like kernel is checked by tests/learner,
which runs every learner notebook from this cell on.
"""

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from book_toc import chapters

import tutorial_lib

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapters()
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def first_code_cell(path):
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    return "".join(cell["source"]), cell["metadata"].get("tags", [])


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
VERSION, DISTRIBUTION = PROJECT["version"], PROJECT["name"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_install_cell_is_first_and_installs_this_books_release(path):
    source, tags = first_code_cell(path)
    assert 'find_spec("tutorial_lib") is None' in source
    assert "hide-cell" in tags
    release = re.search(r'"TUTORIAL_LIB_SOURCE", "([\w-]+)==([\d.]+)"', source)
    assert release, "the install cell must name the published distribution and its version"
    assert release.groups() == (DISTRIBUTION, VERSION)


def test_the_cells_fallback_and_pyproject_name_the_books_repository():
    source, _ = first_code_cell(CHAPTERS[0])
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert f"%pip install git+{config['repository']['url']}" in source
    assert PROJECT["urls"]["Source"] == config["repository"]["url"]
    assert PROJECT["urls"]["Homepage"] == config["sphinx"]["config"]["html_baseurl"]


def test_version_and_library_agree():
    """Releasing is: bump pyproject and __version__, tag v<version> (README)."""
    assert tutorial_lib.__version__ == VERSION


def test_install_cells_are_identical():
    assert len({first_code_cell(p)[0] for p in CHAPTERS}) == 1


def test_the_cell_pins_the_books_torch():
    source, _ = first_code_cell(CHAPTERS[0])
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    torch_pin = next(line for line in pins if line.startswith("torch=="))
    assert f'"{torch_pin}"' in source


def run_cell(monkeypatch, missing, returncode=0):
    """Run the install cell with ``missing`` modules absent and pip replaced by a recorder."""
    source, _ = first_code_cell(CHAPTERS[0])
    real_find_spec = importlib.util.find_spec
    calls = []
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name in missing else real_find_spec(name, *args),
    )

    def record(cmd, **kw):
        calls.append([str(c) for c in cmd])
        return subprocess.CompletedProcess(cmd, returncode)

    monkeypatch.setattr(subprocess, "run", record)
    monkeypatch.delenv("TUTORIAL_LIB_SOURCE", raising=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "install-cell", "exec"), {})
    return calls, printed.getvalue()


def test_where_tutorial_lib_is_installed_the_cell_does_nothing(monkeypatch):
    calls, printed = run_cell(monkeypatch, missing=())
    assert calls == [] and printed == ""


def test_an_installed_torch_is_left_alone(monkeypatch):
    calls, printed = run_cell(monkeypatch, missing=("tutorial_lib",))
    assert len(calls) == 1
    [pip] = calls
    assert pip[:4] == [sys.executable, "-m", "pip", "install"]
    assert pip[-1] == f"{DISTRIBUTION}=={VERSION}" and "torch" not in " ".join(pip)
    assert "--index-url" not in pip  # tutorial_lib's own dependencies come from PyPI
    assert printed.startswith("Installed") and printed.count("\n") == 1


def test_a_missing_torch_comes_from_pytorchs_cpu_index_for_torch_only(monkeypatch):
    calls, printed = run_cell(monkeypatch, missing=("tutorial_lib", "torch"))
    torch, library = calls
    assert torch[4:] == ["--quiet", "torch==2.13.0", "--index-url", CPU_INDEX]
    assert "--index-url" not in library and library[-1] == f"{DISTRIBUTION}=={VERSION}"
    assert printed.count("\n") == 1


def test_when_the_release_is_missing_the_learner_is_told_what_to_do(monkeypatch):
    with pytest.raises(RuntimeError, match=r"could not install .*%pip install git\+https://"):
        run_cell(monkeypatch, missing=("tutorial_lib",), returncode=1)


def test_install_cell_really_does_nothing_where_tutorial_lib_is_installed():
    source, _ = first_code_cell(CHAPTERS[0])
    # A source that cannot be installed: if the cell tried, pip would fail and so would this run.
    env = os.environ | {"TUTORIAL_LIB_SOURCE": str(ROOT / "no-such-folder")}
    done = subprocess.run(
        [sys.executable, "-c", source], check=True, env=env, cwd=ROOT, capture_output=True
    )
    assert done.stdout == b""


def test_binder_builds_the_pinned_environment_with_cpu_torch():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert "-r ../requirements.txt" in lines
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins
    post_build = (ROOT / "binder" / "postBuild").read_text()
    assert "pip install --no-deps -e ." in post_build
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK)

"""Every learner notebook runs top to bottom in a kernel like Colab's, from its install cell on,
and so does every assignment's student notebook (`make assignments`, `_build/assignments/student`).

The kernel's environment holds only what Colab brings that the chapters use (PyTorch
2.13.0, numpy, matplotlib, ipywidgets 7 and ipykernel), none of the book's build tools,
and nothing of the book's own environment. Each notebook gets a fresh environment on top
of that one, so its first cell must install tutorial_lib itself: from a wheel of this
checkout, standing in for the release the cell names.

Slow (minutes): `make test-learner`, part of `make test`. The base environment is cached
in _build/learner-kernel/<key>, where the key is a hash of everything it is made from.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
# Every English notebook, and the Chinese one of chapter Q0: a Chinese notebook has the English
# one's code cell for cell (tests/test_learner_notebooks.py), so running them all again would
# repeat the same code; one proves that a Chinese notebook runs in this kernel as it stands.
NOTEBOOKS = [
    *sorted((ROOT / "notebooks").glob("*.ipynb")),
    ROOT / "notebooks" / "zh" / "q0_lookup.ipynb",
]


def name(path: Path) -> str:
    return path.relative_to(ROOT / "notebooks").as_posix()


ASSIGNMENTS = sorted((ROOT / "_build" / "assignments" / "student").glob("*.ipynb"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DISTRIBUTION, VERSION = PROJECT["name"], PROJECT["version"]
# Colab's widget library is ipywidgets 7 (its front-end does not show 8's core widgets).
KERNEL_PACKAGES = [
    "torch==2.13.0",
    "numpy",
    "matplotlib",
    "ipywidgets==7.7.1",
    "ipykernel",
]
# Other packages take the book's pins, so the environment is the same on every run.
NOT_PINNED_FROM_BOOK = ("ipywidgets", "widgetsnbextension", "jupyterlab_widgets", "torch")
BUILD_TOOLS = ["myst_nb", "jupyter_book", "sphinx", "jupyter_cache"]
# nbclient's command line, from the book's environment: it starts the 'learner' kernel.
EXECUTE = Path(sys.executable).with_name("jupyter-execute")


def constraints() -> str:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return "\n".join(
        line for line in lines if "==" in line and not line.lower().startswith(NOT_PINNED_FROM_BOOK)
    )


def site_packages(env: Path) -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return env / "lib" / version / "site-packages"


@pytest.fixture(scope="session")
def base_env() -> Path:
    """The kernel's packages, installed once per distinct set of requirements."""
    recipe = json.dumps([sys.version, KERNEL_PACKAGES, constraints()])
    key = hashlib.sha256(recipe.encode()).hexdigest()[:16]
    env = ROOT / "_build" / "learner-kernel" / key
    done = env / ".complete"
    if not done.is_file():
        shutil.rmtree(env, ignore_errors=True)
        venv.create(env, with_pip=True)
        (env / "constraints.txt").write_text(constraints() + "\n")
        installed = subprocess.run(
            [
                env / "bin" / "python",
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-c",
                env / "constraints.txt",
                *KERNEL_PACKAGES,
            ],
            capture_output=True,
            text=True,
        )
        assert installed.returncode == 0, installed.stderr[-3000:]
        done.write_text(recipe)
    return env


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> Path:
    """A wheel of this checkout's library, standing in for the release the cell names."""
    copy = tmp_path_factory.mktemp("checkout")
    shutil.copytree(
        ROOT / "tutorial_lib", copy / "tutorial_lib", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, copy / name)
    wheels = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, copy],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = wheels.glob("attention_one_question-*.whl")
    return wheel


def fresh_kernel(base: Path, where: Path, release: Path) -> None:
    """A new environment over the base one, and a Jupyter kernel named 'learner' for it."""
    env = where / "env"
    venv.create(env, with_pip=False)
    # The base environment's packages, pip included; installs land in this one.
    (site_packages(env) / "kernel_base.pth").write_text(f"{site_packages(base)}\n")
    spec = where / "jupyter" / "kernels" / "learner"
    spec.mkdir(parents=True)
    book_paths = os.pathsep.join([sysconfig.get_path("purelib"), str(ROOT)])
    python = str(env / "bin" / "python")
    kernel = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "learner",
        "language": "python",
        "env": {
            "TUTORIAL_LIB_SOURCE": str(release),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PYTHONPATH": "",
            "BOOK_PATHS_NOT_TO_SEE": book_paths,
        },
    }
    (spec / "kernel.json").write_text(json.dumps(kernel))


# Run last, in the learner's kernel: what it can import, and which ipywidgets it shows.
PROBE = f"""
import importlib.util, sys, os
import ipywidgets
seen = [p for p in os.environ["BOOK_PATHS_NOT_TO_SEE"].split(os.pathsep) if p in sys.path]
print("build tools:", [m for m in {BUILD_TOOLS!r} if importlib.util.find_spec(m)])
print("book paths:", seen)
print("ipywidgets", ipywidgets.__version__)
print("otter loaded:", any(m.split(".")[0] == "otter" for m in sys.modules))
"""


def outputs_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.fixture(scope="session")
def executed(base_env, release, tmp_path_factory) -> dict:
    """Every learner notebook run in its own fresh kernel, two at a time (two cores)."""

    def run(path: Path):
        where = tmp_path_factory.mktemp(key(path).replace("/", "-").replace(" ", "-"))
        fresh_kernel(base_env, where, release)
        work = where / "content"  # like Colab's /content: the notebook alone
        work.mkdir()
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE))
        nbformat.write(nb, work / path.name)
        done = subprocess.run(
            [EXECUTE, "--inplace", "--kernel_name=learner", "--timeout=900", work / path.name],
            env=os.environ | {"JUPYTER_PATH": str(where / "jupyter")},
            capture_output=True,
            text=True,
        )
        return done, nbformat.read(work / path.name, as_version=4)

    every = [*NOTEBOOKS, *ASSIGNMENTS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((key(p) for p in every), pool.map(run, every), strict=True))


def key(path: Path) -> str:
    return f"assignment {path.name}" if path in ASSIGNMENTS else name(path)


def install_line(nb) -> str:
    install = outputs_text(next(c for c in nb.cells if c.cell_type == "code"))
    lines = install.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Installed "), install
    assert f"{DISTRIBUTION} {VERSION}" in lines[0], install
    assert "torch" not in lines[0], "the install cell must leave an installed torch alone"
    return lines[0]


def ran_in_a_fresh_kernel(path: Path, done, nb):
    """What every notebook run must show: it ran to the end, its install cell installed this
    release, and its probe saw no build tool, no book path, and Colab's ipywidgets 7."""
    assert done.returncode == 0, f"{path.name} failed:\n{done.stderr[-4000:]}"
    install_line(nb)
    probe = outputs_text(nb.cells[-1])
    assert "build tools: []" in probe and "book paths: []" in probe, probe
    assert "ipywidgets 7.7.1" in probe, probe
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=name)
def test_learner_notebook_runs_top_to_bottom_in_a_colab_like_kernel(path, executed):
    nb = ran_in_a_fresh_kernel(path, *executed[name(path)])

    explorers = [
        output
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if 'class="explorer"' in str(output.get("data", {}).get("text/html", ""))
    ]
    assert explorers, f"{path.name} shows no explorer"
    for output in explorers:
        # Live on ipywidgets 7: the widget view is there, and no fallback line.
        assert "application/vnd.jupyter.widget-view+json" in output["data"]
        assert "Live controls are off" not in output["data"]["text/html"]


def test_there_are_assignment_notebooks_to_run():
    assert ASSIGNMENTS, "no student notebooks in _build/assignments: run `make assignments`"


@pytest.mark.parametrize("path", ASSIGNMENTS, ids=lambda p: p.name)
def test_assignment_student_notebook_runs_in_a_colab_like_kernel_without_otter(path, executed):
    """As handed out, unanswered: it runs top to bottom, and nothing of otter-grader loads."""
    nb = ran_in_a_fresh_kernel(path, *executed[key(path)])
    probe = outputs_text(nb.cells[-1])
    assert "otter loaded: False" in probe, probe
